"""A searchable corpus: one Chroma collection plus its BM25 index, kept consistent.

Chroma is the source of truth, and a store has one writer at a time: every write holds the
store's inter-process :class:`~sieve.retriever.writelock.WriteLock` (readers never wait on it).
The BM25 index is a cache saved beside the Chroma data and tagged with the collection's
*generation*, a token every write changes *before* it touches Chroma and again when it is done; a
BM25 file whose tag differs is stale and is rebuilt from Chroma (:mod:`~sieve.retriever.bm25_cache`).
So a run killed at any point (even ``kill -9``) leaves a store that opens consistent, and indexing
again resumes: documents whose content hash and chunk count match are skipped, the rest are
(re)written. Every search re-reads the generation (one Chroma round-trip), so several processes
sharing one Chroma server (``sieve serve --workers N``) each see a finished write on their next
request: they load the file the writer saved (one file, renamed into place) or rebuild.

:class:`CorpusIndex` reads; its ``writer`` (:class:`~sieve.retriever.writer.IndexWriter`,
:mod:`~sieve.retriever.writer`) writes. Each holds the parts it needs; neither inherits from the other.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sieve.core.defaults import DEFAULT_K, DEFAULT_MODE
from sieve.core.errors import EmptyCorpus, InvalidInput, NotFound
from sieve.retriever.base import Retriever, ScoredIdsRetriever, validate_k
from sieve.retriever.bm25 import BM25Retriever
from sieve.retriever.bm25_cache import BM25Cache
from sieve.retriever.chunking import split_chunk_id, validate_doc_id
from sieve.retriever.dense import DenseRetriever
from sieve.retriever.embedder_check import EmbedderCheck
from sieve.retriever.embeddings import EmbedderIdentity
from sieve.retriever.handle import StoreHandle, open_store, store_tag, store_write_lock
from sieve.retriever.hybrid import HybridRetriever
from sieve.retriever.modes import MODES, get_mode
from sieve.retriever.store import ChromaStore, CollectionState, DocState, validate_collection_name
from sieve.retriever.types import Chunk, Hit
from sieve.retriever.write_run import IndexReport
from sieve.retriever.writer import IndexWriter

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    import numpy as np

    from sieve.retriever.bm25_segments import SegmentedBM25
    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.embeddings import Embedder
    from sieve.retriever.store_api import Store
    from sieve.retriever.types import SearchMode, Where

logger = logging.getLogger(__name__)

MAX_OFFSET = 2**31 - 1  # Chroma takes page offsets as 32-bit integers (a larger one overflowed: a 500)


class CorpusIndex:
    """Search, grep and read one collection; write it through :attr:`writer`. Build with :meth:`open`.

    The index is the reading side, made of parts it holds rather than inherits: the collection's
    BM25 segments (:attr:`bm25_cache`, a :class:`~sieve.retriever.bm25_cache.BM25Cache`), the check
    of its embedder against the collection's stamp (:attr:`embedder_check`), the retrievers of the
    search modes (:attr:`dense`, :attr:`bm25`, :attr:`hybrid`) and its :attr:`writer`
    (:class:`~sieve.retriever.writer.IndexWriter`), which runs every write under the store's lock.

    Example:
        >>> index = CorpusIndex.open(RetrieverConfig(), "default")  # doctest: +SKIP
        >>> index.search("who painted the Mona Lisa", k=5, mode="hybrid")  # doctest: +SKIP
        >>> index.writer.index_path("notes/")  # doctest: +SKIP
    """

    def __init__(self, config: RetrieverConfig, store: Store, embedder: Embedder, bm25_dir: Path) -> None:
        self.config = config
        self.store = store
        self.embedder = embedder
        self.bm25_dir = bm25_dir
        self.write_lock = store_write_lock(config)
        self.bm25_cache = BM25Cache(config, store, self.write_lock, bm25_dir)
        self.embedder_check = EmbedderCheck(config, store.base)
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
        self.writer = IndexWriter(self)

    @property
    def name(self) -> str:
        """The collection's name as users type it (its Chroma collection is ``store.name``, a version of it)."""
        return self.store.base

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
        version: str | None = None,
    ) -> CorpusIndex:
        """Open ``collection``; with ``create=False`` an unknown name raises :class:`UnknownCollection`.

        Without an ``embedder`` one is made lazily: the model loads on the first embedding or
        chunking, so BM25 search, listing and reading never load torch. The store is reached through
        this process's :class:`~sieve.retriever.handle.StoreHandle` of ``config``'s store (``client``
        may name it; a bare Chroma client from :func:`~sieve.retriever.store.make_client` of the same
        config stands for it), which follows what other processes write.

        With ``version`` (a Chroma collection made by :func:`~sieve.retriever.reembed.reembed_version`),
        that version of ``collection`` opens directly, whether or not the name points at it (``sieve
        train all`` trains on a version before deciding to switch to it).
        """
        from sieve.retriever.embeddings import Embedder

        validate_collection_name(collection)
        if embedder is None:
            embedder = Embedder.from_config(config, lazy=True)  # checks the folder now, loads later
        handle = client if isinstance(client, StoreHandle) else open_store(config)
        if version is not None:
            store = ChromaStore(handle, version, base=collection)
        else:
            store = ChromaStore.open(handle, collection, create=create, lock=store_write_lock(config))
        return cls(config, store, embedder, _bm25_dir(config, store.name))

    # -- consistency with Chroma: generation and embedder ------------------------------------
    def refresh(self) -> CollectionState:
        """Read the collection's state (generation, embedder, adopted run: one Chroma round-trip).

        Every search calls this, so a write that returned through another process or worker is
        seen by the next request here (its generation changed), never served from a stale BM25.
        The recorded embedder is compared with ours only when vectors are about to be read or
        written (:meth:`require_embedder_match`): a BM25 query never computes our identity.
        """
        state = self.store.state()
        self.embedder_check.note(state.embedder)
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

    def require_embedder_match(self) -> None:
        """Raise :class:`EmbedderMismatch` unless our embedder may read and write the collection's vectors.

        A collection indexed with another model than the default one, opened without naming a
        model, switches to the model it records (:class:`~sieve.retriever.embedder_check.EmbedderCheck`).
        """
        embedder = self.embedder_check.require(self.embedder)
        if embedder is not self.embedder:
            self.embedder = embedder
            self.dense.embedder = embedder  # hybrid search reads vectors through the dense retriever

    def bm25_index(self) -> SegmentedBM25:
        """The BM25 index of the store's current generation, or, while another process writes, the
        last complete one; loaded from the saved manifest, or rebuilt from Chroma when that is stale."""
        with self.bm25_cache.lock:  # the generation read and the index it selects, one step for this process
            return self.bm25_cache.current(self.refresh().generation)

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
        """The retriever of ``mode`` (a name in :data:`sieve.retriever.modes.MODES`), once the collection can run it.

        Raises:
            EmptyCorpus: the collection holds no chunks.
            EmbedderMismatch: the mode reads vectors and another embedder wrote the collection's.
            InvalidInput: no mode has that name.
        """
        # len(BM25) is the chunk count at the store's current generation, without the Chroma
        # count() round-trip (~9 ms at 100k chunks) on every query.
        if len(self.bm25_index()) == 0:
            raise EmptyCorpus(
                f"Expected an indexed collection, got {self.name!r} with no chunks; run `sieve index PATH`"
            )
        known = MODES.get(mode)
        if known is None or known.needs_vectors:  # a mode that reads no vectors runs with any embedder
            self.require_embedder_match()
        return get_mode(mode).build(self)

    def scored_ids(self, query: str, k: int, *, mode: SearchMode = DEFAULT_MODE) -> list[tuple[str, float]]:
        """The ``k`` best (chunk id, score) pairs of one mode, without reading texts (candidate lists)."""
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
        """The ``k`` best chunks for ``query`` by ``mode``, those matching ``where`` and not in ``exclude``."""
        return self.retriever(mode).search(query, k, where=where, exclude=exclude)

    def batch_search(
        self, queries: Sequence[str], k: int = DEFAULT_K, *, mode: SearchMode = DEFAULT_MODE, where: Where | None = None
    ) -> list[list[Hit]]:
        """One result list per query (the query embeddings in one batched forward pass)."""
        return self.retriever(mode).batch_search(queries, k, where=where)

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
