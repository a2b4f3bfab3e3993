"""The write side of a :class:`~sieve.retriever.index.CorpusIndex`: its ``writer``, whose runs add, replace and delete chunks.

Every write is a *run* (:meth:`IndexWriter.run`) under the store's write lock:

1. the collection's generation is bumped once, before the first chunk is written (a run killed
   from here on leaves a generation no BM25 manifest has: the next reader rebuilds);
2. chunks go to Chroma in batches of up to Chroma's maximum batch size, vectors as one float32
   array per batch; the run tokenises what it writes into one new BM25 segment and notes the rows
   it replaced;
3. the generation is bumped once more and the BM25 manifest naming the new segment is saved under
   it (:mod:`~sieve.retriever.bm25_cache`): readers switch to it at their next search and serve
   the previous one until then.

:meth:`IndexWriter.add_chunk_batches` is the public path for chunks that come with their vectors
(benchmarks); :meth:`IndexWriter.index_documents` embeds documents itself, and
:meth:`IndexWriter.upsert_documents` writes a request's documents whole or not at all
(:mod:`~sieve.retriever.upsert`). The writer holds its index (what it uses of it is
:class:`IndexParts`), never the other way round: searches need no writer.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import TYPE_CHECKING, Protocol

from sieve.core.errors import InvalidInput, StoreLocked
from sieve.retriever.bm25 import passage_terms
from sieve.retriever.chunking import Chunker, validate_doc_id
from sieve.retriever.ingest import IngestReport, content_hash, iter_documents, review_against_store
from sieve.retriever.metadata import validate_metadata
from sieve.retriever.overlap import WriteBehind
from sieve.retriever.progress import IndexProgress
from sieve.retriever.turns import with_turn_context
from sieve.retriever.types import passage_text
from sieve.retriever.upsert import Batch, Prepared, commit, prepare, unchanged
from sieve.retriever.write_run import IndexReport, WriteRun, checked_documents, nothing_to_index

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence
    from pathlib import Path

    import numpy as np

    from sieve.retriever.bm25_cache import BM25Cache
    from sieve.retriever.bm25_segments import SegmentedBM25
    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.embedder_check import EmbedderCheck
    from sieve.retriever.embeddings import Embedder
    from sieve.retriever.store import CollectionState, DocState
    from sieve.retriever.store_api import Store
    from sieve.retriever.types import Chunk, Document
    from sieve.retriever.writelock import WriteLock

logger = logging.getLogger(__name__)


class IndexParts(Protocol):
    """What a writer uses of its index (:class:`~sieve.retriever.index.CorpusIndex`, which imports this module)."""

    config: RetrieverConfig
    store: Store
    embedder: Embedder  # may change: a collection is read and written with the model it records
    write_lock: WriteLock
    bm25_cache: BM25Cache
    embedder_check: EmbedderCheck

    @property
    def name(self) -> str: ...
    def refresh(self) -> CollectionState: ...
    def require_embedder_match(self) -> None: ...
    def bm25_index(self) -> SegmentedBM25: ...


class IndexWriter:
    """Writes to one collection, each under the store's write lock. Reached as ``index.writer``.

    Example:
        >>> index = CorpusIndex.open(RetrieverConfig(), "notes", create=True)  # doctest: +SKIP
        >>> index.writer.index_path("notes/").chunks_written  # doctest: +SKIP
        42
    """

    def __init__(self, index: IndexParts) -> None:
        self.index = index
        self._chunker: Chunker | None = None
        self._chunker_of: Embedder | None = None  # the embedder whose tokenizer _chunker uses

    @property
    def chunker(self) -> Chunker:
        """Splits documents with the embedder's tokenizer (which loads the embedder: only indexing needs it)."""
        embedder, config = self.index.embedder, self.index.config
        if self._chunker is None or self._chunker_of is not embedder:
            self._chunker = Chunker(
                embedder.tokenizer,
                config.chunk_tokens,  # type: ignore[arg-type]
                config.chunk_overlap,
                config.chunk_split,
            )
            self._chunker_of = embedder
        return self._chunker

    def drop(self, lock_timeout_s: float | None = None) -> None:
        """Delete this collection and its BM25 cache (undoing a failed first index run)."""
        index = self.index
        # A delete is a write: it waits for the store's writer like any other. If that writer keeps
        # the store past the timeout, the empty collection stays and the log says how to remove it.
        try:
            with index.write_lock.hold(lock_timeout_s), index.bm25_cache.lock:
                try:
                    with index.store.handle.session() as client:
                        index.store.handle.mark_written()
                        client.delete_collection(index.name)
                        index.store.handle.mark_written()
                except Exception as exc:  # already gone: nothing left to undo
                    logger.debug("drop %s: %s", index.name, exc)
                index.bm25_cache.clear()
        except StoreLocked:
            logger.warning(
                "Could not remove the collection %r this failed run created: another writer holds "
                "the store (`sieve collections --delete %s` removes it)",
                index.name,
                index.name,
            )

    # -- runs -------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def run(self) -> Iterator[WriteRun]:
        """One write run (call with the write lock held): two generation bumps and one BM25 segment.

        :meth:`write` writes into it; the run bumps the generation and publishes BM25 once it ends.
        """
        run = WriteRun(base=self.index.bm25_cache.at(self.index.refresh().generation))
        yield run
        if run.started:
            generation = self.index.store.bump_generation()  # the finished state gets a generation of its own
            self.index.bm25_cache.publish(run, generation)

    def _start(self, run: WriteRun, *, had_documents: bool | None) -> None:
        if run.started:
            return
        store = self.index.store
        if store.embedder is None:
            self._adopt_embedder(store.count() > 0 if had_documents is None else had_documents)
        store.bump_generation()  # also writes the embedder stamp
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
            self.index.store.delete_docs(replace_docs)
            run.replaced_docs.update(replace_docs)
        self.index.store.upsert(chunks, vectors, doc_hashes, n_chunks)
        for c in chunks:  # tokenising is per chunk whatever the batch: ~40 µs against Chroma's ~1.4 ms
            run.added.add(c.chunk_id, passage_terms(c.title, c.text, c.heading_path))
        return len(chunks)

    def _check_embedder(self) -> None:
        self.index.refresh()  # the stamp as the store has it now
        self.index.require_embedder_match()

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
        with self.index.write_lock.hold():
            self._check_embedder()
            with self.run() as run:
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
        self.index.store.created = False
        return written

    # -- documents ----------------------------------------------------------------------------------------
    def index_path(self, path: str | Path, *, progress: bool = True, delete_missing: bool = False) -> IndexReport:
        """Index a file or folder; unreadable inputs are skipped and listed in ``report.ingest``.

        Documents indexed earlier from files of this folder that it no longer gives (deleted, moved
        out, or left out by a ``.gitignore``) are listed in
        ``report.gone``; ``delete_missing`` removes them after the run (``report.deleted``).

        Raises:
            NotFound: ``path`` does not exist.
            InvalidInput: ``path`` holds no readable document at all.

        Nothing is left half-done: when this run created the collection and fails (or finds
        nothing to index), the collection is removed again. An interrupted run (Ctrl-C) that
        already wrote keeps its work, and indexing again resumes it.
        """
        report = IngestReport()
        created = self.index.store.created
        result = self.index_documents(
            iter_documents(path, report, gitignore=self.index.config.gitignore), progress=progress
        )
        report.skipped.extend(result.ingest.skipped)  # documents that chunked to nothing
        result.ingest = report
        if report.documents == 0 or (created and result.chunks_written == 0):
            if created:
                self.drop()
            raise InvalidInput(nothing_to_index(path, report))
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
        store = self.index.store
        try:
            if isinstance(docs, (list, tuple)):
                docs = checked_documents(docs)
            report = self._index_documents(docs, progress=progress)
        except KeyboardInterrupt:
            # Ctrl-C keeps what was written (the next run resumes it), but not an empty new collection.
            if store.created and store.count() == 0:
                self.drop()
            raise
        except BaseException as exc:
            if store.created:
                # A run that never got the lock does not wait for it a second time to clean up.
                self.drop(lock_timeout_s=0 if isinstance(exc, StoreLocked) else None)
            raise
        store.created = False
        return report

    def _index_documents(self, docs: Iterable[Document], *, progress: bool) -> IndexReport:
        t0 = time.perf_counter()
        report = IndexReport()
        index = self.index
        # The store lock (not the BM25 cache's) orders writers, threads and worker processes included:
        # searches of this index keep running while a write embeds and upserts.
        # WriteBehind: each batch is written in a background thread while the next one is chunked and
        # embedded (retriever/overlap.py); it is drained inside the run, before its closing bump.
        with index.write_lock.hold():
            self._check_embedder()  # before any work: a mismatching run writes nothing
            states = index.store.doc_states()
            report.gone = review_against_store(docs, states, index.name)
            with self.run() as run, WriteBehind() as writer:
                pending: list[tuple[Document, str, list[Chunk]]] = []
                embedded = 0  # chunks chunked and embedded so far: the bar's count (writes run a batch behind)
                seen: set[str] = set()
                bar = IndexProgress(f"Indexing {index.name}", docs, enabled=progress)  # drawn at the first document
                for doc in with_turn_context(bar.track(docs)):  # a chat log's turns, each read after the one before
                    validate_doc_id(doc.doc_id)
                    if doc.doc_id in seen:
                        raise InvalidInput(f"Expected unique document ids, got {doc.doc_id!r} twice")
                    seen.add(doc.doc_id)
                    validate_metadata(doc.metadata)
                    h = content_hash(doc, index.config.chunking_key)
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
                    if sum(len(c) for _, _, c in pending) >= index.config.index_batch_size:
                        batch = [c for _, _, cs in pending for c in cs]
                        writer.submit(self.write, run, pending, states, self.embed(batch))
                        embedded += len(batch)
                        bar.done(len(pending), chunks=embedded)
                        pending = []
                if pending:
                    batch = [c for _, _, cs in pending for c in cs]
                    writer.submit(self.write, run, pending, states, self.embed(batch))
                    embedded += len(batch)
                    bar.done(len(pending), chunks=embedded)
                report.chunks_written = writer.drain()
                # The bar counted chunks as they were embedded; once written, it shows what was written.
                bar.done(0, chunks=report.chunks_written)
                bar.close()
        report.seconds = time.perf_counter() - t0
        return report

    def write(
        self,
        run: WriteRun,
        batch: Batch,
        states: Mapping[str, DocState],
        vectors: np.ndarray | None = None,
    ) -> int:
        """Write whole documents ``(document, content hash, chunks)`` in ``run``; returns the chunks written.

        ``vectors`` are the chunks' in order (embedded here when None: ``sieve index --ray`` embeds
        elsewhere). The caller holds the write lock, opened ``run`` with :meth:`run` and read ``states``
        under the lock (``index.doc_states()``): a document the store holds is replaced whole.
        """
        chunks = [c for _, _, cs in batch for c in cs]
        if vectors is None:
            vectors = self.embed(chunks)
        return self._write_chunks(
            run,
            chunks,
            vectors,
            {d.doc_id: h for d, h, _ in batch},
            {d.doc_id: len(cs) for d, _, cs in batch},
            replace_docs=[d.doc_id for d, _, _ in batch if d.doc_id in states],
            had_documents=bool(states),
        )

    def embed(self, chunks: Sequence[Chunk]) -> np.ndarray:
        """The chunks' passage vectors, by the index's embedder (title and heading path included)."""
        return self.index.embedder.embed_passages([passage_text(c.title, c.text, c.heading_path) for c in chunks])

    def _adopt_embedder(self, had_documents: bool) -> None:
        index = self.index
        if had_documents:
            logger.warning(
                "Collection %s records no embedder (indexed before Sieve stamped collections); "
                "assuming its vectors came from %s",
                index.name,
                index.embedder.identity.describe(),
            )
        stamp = index.embedder.identity.to_json()
        index.store.embedder = stamp
        index.embedder_check.adopt(stamp)

    def delete_documents(self, doc_ids: Sequence[str]) -> int:
        """Remove documents (all their chunks) from Chroma and BM25; returns how many existed."""
        with self.index.write_lock.hold():
            self.index.refresh()
            states = self.index.store.doc_states()
            present = [d for d in doc_ids if d in states]
            if present:
                with self.run() as run:
                    self._start(run, had_documents=True)
                    self.index.store.delete_docs(present)
                    run.replaced_docs.update(present)
            return len(present)

    def optimize(self) -> int:
        """Merge the BM25 segments into one (dead rows and unused terms dropped); returns the segments before.

        Chroma is not touched, so the generation stays and readers load the merged file at their
        next search. What ``sieve index --optimize`` runs.
        """
        with self.index.write_lock.hold():
            generation = self.index.refresh().generation
            bm25 = self.index.bm25_index()
            before = len(bm25.segments)
            self.index.bm25_cache.save(bm25.merged(), generation)
            return before

    # -- one request's documents, whole or not at all ---------------------------------------------------
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
        store = self.index.store
        t0 = time.perf_counter()
        try:
            report = self._upsert(list(with_turn_context(checked_documents(docs))), stop)
        except BaseException as exc:
            if store.created:
                self.drop(lock_timeout_s=0 if isinstance(exc, StoreLocked) else None)
            raise
        if report.cancelled and store.created:
            self.drop()
        elif not report.cancelled:
            store.created = False
        report.seconds = time.perf_counter() - t0
        return report

    def _upsert(self, docs: Sequence[Document], stop: threading.Event) -> IndexReport:
        index, report = self.index, IndexReport()
        self._check_embedder()
        hashes = {d.doc_id: content_hash(d, index.config.chunking_key) for d in docs}
        before = index.store.doc_states()
        prepared = self._prepare(
            [d for d in docs if not unchanged(before.get(d.doc_id), hashes[d.doc_id])], report, stop
        )
        if prepared is None:
            return IndexReport(cancelled=True)
        try:
            with index.write_lock.hold(stop=stop):
                if stop.is_set():
                    return IndexReport(cancelled=True)
                self._check_embedder()  # the store as it is now: another writer may have come in between
                states = index.store.doc_states()
                skipped = {where for where, _ in report.ingest.skipped}
                late = [
                    d
                    for d in docs
                    if d.doc_id not in prepared
                    and d.doc_id not in skipped
                    and not unchanged(states.get(d.doc_id), hashes[d.doc_id])
                ]
                prepared.update(self._prepare(late, report, threading.Event()) or {})
                with self.run() as run:
                    commit(
                        docs,
                        hashes,
                        prepared,
                        states,
                        report,
                        write=lambda batch, vectors: self.write(run, batch, states, vectors),
                        batch_size=index.config.index_batch_size,
                    )
        except StoreLocked:
            if stop.is_set():
                return IndexReport(cancelled=True)
            raise
        return report

    def _prepare(self, docs: Sequence[Document], report: IndexReport, stop: threading.Event) -> Prepared | None:
        # The chunker is reached only for a document to chunk: it loads the embedder's tokenizer.
        return prepare(
            docs,
            report,
            stop,
            chunk=lambda doc: self.chunker.chunk(doc),
            embed=self.embed,
            batch_size=self.index.config.embed_batch_size,
        )


__all__ = ["IndexParts", "IndexReport", "IndexWriter", "WriteRun", "checked_documents", "validate_doc_id"]
