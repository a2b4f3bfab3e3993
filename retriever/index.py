"""A searchable corpus: one Chroma collection plus its BM25 index, kept consistent.

Chroma is the source of truth, and a store has one writer at a time: every write holds the
store's inter-process :class:`~sieve.retriever.writelock.WriteLock` (readers never wait on it).
The BM25 index is a cache saved beside the Chroma data and tagged with the collection's *generation*, a token every write changes *before* it touches
Chroma and again when it is done; a BM25 file whose tag differs is stale and is rebuilt from
Chroma. So a run killed at any point (even ``kill -9``) leaves a store that opens consistent,
and indexing again resumes: documents whose content hash and chunk count match are skipped, the
rest are (re)written. Every search re-reads the generation (one Chroma round-trip), so several
processes sharing one Chroma server (``sieve serve --workers N``) each see a finished write on
their next request: they load the file the writer saved (one file, renamed into place) or rebuild.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from threading import RLock
from typing import TYPE_CHECKING, Any

from sieve.core.defaults import DEFAULT_K, DEFAULT_MODE
from sieve.core.errors import EmbedderMismatch, EmptyCorpus, InvalidInput, NotFound, StoreLocked
from sieve.retriever.base import Retriever, ScoredIdsRetriever, validate_k
from sieve.retriever.bm25 import BM25Builder, BM25Retriever, passage_terms
from sieve.retriever.bm25_segments import SegmentedBM25, segment_from_builder
from sieve.retriever.chunking import Chunker, split_chunk_id, validate_doc_id
from sieve.retriever.dense import DenseRetriever
from sieve.retriever.embeddings import EmbedderIdentity
from sieve.retriever.hybrid import HybridRetriever
from sieve.retriever.modes import MODES, get_mode
from sieve.retriever.handle import StoreHandle, open_store, store_tag, store_write_lock
from sieve.retriever.store import ChromaStore, CollectionState, DocState, validate_collection_name
from sieve.retriever.types import Chunk, Hit
from sieve.retriever.upsert import UpsertMixin
from sieve.retriever.writer import IndexReport, WriteRun, WriterMixin

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    import numpy as np

    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.embeddings import Embedder
    from sieve.retriever.store_api import Store
    from sieve.retriever.types import SearchMode, Where

logger = logging.getLogger(__name__)

MAX_OFFSET = 2**31 - 1  # Chroma takes page offsets as 32-bit integers (a larger one overflowed: a 500)


class CorpusIndex(WriterMixin, UpsertMixin):
    """Index, search, grep and read one collection. Build with :meth:`open`.

    Example:
        >>> index = CorpusIndex.open(RetrieverConfig(), "default")  # doctest: +SKIP
        >>> index.search("who painted the Mona Lisa", k=5, mode="hybrid")  # doctest: +SKIP
    """

    def __init__(self, config: RetrieverConfig, store: Store, embedder: Embedder, bm25_dir: Path) -> None:
        self.config = config
        self.store = store
        self.embedder = embedder
        self.bm25_dir = bm25_dir
        self.write_lock = store_write_lock(config)
        self._chunker: Chunker | None = None
        self._lock = RLock()
        self._bm25: SegmentedBM25 | None = None
        self._bm25_generation = ""  # the store generation self._bm25 matches ("" while serving an older one)
        self._bm25_saved = ""  # the fingerprint of the manifest self._bm25 was loaded from or saved as
        self._recorded_embedder: str | None = None  # the collection's stamp, as last read
        self._checked_embedder: str | None = None  # the stamp _embedder_error was computed for
        self._embedder_error: EmbedderMismatch | None = None
        self.dense = DenseRetriever(store, embedder, max_k=config.max_k)
        self.bm25 = BM25Retriever(store, self.bm25_index, max_k=config.max_k)
        self.hybrid = HybridRetriever(
            self.dense,
            self.bm25,
            rrf_k=config.rrf_k,
            candidates=config.candidates,
            dense_weight=config.dense_weight,
            bm25_weight=config.bm25_weight,
            max_k=config.max_k,
        )

    @property
    def name(self) -> str:
        """The collection's name as users type it (its Chroma collection is ``store.name``, a version of it)."""
        return self.store.base

    @property
    def generation(self) -> str:
        """The collection's write generation (changes with every write, by any process)."""
        return self.refresh().generation

    def is_current(self) -> bool:
        """Whether this index's collection still exists under its name (not deleted, not re-created)."""
        return self.store.is_current()

    @classmethod
    def open(
        cls,
        config: RetrieverConfig,
        collection: str = "default",
        *,
        create: bool = False,
        embedder: Embedder | None = None,
        client: StoreHandle | Any | None = None,
    ) -> CorpusIndex:
        """Open ``collection``; with ``create=False`` an unknown name raises :class:`UnknownCollection`.

        Without an ``embedder`` one is made lazily: the model loads on the first embedding or
        chunking, so BM25 search, listing and reading never load torch. The store is reached through
        this process's :class:`~sieve.retriever.handle.StoreHandle` of ``config``'s store (``client``
        may name it; a bare Chroma client from :func:`~sieve.retriever.store.make_client` of the same
        config stands for it), which follows what other processes write.
        """
        from sieve.retriever.embeddings import Embedder

        validate_collection_name(collection)
        if embedder is None:
            embedder = Embedder.from_config(config, lazy=True)  # checks the folder now, loads later
        handle = client if isinstance(client, StoreHandle) else open_store(config)
        store = ChromaStore.open(handle, collection, create=create, lock=store_write_lock(config))
        return cls(config, store, embedder, _bm25_dir(config, store.name))

    @classmethod
    def open_version(
        cls, config: RetrieverConfig, name: str, version: str, embedder: Embedder, client: StoreHandle | None = None
    ) -> CorpusIndex:
        """Open ``version`` (a Chroma collection made by :func:`~sieve.retriever.reembed.reembed_version`)
        of collection ``name`` directly, whether or not the name points at it (``sieve train all``
        trains on a version before deciding to switch to it)."""
        handle = client or open_store(config)
        store = ChromaStore(handle, version, base=name)
        return cls(config, store, embedder, _bm25_dir(config, version))

    @property
    def chunker(self) -> Chunker:
        """Splits documents with the embedder's tokenizer (which loads the embedder: only indexing needs it)."""
        if self._chunker is None:
            self._chunker = Chunker(
                self.embedder.tokenizer,
                self.config.chunk_tokens,  # type: ignore[arg-type]
                self.config.chunk_overlap,
                self.config.chunk_split,
            )
        return self._chunker

    def drop(self, lock_timeout_s: float | None = None) -> None:
        """Delete this collection and its BM25 cache (undoing a failed first index run)."""
        import shutil

        # A delete is a write: it waits for the store's writer like any other. If that writer keeps
        # the store past the timeout, the empty collection stays and the log says how to remove it.
        try:
            with self.write_lock.hold(lock_timeout_s), self._lock:
                try:
                    with self.store.handle.session() as client:
                        self.store.handle.mark_written()
                        client.delete_collection(self.name)
                        self.store.handle.mark_written()
                except Exception as exc:  # already gone: nothing left to undo
                    logger.debug("drop %s: %s", self.name, exc)
                shutil.rmtree(self.bm25_dir, ignore_errors=True)
                self._bm25 = None
        except StoreLocked:
            logger.warning(
                "Could not remove the collection %r this failed run created: another writer holds "
                "the store (`sieve collections --delete %s` removes it)",
                self.name,
                self.name,
            )

    # -- consistency with Chroma: generation and embedder ------------------------------------
    def refresh(self) -> CollectionState:
        """Read the collection's state (one Chroma round-trip) and note its recorded embedder.

        Every search calls this, so a write that returned through another process or worker is
        seen by the next request here (its generation changed), never served from a stale BM25.
        The recorded embedder is compared with ours only when vectors are about to be read or
        written (:meth:`_require_embedder_match`): a BM25 query never computes our identity.
        """
        state = self.store.state()
        if state.embedder is not None and state.embedder != self._recorded_embedder:
            self._recorded_embedder = state.embedder
            self._checked_embedder = None
            self._embedder_error = None
        return state

    @property
    def recorded_run(self) -> str | None:
        """The folder of the retrained run adopted for this collection (``sieve adopt``), if any."""
        return self.refresh().run

    def embedded_with(self, model: str | Path) -> bool:
        """Whether the collection's vectors were written by the model in folder ``model``."""
        recorded = self.refresh().embedder
        path = EmbedderIdentity.from_json(recorded).path if recorded else ""
        return bool(path) and Path(path).resolve() == Path(model).resolve()

    def _require_embedder_match(self) -> None:
        recorded = self._recorded_embedder
        if recorded is not None and recorded != self._checked_embedder:
            self._embedder_error = None
            stamp = EmbedderIdentity.from_json(recorded)
            try:
                self.embedder.identity.check_compatible(stamp, self.name)
            except EmbedderMismatch as exc:
                if not self._follow_recorded_embedder(stamp):
                    self._embedder_error = exc
            self._checked_embedder = recorded
        if self._embedder_error is not None:
            raise self._embedder_error

    def _follow_recorded_embedder(self, stamp: EmbedderIdentity) -> bool:
        """Open the collection with the model it was indexed with, when the caller named none.

        A collection indexed with another model than the shipped one (``sieve train embedder``'s, a
        user's own) records that model's folder; a command that did not choose an embedder (the
        configured one is the default) then uses the recorded model, if the folder still holds the
        same weights. An explicit other model, or another precision (int8, bf16), is never
        overridden: it stays a mismatch."""
        from sieve.retriever.config import default_embedder_path
        from sieve.retriever.embeddings import Embedder, cached_model_fingerprint

        ours = self.embedder
        if (
            not stamp.path
            or Path(ours.path).resolve() != Path(default_embedder_path()).resolve()
            or stamp.fingerprint == ours.identity.fingerprint  # the same model: a precision mismatch
            or stamp.dtype != ours.dtype
        ):
            return False
        folder = Path(stamp.path)
        cache = self.config.models_dir
        if not folder.is_dir() or cached_model_fingerprint(folder, cache) != stamp.fingerprint:
            return False
        self.embedder = Embedder.load(
            str(folder),
            backend=ours.backend,
            dtype=ours.dtype,
            batch_size=ours.batch_size,
            cache_dir=ours.cache_dir,
            device=ours.device,
            lazy=True,
        )
        self.dense.embedder = self.embedder  # hybrid search reads vectors through the dense retriever
        self._chunker = None
        logger.info("Collection %r: using the embedder it was indexed with, %s", self.name, folder)
        return True

    # -- BM25: segments tagged with the generation they match -----------------------------------
    def bm25_index(self) -> SegmentedBM25:
        """The BM25 index of the store's current generation, or, while another process writes, the
        last complete one; loaded from the saved manifest, or rebuilt from Chroma when that is stale."""
        with self._lock:
            gen = self.refresh().generation
            if self._bm25 is not None and gen == self._bm25_generation:
                return self._bm25
            saved = self._load_bm25()
            if saved is not None and saved == gen:
                self._bm25_generation = gen
                segments = len(self._bm25.segments)  # type: ignore[union-attr]
                logger.info("Loaded BM25 for %s (generation %s, %d segments)", self.name, gen[:8], segments)
                return self._bm25  # type: ignore[return-value]
            if self._bm25 is not None and self._writer_busy():
                # A run in progress: serve the last complete set of segments, check again next time.
                self._bm25_generation = ""
                return self._bm25
            self._bm25 = None  # let the old index go before the new one is built
            self._bm25 = self._rebuild_bm25(gen)
            self._bm25_generation = gen
            return self._bm25

    def _load_bm25(self) -> str | None:
        """Load the saved manifest into ``self._bm25`` (reusing held segments); its fingerprint, or None."""
        from sieve.retriever.bm25_segments import read_fingerprint

        fingerprint = read_fingerprint(self.bm25_dir)
        if fingerprint is None:
            return None
        if self._bm25 is not None and fingerprint == self._bm25_saved:
            return fingerprint
        loaded = SegmentedBM25.load(self.bm25_dir, reuse=self._bm25)
        if loaded is None:  # a writer's merge removed a segment between our two reads: read the new manifest
            loaded = SegmentedBM25.load(self.bm25_dir, reuse=self._bm25)
        if loaded is None or (loaded[0].k1, loaded[0].b, loaded[0].epsilon) != (
            self.config.bm25_k1,
            self.config.bm25_b,
            self.config.bm25_epsilon,
        ):
            return None
        self._bm25, self._bm25_saved = loaded
        return self._bm25_saved

    def _writer_busy(self) -> bool:
        """Whether another writer (not this thread) holds the store's lock right now."""
        with self.write_lock.try_hold() as held:
            return not held

    def _bm25_at(self, generation: str) -> SegmentedBM25 | None:
        """BM25 exactly at ``generation`` (held, saved, or empty for an empty collection), else None.

        Called by a write run as it starts (lock held): the run appends to it instead of rebuilding.
        """
        with self._lock:
            if self._bm25 is not None and self._bm25_generation == generation:
                return self._bm25
            if self._load_bm25() == generation:
                self._bm25_generation = generation
                return self._bm25
        if self.count() == 0:
            return SegmentedBM25.from_segments(
                [], k1=self.config.bm25_k1, b=self.config.bm25_b, epsilon=self.config.bm25_epsilon
            )
        return None

    def _publish_bm25(self, run: WriteRun, generation: str) -> None:
        """Save the run's BM25 (its base plus one segment, replaced rows dead) under ``generation``."""
        if run.base is None:  # stale when the run began (a killed run before it): rebuild from Chroma
            with self._lock:
                self._bm25 = None
                self._bm25 = self._rebuild_bm25(generation)
                self._bm25_generation = generation
            return
        dead = run.base.rows_of_docs(run.replaced_docs) if run.replaced_docs else []
        if run.replaced_ids:
            dead += run.base.rows_of_ids(run.replaced_ids)
        self._save_bm25(run.base.changed(run.added, dead), generation)

    def _save_bm25(self, index: SegmentedBM25, generation: str) -> None:
        index.save(self.bm25_dir, fingerprint=generation)
        with self._lock:
            self._bm25, self._bm25_generation, self._bm25_saved = index, generation, generation
        logger.info(
            "Saved BM25 for %s: %d chunks in %d segments (generation %s)",
            self.name,
            len(index),
            len(index.segments),
            generation[:8],
        )

    def _rebuild_bm25(self, gen: str) -> SegmentedBM25:
        # Streamed page by page: only term-frequency arrays accumulate, never the texts or token lists.
        builder = BM25Builder()
        for cid, text, meta in self.store.scan(include_text=True):
            builder.add(
                cid, passage_terms(str(meta.get("title") or ""), text or "", str(meta.get("heading_path") or ""))
            )
        index = SegmentedBM25.from_segments(
            [segment_from_builder(builder, {})],
            k1=self.config.bm25_k1,
            b=self.config.bm25_b,
            epsilon=self.config.bm25_epsilon,
        )
        # A reader must not wait for a writer, nor write the file while one runs: it keeps its
        # rebuilt index in memory and the writer saves the file when it finishes. A write that
        # finished meanwhile (another worker's) has its own, newer file.
        with self.write_lock.try_hold() as held:
            saved = held and self.store.generation == gen
            if saved:
                index.save(self.bm25_dir, fingerprint=gen)
            self._bm25_saved = gen if saved else ""
        logger.info(
            "Rebuilt BM25 for %s: %d chunks, %d terms%s",
            self.name,
            len(index.ids),
            len(index.vocab),
            "" if saved else " (not saved: a writer holds or changed the store)",
        )
        return index

    # -- reading --------------------------------------------------------------------------------
    def count(self) -> int:
        return self.store.count()

    def documents(self) -> dict[str, int]:
        """doc_id -> number of chunks present."""
        return {d: s.present for d, s in self.store.doc_states().items()}

    def list_documents(self, offset: int = 0, limit: int = 50) -> tuple[int, list[tuple[Chunk, int]]]:
        """The number of documents, and one page of them: each one's first chunk (title, source,
        metadata; no text) with the document's chunk count, in store order.

        Raises:
            InvalidInput: an ``offset`` outside 0..MAX_OFFSET or a ``limit`` outside 1..1000.
        """
        if not 0 <= offset <= MAX_OFFSET or not 1 <= limit <= 1000:
            raise InvalidInput(
                f"Expected 0 <= offset <= {MAX_OFFSET} and 1 <= limit <= 1000, got offset={offset}, limit={limit}"
            )
        total = len(self.store.ids_where({"position": 0}))
        return total, self.store.first_chunks(limit=limit, offset=offset)

    def chunk_context(self, chunk_id: str, window: int = 1) -> tuple[list[Chunk], int]:
        """The chunk ``chunk_id`` with ``window`` neighbours each side, and its document's chunk count.

        Raises:
            NotFound: no chunk has that id (a document id is not a chunk id).
        """
        if not self.store.get([chunk_id]):
            raise NotFound(f"Expected a chunk id of collection {self.name!r} (doc_id#position), got {chunk_id!r}")
        chunks = self.read(chunk_id, window)
        return chunks, len(self.store.ids_where({"doc_id": chunks[0].doc_id}))

    def retriever(self, mode: SearchMode) -> Retriever:
        """The retriever of ``mode``, a name in :data:`sieve.retriever.modes.MODES`."""
        return get_mode(mode).build(self)

    def scored_ids(self, query: str, k: int, *, mode: SearchMode = DEFAULT_MODE) -> list[tuple[str, float]]:
        """The ``k`` best (chunk id, score) pairs of one mode, without reading texts (candidate lists)."""
        self._ready(mode)
        retriever = self.retriever(mode)
        if not isinstance(retriever, ScoredIdsRetriever):
            raise InvalidInput(f"Expected a retrieval mode that ranks ids (dense, bm25, hybrid), got {mode!r}")
        return retriever.scored_ids(query, k)

    def check_filter(self, where: Where) -> None:
        """Raise :class:`InvalidInput` for a metadata filter the store cannot run (one cheap lookup)."""
        self.store.get_where(where, limit=1)

    def doc_states(self) -> dict[str, DocState]:
        """doc_id -> what the store holds of it (content hash, chunk count, chunks present)."""
        return self.store.doc_states()

    def search(
        self,
        query: str,
        k: int = DEFAULT_K,
        *,
        mode: SearchMode = DEFAULT_MODE,
        where: Where | None = None,
        exclude: Collection[str] | None = None,
    ) -> list[Hit]:
        self._ready(mode)
        return self.retriever(mode).search(query, k, where=where, exclude=exclude)

    def batch_search(
        self, queries: Sequence[str], k: int = DEFAULT_K, *, mode: SearchMode = DEFAULT_MODE, where: Where | None = None
    ) -> list[list[Hit]]:
        """One result list per query (the query embeddings in one batched forward pass)."""
        self._ready(mode)
        return self.retriever(mode).batch_search(queries, k, where=where)

    def _ready(self, mode: str) -> None:
        # len(BM25) is the chunk count at the store's current generation, without the Chroma
        # count() round-trip (~9 ms at 100k chunks) on every query.
        if len(self.bm25_index()) == 0:
            raise EmptyCorpus(
                f"Expected an indexed collection, got {self.name!r} with no chunks; run `sieve index PATH`"
            )
        known = MODES.get(mode)
        if known is None or known.needs_vectors:  # a mode that reads no vectors runs with any embedder
            self._require_embedder_match()

    def search_documents(
        self, query: str, n_docs: int, *, mode: SearchMode = DEFAULT_MODE, where: Where | None = None
    ) -> list[Hit]:
        """The best chunk of each of the ``n_docs`` best documents: one search, de-duplicated by document.

        Asks for ``3 * n_docs`` chunks so that ``n_docs`` documents survive de-duplication, and
        doubles the request (up to ``max_k``) in the rare case they do not. Plain RAG's ranking
        by document: the eval baselines and the agent's floor both use it, so they agree exactly.
        """
        limit = self.config.max_k
        want = min(3 * n_docs, limit)
        while True:
            hits = self.search(query, want, mode=mode, where=where)
            firsts: list[Hit] = []
            docs: set[str] = set()
            for h in hits:
                if h.doc_id not in docs:
                    docs.add(h.doc_id)
                    firsts.append(h)
            # Fewer hits than asked means the corpus (or filter) is exhausted: asking more is useless.
            if len(firsts) >= n_docs or len(hits) < want or want >= limit:
                return firsts[:n_docs]
            want = min(2 * want, limit)

    def grep(
        self, pattern: str, k: int = 5, *, where: Where | None = None, exclude: Collection[str] | None = None
    ) -> list[Hit]:
        """Chunks whose text matches the regex ``pattern`` (Rust regex syntax), at most ``k``."""
        validate_k(k, self.config.max_k)
        exclude = set(exclude or ())
        chunks = self.store.grep(pattern, k + len(exclude), where=where)
        kept = [c for c in chunks if c.chunk_id not in exclude][:k]
        return [Hit(chunk=c, score=1.0, rank=i + 1, mode="grep") for i, c in enumerate(kept)]

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        return self.store.get(chunk_ids)

    def get_vectors(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The embeddings the store holds for these chunks (what dense search compared against)."""
        return self.store.vectors(chunk_ids)

    def read_document(self, doc_id: str) -> list[Chunk]:
        """All chunks of a document in order."""
        chunks = sorted(self.store.get_where({"doc_id": doc_id}), key=lambda c: c.position)
        if not chunks:
            raise NotFound(f"Expected a document id of collection {self.name!r}, got {doc_id!r}")
        return chunks

    def read(self, ref: str, window: int | None = None) -> list[Chunk]:
        """A chunk id with ``window`` neighbours each side, or a whole document (doc id, or ``window=None``)."""
        found = self.store.get([ref])
        if not found:
            return self.read_document(ref)
        chunk = found[0]
        if window is None:
            return self.read_document(chunk.doc_id)
        if window < 0:
            raise InvalidInput(f"Expected window >= 0, got {window}")
        lo, hi = chunk.position - window, chunk.position + window
        where = {"$and": [{"doc_id": chunk.doc_id}, {"position": {"$gte": lo}}, {"position": {"$lte": hi}}]}
        return sorted(self.store.get_where(where), key=lambda c: c.position)


def _bm25_dir(config: RetrieverConfig, collection: str) -> Path:
    # Keyed by store location too, so two Chroma servers' collections of one name never share a cache.
    tag = store_tag(config)
    if len(collection) > 100:
        # File names cap at 255 bytes, collection names at 512: keep a readable prefix plus a hash.
        collection = f"{collection[:100]}~{hashlib.sha256(collection.encode()).hexdigest()[:10]}"
    return config.data_dir / "bm25" / f"{collection}-{tag}"


def delete_version(chroma: Any, config: RetrieverConfig, physical: str) -> None:
    """Delete one Chroma collection (a version of a name) and its BM25 cache; the caller holds the write lock."""
    import shutil

    chroma.delete_collection(physical)
    shutil.rmtree(_bm25_dir(config, physical), ignore_errors=True)


def delete_collection(config: RetrieverConfig, name: str, client: StoreHandle | Any | None = None) -> None:

    from sieve.retriever.versions import point, versions

    handle = client if isinstance(client, StoreHandle) else open_store(config)
    with store_write_lock(config).hold():
        ChromaStore.open(handle, name, create=False)  # raises UnknownCollection with the valid names
        with handle.session() as chroma:
            handle.mark_written()
            for physical in versions(chroma, name):  # every version: the name is gone
                delete_version(chroma, config, physical)
            point(chroma, name, None)
            handle.mark_written()


__all__ = [
    "MAX_OFFSET",
    "CorpusIndex",
    "IndexReport",
    "delete_collection",
    "split_chunk_id",
    "store_write_lock",
    "validate_doc_id",
]
