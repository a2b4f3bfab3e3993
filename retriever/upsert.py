"""One whole, cancellable write of a list of documents: what the HTTP document route runs.

:meth:`CorpusIndex.index_documents` streams a corpus in batches under the write lock, embedding as
it goes, so that any size fits in memory and an interrupted run resumes. A request has a deadline
instead: :meth:`UpsertMixin.upsert_documents` chunks and embeds first, outside the lock, stopping at
the next batch once asked to; then it takes the lock, reads the store again and writes everything at
once. The caller gets either the collection as it was or the whole write, never a write that lands
after it gave up (issue 24, item 5).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from sieve.retriever.ingest import content_hash
from sieve.retriever.writer import IndexReport, checked_documents

from sieve.core.errors import StoreLocked

if TYPE_CHECKING:
    import contextlib
    from collections.abc import Mapping, Sequence

    import numpy as np
    from sieve.retriever.chunking import Chunker
    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.embeddings import Embedder
    from sieve.retriever.store import CollectionState, DocState
    from sieve.retriever.store_api import Store
    from sieve.retriever.types import Chunk, Document
    from sieve.retriever.writelock import WriteLock
    from sieve.retriever.writer import WriteRun


class UpsertMixin:
    """:meth:`upsert_documents` for :class:`~sieve.retriever.index.CorpusIndex` (whose state it uses)."""

    if TYPE_CHECKING:  # what CorpusIndex provides
        config: RetrieverConfig
        store: Store
        embedder: Embedder
        write_lock: WriteLock

        @property
        def chunker(self) -> Chunker: ...
        def refresh(self) -> CollectionState: ...
        def _require_embedder_match(self) -> None: ...
        def drop(self, lock_timeout_s: float | None = None) -> None: ...
        def _embed(self, chunks: Sequence[Chunk]) -> np.ndarray: ...
        def _write_run(self) -> contextlib.AbstractContextManager[WriteRun]: ...
        def _write(
            self,
            run: WriteRun,
            batch: list[tuple[Document, str, list[Chunk]]],
            states: Mapping[str, DocState],
            vectors: np.ndarray | None = None,
        ) -> int: ...

    def upsert_documents(self, docs: Sequence[Document], *, stop: threading.Event | None = None) -> IndexReport:
        """Add or update a list of documents in one short write that can be cancelled until it starts.

        Chunking and embedding, the slow part, run *before* the write lock is taken and end at the
        next batch once ``stop`` is set; then, under the lock, the store is read again and the whole
        write is done at once (no check of ``stop`` inside it). So a caller with a deadline gets
        either the collection as it was (``report.cancelled``) or the whole write, never a write
        that lands after it gave up. Unlike :meth:`index_documents`, the vectors of all documents
        are held in memory: meant for request-sized batches, not corpora.

        Raises:
            InvalidInput: see :meth:`index_documents`.
            StoreLocked: another writer held the store for the lock's whole timeout.
        """
        stop = stop if stop is not None else threading.Event()
        t0 = time.perf_counter()
        try:
            report = self._upsert(checked_documents(docs), stop)
        except BaseException as exc:
            if self.store.created:
                self.drop(lock_timeout_s=0 if isinstance(exc, StoreLocked) else None)
            raise
        if report.cancelled and self.store.created:
            self.drop()
        elif not report.cancelled:
            self.store.created = False
        report.seconds = time.perf_counter() - t0
        return report

    def _upsert(self, docs: Sequence[Document], stop: threading.Event) -> IndexReport:
        report = IndexReport()
        self.refresh()
        self._require_embedder_match()
        hashes = {d.doc_id: content_hash(d, self.config.chunking_key) for d in docs}
        before = self.store.doc_states()
        prepared = self._prepare(
            [d for d in docs if not _unchanged(before.get(d.doc_id), hashes[d.doc_id])], report, stop
        )
        if prepared is None:
            return IndexReport(cancelled=True)
        try:
            with self.write_lock.hold(stop=stop):
                if stop.is_set():
                    return IndexReport(cancelled=True)
                self.refresh()  # the store as it is now: another writer may have come in between
                self._require_embedder_match()
                states = self.store.doc_states()
                skipped = {where for where, _ in report.ingest.skipped}
                late = [
                    d
                    for d in docs
                    if d.doc_id not in prepared
                    and d.doc_id not in skipped
                    and not _unchanged(states.get(d.doc_id), hashes[d.doc_id])
                ]
                prepared.update(self._prepare(late, report, threading.Event()) or {})
                with self._write_run() as run:
                    self._commit(run, docs, hashes, prepared, states, report)
        except StoreLocked:
            if stop.is_set():
                return IndexReport(cancelled=True)
            raise
        return report

    def _prepare(
        self, docs: Sequence[Document], report: IndexReport, stop: threading.Event
    ) -> dict[str, tuple[list[Chunk], np.ndarray]] | None:
        """doc_id -> (chunks, vectors) for ``docs``; None once ``stop`` is set (checked between batches)."""
        import numpy as np

        chunked = []
        for doc in docs:
            chunks = self.chunker.chunk(doc)
            if chunks:
                chunked.append((doc, chunks))
            else:
                report.ingest.skip(doc.doc_id, "no tokens after chunking")
        flat = [c for _, cs in chunked for c in cs]
        parts = []
        for i in range(0, len(flat), self.config.embed_batch_size):
            if stop.is_set():
                return None
            parts.append(self._embed(flat[i : i + self.config.embed_batch_size]))
        if stop.is_set():
            return None
        vectors = np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)
        out, at = {}, 0
        for doc, cs in chunked:
            out[doc.doc_id] = (cs, vectors[at : at + len(cs)])
            at += len(cs)
        return out

    def _commit(
        self,
        run: WriteRun,
        docs: Sequence[Document],
        hashes: dict[str, str],
        prepared: dict[str, tuple[list[Chunk], np.ndarray]],
        states: dict[str, DocState],
        report: IndexReport,
    ) -> None:
        """Write the prepared documents that still differ from the store (under the write lock)."""
        import numpy as np

        skipped = {where for where, _ in report.ingest.skipped}
        batch: list[tuple[Document, str, list[Chunk]]] = []
        vectors: list[np.ndarray] = []
        for doc in docs:
            state = states.get(doc.doc_id)
            if doc.doc_id not in prepared or _unchanged(state, hashes[doc.doc_id]):
                report.unchanged += doc.doc_id not in skipped
                continue
            report.added += state is None
            report.resumed += state is not None and state.doc_hash == hashes[doc.doc_id]
            report.updated += state is not None and state.doc_hash != hashes[doc.doc_id]
            batch.append((doc, hashes[doc.doc_id], prepared[doc.doc_id][0]))
            vectors.append(prepared[doc.doc_id][1])
            if sum(len(c) for _, _, c in batch) >= self.config.index_batch_size:
                report.chunks_written += self._write(run, batch, states, np.concatenate(vectors))
                batch, vectors = [], []
        if batch:
            report.chunks_written += self._write(run, batch, states, np.concatenate(vectors))


def _unchanged(state: DocState | None, doc_hash: str) -> bool:
    return state is not None and state.doc_hash == doc_hash and state.complete


__all__ = ["UpsertMixin"]
