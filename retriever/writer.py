"""The write side of :class:`~sieve.retriever.index.CorpusIndex`: runs that add, replace and delete chunks.

Every write is a *run* (:meth:`WriterMixin._write_run`) under the store's write lock:

1. the collection's generation is bumped once, before the first chunk is written (a run killed
   from here on leaves a generation no BM25 manifest has: the next reader rebuilds);
2. chunks go to Chroma in batches of up to Chroma's maximum batch size, vectors as one float32
   array per batch; the run tokenises what it writes into one new BM25 segment and notes the rows
   it replaced;
3. the generation is bumped once more and the BM25 manifest naming the new segment is saved under
   it (:mod:`~sieve.retriever.bm25_segments`): readers switch to it at their next search and serve
   the previous one until then.

:meth:`WriterMixin.add_chunk_batches` is the public path for chunks that come with their vectors
(benchmarks, the Ray pipeline); :meth:`WriterMixin.index_documents` embeds documents itself.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sieve.retriever.bm25 import BM25Builder, passage_terms
from sieve.retriever.bm25_segments import SegmentedBM25
from sieve.retriever.chunking import validate_doc_id
from sieve.retriever.ingest import IngestReport, content_hash, iter_documents, review_against_store
from sieve.retriever.metadata import validate_metadata
from sieve.retriever.overlap import WriteBehind
from sieve.retriever.progress import IndexProgress
from sieve.retriever.types import passage_text

from sieve.core.errors import InvalidInput, StoreLocked

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence
    from pathlib import Path

    import numpy as np
    from sieve.retriever.chunking import Chunker
    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.embeddings import Embedder
    from sieve.retriever.store import CollectionState, DocState
    from sieve.retriever.store_api import Store
    from sieve.retriever.types import Chunk, Document
    from sieve.retriever.writelock import WriteLock

logger = logging.getLogger(__name__)


@dataclass
class IndexReport:
    """What one indexing run did."""

    added: int = 0  # documents new to the collection
    updated: int = 0  # documents whose content changed (old chunks replaced)
    unchanged: int = 0  # skipped: same content hash, all chunks present
    resumed: int = 0  # documents an interrupted run had left incomplete
    chunks_written: int = 0
    seconds: float = 0.0
    ingest: IngestReport = field(default_factory=IngestReport)
    cancelled: bool = False  # stopped before writing anything (upsert_documents): the collection is as it was
    # Documents of files inside the folder indexed that no longer exist (deleted or moved out), and
    # how many of them this run removed (``index_path(..., delete_missing=True)``).
    gone: list[str] = field(default_factory=list)
    deleted: int = 0

    @property
    def chunks_per_second(self) -> float:
        return self.chunks_written / self.seconds if self.seconds else 0.0


def checked_documents(docs: Sequence[Document]) -> Sequence[Document]:
    """``docs`` if every id is unique and valid and all metadata is storable; else InvalidInput naming the first problem."""
    seen: set[str] = set()
    for doc in docs:
        validate_doc_id(doc.doc_id)
        if doc.doc_id in seen:
            raise InvalidInput(f"Expected unique document ids, got {doc.doc_id!r} twice")
        seen.add(doc.doc_id)
        try:
            validate_metadata(doc.metadata)
        except InvalidInput as exc:
            raise InvalidInput(f"Document {doc.doc_id!r}: {exc.message}") from None
    return docs


@dataclass
class WriteRun:
    """What one write run changes in BM25: the chunks it wrote and the rows they replace."""

    base: SegmentedBM25 | None  # BM25 as the run found it; None when it was stale (then rebuilt at the end)
    added: BM25Builder = field(default_factory=BM25Builder)
    replaced_docs: set[str] = field(default_factory=set)  # documents whose old chunks are gone
    replaced_ids: set[str] = field(default_factory=set)  # chunk ids written over
    started: bool = False  # the first generation bump happened


class WriterMixin:
    """Writes for :class:`~sieve.retriever.index.CorpusIndex` (whose state it uses)."""

    if TYPE_CHECKING:  # what CorpusIndex provides
        config: RetrieverConfig
        store: Store
        embedder: Embedder
        write_lock: WriteLock
        _recorded_embedder: str | None
        _checked_embedder: str | None

        @property
        def name(self) -> str: ...
        @property
        def chunker(self) -> Chunker: ...
        def refresh(self) -> CollectionState: ...
        def count(self) -> int: ...
        def _require_embedder_match(self) -> None: ...
        def drop(self, lock_timeout_s: float | None = None) -> None: ...
        def bm25_index(self) -> SegmentedBM25: ...
        def _bm25_at(self, generation: str) -> SegmentedBM25 | None: ...
        def _publish_bm25(self, run: WriteRun, generation: str) -> None: ...
        def _save_bm25(self, index: SegmentedBM25, generation: str) -> None: ...

    # -- runs -------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _write_run(self) -> Iterator[WriteRun]:
        """One run (call with the write lock held): bump, write, bump and publish BM25 once each."""
        run = WriteRun(base=self._bm25_at(self.refresh().generation))
        yield run
        if run.started:
            generation = self.store.bump_generation()  # the finished state gets a generation of its own
            self._publish_bm25(run, generation)

    def _start(self, run: WriteRun, *, had_documents: bool | None) -> None:
        if run.started:
            return
        if self.store.embedder is None:
            self._adopt_embedder(self.count() > 0 if had_documents is None else had_documents)
        self.store.bump_generation()  # also writes the embedder stamp
        run.started = True

    def _write_chunks(
        self,
        run: WriteRun,
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        doc_hashes: Mapping[str, str],
        n_chunks: Mapping[str, int],
        *,
        replace_docs: Sequence[str] = (),
        had_documents: bool | None = None,
    ) -> int:
        """Write one batch (replacing ``replace_docs`` first) and tokenise it into the run's BM25 segment."""
        self._start(run, had_documents=had_documents)
        if replace_docs:
            self.store.delete_docs(replace_docs)
            run.replaced_docs.update(replace_docs)
        self.store.upsert(chunks, vectors, doc_hashes, n_chunks)
        for c in chunks:  # tokenising is per chunk whatever the batch: ~40 µs against Chroma's ~1.4 ms
            run.added.add(c.chunk_id, passage_terms(c.title, c.text, c.heading_path))
        return len(chunks)

    # -- chunks with their vectors ----------------------------------------------------------------------
    def add_chunks(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> int:
        """Write chunks whose vectors are already computed; see :meth:`add_chunk_batches`."""
        return self.add_chunk_batches([(chunks, vectors)])

    def add_chunk_batches(self, batches: Iterable[tuple[Sequence[Chunk], np.ndarray]]) -> int:
        """Write ``(chunks, vectors)`` batches in one run: one write lock, two generation bumps, one BM25 segment.

        Chunks are upserted by id (a chunk id already present is replaced, in Chroma and in BM25);
        each chunk's document is recorded as complete with ``n_chunks`` = its chunks in the batch
        that brings them, unless ``chunk.metadata`` says otherwise. Batches may be of any size: the
        store splits them at Chroma's maximum batch size. Returns the number of chunks written.

        Args:
            batches: pairs of chunks and their float32 vectors ``(len(chunks), dim)``, made by the
                collection's embedder (its identity is stamped on the collection at the first write).

        Raises:
            InvalidInput: a vector count that differs from the chunk count.
            EmbedderMismatch: the collection was written by another embedder.
        """
        written = 0
        with self.write_lock.hold():
            self._require_embedder_match_now()
            with self._write_run() as run:
                for chunks, vectors in batches:
                    if len(chunks) != len(vectors):
                        raise InvalidInput(
                            f"Expected one vector per chunk, got {len(vectors)} vectors for {len(chunks)} chunks"
                        )
                    if not len(chunks):
                        continue
                    counts: dict[str, int] = {}
                    for c in chunks:
                        counts[c.doc_id] = counts.get(c.doc_id, 0) + 1
                    hashes = {d: "" for d in counts}
                    if run.base is not None and run.base.row_ids:  # ids matter only where rows may be replaced
                        run.replaced_ids.update(c.chunk_id for c in chunks)
                    written += self._write_chunks(run, chunks, vectors, hashes, counts)
        self.store.created = False
        return written

    def _require_embedder_match_now(self) -> None:
        self.refresh()
        self._require_embedder_match()

    # -- documents ----------------------------------------------------------------------------------------
    def index_path(self, path: str | Path, *, progress: bool = True, delete_missing: bool = False) -> IndexReport:
        """Index a file or folder; unreadable inputs are skipped and listed in ``report.ingest``.

        Documents indexed earlier from files of this folder that no longer exist are listed in
        ``report.gone``; ``delete_missing`` removes them after the run (``report.deleted``).

        Raises:
            NotFound: ``path`` does not exist.
            InvalidInput: ``path`` holds no readable document at all.

        Nothing is left half-done: when this run created the collection and fails (or finds
        nothing to index), the collection is removed again. An interrupted run (Ctrl-C) that
        already wrote keeps its work, and indexing again resumes it.
        """
        report = IngestReport()
        created = self.store.created
        result = self.index_documents(iter_documents(path, report), progress=progress)
        report.skipped.extend(result.ingest.skipped)  # documents that chunked to nothing
        result.ingest = report
        if report.documents == 0 or (created and result.chunks_written == 0):
            if created:
                self.drop()
            raise InvalidInput(_nothing_to_index(path, report))
        if delete_missing and result.gone:
            result.deleted = self.delete_documents(result.gone)
        return result

    def index_documents(self, docs: Iterable[Document], *, progress: bool = True) -> IndexReport:
        """Add or update documents, idempotently (content hash) and resumably.

        Work is embedded and written in batches of ``index_batch_size`` chunks; each batch replaces
        whole documents, so the worst an interruption leaves is a few incomplete documents that the
        next run detects (chunk count below ``n_chunks``) and rewrites.

        Raises:
            InvalidInput: a repeated id, or metadata Chroma cannot hold (see
                :func:`~sieve.retriever.metadata.validate_metadata`). A list or tuple is checked
                whole before anything is written; a stream is checked as it comes.
        """
        try:
            if isinstance(docs, (list, tuple)):
                docs = checked_documents(docs)
            report = self._index_documents(docs, progress=progress)
        except KeyboardInterrupt:
            # Ctrl-C keeps what was written (the next run resumes it), but not an empty new collection.
            if self.store.created and self.count() == 0:
                self.drop()
            raise
        except BaseException as exc:
            if self.store.created:
                # A run that never got the lock does not wait for it a second time to clean up.
                self.drop(lock_timeout_s=0 if isinstance(exc, StoreLocked) else None)
            raise
        self.store.created = False
        return report

    def _index_documents(self, docs: Iterable[Document], *, progress: bool) -> IndexReport:
        t0 = time.perf_counter()
        report = IndexReport()
        # The store lock (not self._lock) orders writers, threads and worker processes included:
        # searches of this index keep running while a write embeds and upserts.
        # WriteBehind: each batch is written in a background thread while the next one is chunked and
        # embedded (retriever/overlap.py); it is drained inside the run, before its closing bump.
        with self.write_lock.hold():
            self._require_embedder_match_now()  # before any work: a mismatching run writes nothing
            states = self.store.doc_states()
            report.gone = review_against_store(docs, states, self.name)
            with self._write_run() as run, WriteBehind() as writer:
                pending: list[tuple[Document, str, list[Chunk]]] = []
                embedded = 0  # chunks chunked and embedded so far: the bar's count (writes run a batch behind)
                seen: set[str] = set()
                bar = IndexProgress(f"Indexing {self.name}", docs, enabled=progress)  # drawn at the first document
                for doc in bar.track(docs):
                    validate_doc_id(doc.doc_id)
                    if doc.doc_id in seen:
                        raise InvalidInput(f"Expected unique document ids, got {doc.doc_id!r} twice")
                    seen.add(doc.doc_id)
                    validate_metadata(doc.metadata)
                    h = content_hash(doc, self.config.chunking_key)
                    state = states.get(doc.doc_id)
                    if state is not None and state.doc_hash == h and state.complete:
                        report.unchanged += 1
                        bar.done(1)
                        continue
                    chunks = self.chunker.chunk(doc)
                    if not chunks:
                        report.ingest.skip(doc.doc_id, "no tokens after chunking")
                        bar.done(1)
                        continue
                    if state is None:
                        report.added += 1
                    elif state.doc_hash == h:
                        report.resumed += 1
                    else:
                        report.updated += 1
                    pending.append((doc, h, chunks))
                    if sum(len(c) for _, _, c in pending) >= self.config.index_batch_size:
                        batch = [c for _, _, cs in pending for c in cs]
                        writer.submit(self._write, run, pending, states, self._embed(batch))
                        embedded += len(batch)
                        bar.done(len(pending), chunks=embedded)
                        pending = []
                if pending:
                    batch = [c for _, _, cs in pending for c in cs]
                    writer.submit(self._write, run, pending, states, self._embed(batch))
                    embedded += len(batch)
                    bar.done(len(pending), chunks=embedded)
                report.chunks_written = writer.drain()
                # The bar counted chunks as they were embedded; once written, it shows what was written.
                bar.done(0, chunks=report.chunks_written)
                bar.close()
        report.seconds = time.perf_counter() - t0
        return report

    def _write(
        self,
        run: WriteRun,
        batch: list[tuple[Document, str, list[Chunk]]],
        states: Mapping[str, DocState],
        vectors: np.ndarray | None = None,
    ) -> int:
        chunks = [c for _, _, cs in batch for c in cs]
        if vectors is None:
            vectors = self._embed(chunks)
        return self._write_chunks(
            run,
            chunks,
            vectors,
            {d.doc_id: h for d, h, _ in batch},
            {d.doc_id: len(cs) for d, _, cs in batch},
            replace_docs=[d.doc_id for d, _, _ in batch if d.doc_id in states],
            had_documents=bool(states),
        )

    def write_embedded(
        self,
        run: WriteRun,
        batch: list[tuple[Document, str, list[Chunk]]],
        states: Mapping[str, DocState],
        vectors: np.ndarray,
    ) -> int:
        """Write whole documents whose chunks were embedded elsewhere (``sieve index --ray``), in ``run``.

        The caller holds :attr:`write_lock`, opened ``run`` with :meth:`write_run` and read ``states``
        under the lock (:meth:`doc_states`); the run bumps the generation and publishes BM25 once it
        ends, as :meth:`index_documents` does. Returns the chunks written.
        """
        return self._write(run, batch, states, vectors)

    def write_run(self) -> contextlib.AbstractContextManager[WriteRun]:
        """One write run for :meth:`write_embedded` (with the write lock held): two bumps, one BM25 segment."""
        return self._write_run()

    def _embed(self, chunks: Sequence[Chunk]) -> np.ndarray:
        return self.embedder.embed_passages([passage_text(c.title, c.text, c.heading_path) for c in chunks])

    def _adopt_embedder(self, had_documents: bool) -> None:
        if had_documents:
            logger.warning(
                "Collection %s records no embedder (indexed before Sieve stamped collections); "
                "assuming its vectors came from %s",
                self.name,
                self.embedder.identity.describe(),
            )
        self.store.embedder = self._recorded_embedder = self._checked_embedder = self.embedder.identity.to_json()

    def delete_documents(self, doc_ids: Sequence[str]) -> int:
        """Remove documents (all their chunks) from Chroma and BM25; returns how many existed."""
        with self.write_lock.hold():
            self.refresh()
            states = self.store.doc_states()
            present = [d for d in doc_ids if d in states]
            if present:
                with self._write_run() as run:
                    self._start(run, had_documents=True)
                    self.store.delete_docs(present)
                    run.replaced_docs.update(present)
            return len(present)

    def optimize(self) -> int:
        """Merge the BM25 segments into one (dead rows and unused terms dropped); returns the segments before.

        Chroma is not touched, so the generation stays and readers load the merged file at their
        next search. What ``sieve index --optimize`` runs.
        """
        with self.write_lock.hold():
            generation = self.refresh().generation
            index = self.bm25_index()
            before = len(index.segments)
            self._save_bm25(index.merged(), generation)
            return before


def _nothing_to_index(path: str | Path, report: IngestReport) -> str:
    from sieve.retriever.readers import formats_help

    lines = report.problem_lines()  # every skip with its reason, ignored files by suffix
    return f"Expected at least one readable document ({formats_help()}) in {str(path)!r}, got none" + (
        ":\n" + "\n".join(lines) if lines else ""
    )


__all__ = ["IndexReport", "WriteRun", "WriterMixin", "checked_documents", "validate_doc_id"]
