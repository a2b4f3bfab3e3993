"""The Chroma vector store: embedded ``PersistentClient`` by default, ``HttpClient`` when a server URL is set.

Chroma never embeds anything here: collections are created with ``embedding_function=None`` and
every write and query passes our vectors, so Chroma cannot download its ONNX default model.
Each chunk's metadata carries what indexing needs to resume (``doc_hash``, ``n_chunks``) and what
results need to show (``doc_id``, ``title``, ``source``, ``position``, offsets).
"""

from __future__ import annotations

import contextlib
import logging
import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sieve.core.errors import (
    CollectionGone,
    InvalidInput,
    InvalidPattern,
    SieveError,
    StoreUnavailable,
    UnknownCollection,
)
from sieve.retriever.collection_ref import CollectionRef
from sieve.retriever.exact import ExactCache
from sieve.retriever.filters import validate_where
from sieve.retriever.handle import StoreHandle
from sieve.retriever.metadata import RESERVED_KEYS
from sieve.retriever.types import Chunk

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    import numpy as np

    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.types import Where
    from sieve.retriever.writelock import WriteLock

logger = logging.getLogger(__name__)

# Chroma's collection-name rule (validate_collection_name adds: no ".."), and the same in words;
# the HTTP schemas validate with the pattern and explain a mismatch with the words.
COLLECTION_NAME_PATTERN = r"^[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]$"
COLLECTION_NAME_RULE = (
    "a collection name of 3-512 characters from [a-zA-Z0-9._-], starting and ending with a letter or digit"
)
_NAME_RE = re.compile(COLLECTION_NAME_PATTERN)
GENERATION_KEY = "sieve_generation"
EMBEDDER_KEY = "sieve_embedder"  # JSON of the EmbedderIdentity that wrote the collection's vectors
RUN_KEY = "sieve_run"  # the retrained run (sieve train all's folder) adopted for this collection, if any
# `sieve eval` caches each pooled corpus as eval-<sets>-[onnx-]<fp32|bf16|int8>-<10 hex digits of its
# fingerprint> (sieve.eval.data.collection_name). Listings leave these out unless asked: they are not the user's.
EVAL_CACHE_PREFIX = "eval-"
_EVAL_CACHE_RE = re.compile(r"^eval-.+-(?:fp32|bf16|int8)-[0-9a-f]{10}$")
PAGE = 2000  # rows per Chroma get() page when scanning a whole collection


def chroma_input_errors() -> tuple[type[Exception], ...]:
    """What Chroma raises for a bad filter or regex: its ``InvalidArgumentError`` (Rust side) and a
    plain ``ValueError`` (its Python-side validation of ``where``). Called in ``except`` clauses,
    so chromadb, which takes seconds to import, is loaded only once a client exists."""
    from chromadb.errors import InvalidArgumentError

    return (InvalidArgumentError, ValueError)


# What SQLite says when a filter is past its own limits (Chroma passes it on as an InternalError):
# the caller's filter, not the store, is at fault. sieve.retriever.filters keeps filters far from these.
_SQL_LIMIT_MESSAGES = ("Expression tree is too large", "too many SQL variables", "too many terms", "too big")


def _rejects_filter(exc: BaseException) -> bool:
    """Whether ``exc``, raised by a Chroma call given a ``where``, is the store refusing that filter."""
    from chromadb.errors import InternalError

    if isinstance(exc, SieveError):  # already ours (InvalidInput is a ValueError too)
        return False
    if isinstance(exc, (*chroma_input_errors(), TypeError, KeyError, RecursionError)):
        return True
    return isinstance(exc, InternalError) and any(m in str(exc) for m in _SQL_LIMIT_MESSAGES)


@contextlib.contextmanager
def filter_checked(where: Where | None) -> Iterator[None]:
    """Bound ``where`` before the Chroma call in the block, and turn the store's refusal of it into
    :class:`InvalidInput` with the store's reason (a client's mistake, never a 500).

    Raises:
        InvalidInput: ``where`` is past :data:`~sieve.retriever.filters.FILTER_LIMITS`, or the store refused it.
    """
    if where is None:
        yield
        return
    validate_where(where)
    try:
        yield
    except Exception as exc:
        if not _rejects_filter(exc):
            raise
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:300]
        raise InvalidInput(
            f"Expected a valid Chroma metadata filter, got one the store rejects ({reason}): {str(where)[:200]}"
        ) from exc


def validate_collection_name(name: str) -> str:
    """Return ``name`` if Chroma accepts it, else raise :class:`InvalidInput`.

    Example:
        >>> validate_collection_name("default")
        'default'
    """
    if not isinstance(name, str) or not _NAME_RE.match(name) or ".." in name:
        raise InvalidInput(f"Expected {COLLECTION_NAME_RULE}, got {name!r}")
    return name


def make_client(config: RetrieverConfig) -> Any:
    """The store's current Chroma client, with telemetry off, for immediate use.

    It is this process's shared handle's client (:func:`~sieve.retriever.handle.open_store`), which
    the handle replaces when another process writes the store: long-lived code keeps the handle and
    takes the client from :meth:`~sieve.retriever.handle.StoreHandle.session` for each use.
    """
    from sieve.retriever.handle import open_store

    return open_store(config).client


# query_ids asks HNSW for more neighbours than it returns. Chroma searches with a beam of
# max(ef_search, n_results): at n_results = n the last places are approximate, and a new process
# rebuilds the records added since the index's last save (under sync_threshold) into a graph that
# differs from run to run, so the same query returned other chunks in another process
# (docs-poetry-dev, depth 200: 0.2 of 200 chunks per question differed from exact search, and the
# same eval run twice moved SR@5 by 0.025). This beam made every depth the eval reads exact and
# identical across runs there, for ~1.5 ms a query at 100k chunks (docs/scaling.md, "The search beam").
HNSW_OVERFETCH = 2
HNSW_MIN_BEAM = 400


def hnsw_configuration(config: RetrieverConfig | None) -> dict[str, Any]:
    """Chroma's HNSW settings for a new collection (chromadb 1.x ``configuration={"hnsw": ...}``).

    ``sync_threshold`` is how many records Chroma's embedded store adds to its in-memory HNSW
    index between two saves of the index (and its id map) to disk; at Chroma's default of 1,000
    every batch of 5,000 saved it, and each save writes the whole id map, so a run's save cost grew
    with the collection. ``docs/scaling.md`` has the measurements behind the defaults.

    Example:
        >>> hnsw_configuration(None)["space"]
        'cosine'
    """
    from sieve.retriever.config import RetrieverConfig

    cfg = config if config is not None else RetrieverConfig()
    return {
        "space": "cosine",
        "sync_threshold": cfg.hnsw_sync_threshold,
        "ef_construction": cfg.hnsw_ef_construction,
        "max_neighbors": cfg.hnsw_max_neighbors,
    }


def _to_metadata(chunk: Chunk, doc_hash: str, n_chunks: int) -> dict[str, Any]:
    # Values were checked when their document entered (retriever.metadata.validate_metadata):
    # scalars and homogeneous lists go to Chroma as they are, never as their string form.
    meta: dict[str, Any] = {k: v for k, v in chunk.metadata.items() if k not in RESERVED_KEYS and v is not None}
    meta.update(
        chunk_id=chunk.chunk_id,
        doc_id=chunk.doc_id,
        title=chunk.title,
        source=chunk.source,
        position=chunk.position,
        char_start=chunk.char_start,
        char_end=chunk.char_end,
        n_tokens=chunk.n_tokens,
        doc_hash=doc_hash,
        n_chunks=n_chunks,
    )
    if chunk.heading_path:  # only sectioned chunks carry one: other collections' records stay as they were
        meta["heading_path"] = chunk.heading_path
    return meta


def chunk_from_record(chunk_id: str, text: str | None, meta: dict[str, Any] | None) -> Chunk:
    meta = dict(meta or {})
    extra = {k: v for k, v in meta.items() if k not in RESERVED_KEYS}
    return Chunk(
        chunk_id=chunk_id,
        doc_id=str(meta.get("doc_id", chunk_id.rpartition("#")[0])),
        position=int(meta.get("position", 0)),
        text=text or "",
        title=str(meta.get("title", "")),
        source=str(meta.get("source", "")),
        char_start=int(meta.get("char_start", 0)),
        char_end=int(meta.get("char_end", 0)),
        n_tokens=int(meta.get("n_tokens", 0)),
        metadata=extra,
        heading_path=str(meta.get("heading_path", "")),
    )


@dataclass(frozen=True)
class CollectionState:
    """What one ``get_collection`` round-trip tells: which collection, its write generation, its embedder."""

    collection_id: str
    generation: str
    embedder: str | None  # EmbedderIdentity JSON, None for a collection no Sieve write has stamped yet
    run: str | None = None  # the folder of the retrained run adopted for it (RUN_KEY), if any


@dataclass(frozen=True)
class DocState:
    """What the store holds of one document: its content hash, how many of its chunks are present,
    and where it was read from (``source``)."""

    doc_hash: str
    n_chunks: int
    present: int
    source: str = ""

    @property
    def complete(self) -> bool:
        return self.present == self.n_chunks


class ChromaStore:
    """One Chroma collection holding Sieve chunks. Build with :meth:`open`.

    Every Chroma call runs in a session of the process's :class:`~sieve.retriever.handle.StoreHandle`,
    so it reads (and writes) through a client that is current with what other processes wrote; the
    collection object of that client is its :class:`~sieve.retriever.collection_ref.CollectionRef`'s.
    """

    def __init__(self, handle: StoreHandle, name: str, *, created: bool = False, base: str | None = None) -> None:
        self.handle = handle
        self.name = name  # the Chroma collection: the version of ``base`` that was active when opened
        self.base = base or name  # the name users type (sieve.retriever.versions)
        # True while the collection exists only because this store made it and no write has
        # succeeded yet: a failing first index run then removes it instead of leaving it empty.
        self.created = created
        self._ref = CollectionRef(handle, name)  # the collection through a client current with the store
        self._exact = ExactCache()  # every vector of a small collection, for exact unfiltered dense search
        self._state: CollectionState | None = None  # the last state() read: every search reads one first
        with self._ref.use() as col:
            meta = col.metadata or {}
            self.embedder: str | None = meta.get(EMBEDDER_KEY)
            self.run: str | None = meta.get(RUN_KEY)

    @property
    def client(self) -> Any:
        """The current Chroma client (for immediate use: another process's write replaces it)."""
        return self.handle.client

    @property
    def collection(self) -> Any:
        """The current Chroma collection object (for immediate use, as :attr:`client`)."""
        with self._ref.use() as col:
            return col

    @classmethod
    def open(
        cls, handle: StoreHandle | Any, name: str, *, create: bool = True, lock: WriteLock | None = None
    ) -> ChromaStore:
        """Open collection ``name`` of the store; with ``create``, make it (under the store's write
        ``lock``, so that two processes creating it never race) if it does not exist.

        ``handle`` may be a bare Chroma client (as :func:`make_client` returns): it is then used as is.
        """
        from chromadb.errors import NotFoundError  # chromadb is loaded: the client came from it

        from sieve.retriever.versions import active_version, is_hidden

        validate_collection_name(name)
        if is_hidden(name):
            raise InvalidInput(
                f"Expected a collection name that does not end in --v<number> (Sieve's versions of a collection "
                f"are named so) and is not 'sieve-versions', got {name!r}"
            )
        if not isinstance(handle, StoreHandle):
            handle = StoreHandle.wrapping(handle)
        try:
            try:
                with handle.session() as client:
                    physical = active_version(client, name)
                    client.get_collection(physical, embedding_function=None)
                created = False
            except NotFoundError:
                if not create or physical != name:
                    raise
                created = cls._create(handle, name, lock)
        except NotFoundError as exc:
            with handle.session() as client:
                names = user_collection_names(client)
            raise UnknownCollection(f"Expected an existing collection, got {name!r}; valid: {names}") from exc
        except SieveError:
            raise
        except Exception as exc:
            raise StoreUnavailable(f"Chroma failed to open collection {name!r}: {exc}") from exc
        return cls(handle, physical, created=created, base=name)

    @staticmethod
    def _create(handle: StoreHandle, name: str, lock: WriteLock | None) -> bool:
        """Create the collection under the write lock; False when another writer made it first."""
        from chromadb.errors import NotFoundError

        with lock.hold() if lock is not None else contextlib.nullcontext(), handle.session() as client:
            try:
                client.get_collection(name, embedding_function=None)
                return False
            except NotFoundError:
                handle.mark_written()
                client.create_collection(
                    name,
                    embedding_function=None,
                    configuration={"hnsw": hnsw_configuration(handle.config)},
                    metadata={GENERATION_KEY: "empty"},
                )
                handle.mark_written()
                return True

    # -- generation: marks every write so the BM25 cache can tell whether it is stale --------
    def state(self) -> CollectionState:
        """The collection's current id, generation and recorded embedder, in one round-trip."""
        col = self._ref.fetch()  # CollectionGone when deleted under us
        meta = col.metadata or {}
        embedder = meta.get(EMBEDDER_KEY)
        if embedder:
            self.embedder = str(embedder)
        self.run = str(meta[RUN_KEY]) if meta.get(RUN_KEY) else None
        self._state = CollectionState(str(col.id), str(meta.get(GENERATION_KEY, "")), self.embedder, self.run)
        return self._state

    @property
    def generation(self) -> str:
        return self.state().generation

    def is_current(self) -> bool:
        """Whether the collection under this name is still the one this store uses (not deleted or
        deleted and re-created behind its back, e.g. by ``sieve collections --delete``)."""
        from chromadb.errors import NotFoundError

        from sieve.retriever.versions import active_version

        try:
            with self.handle.session() as client:
                if active_version(client, self.base) != self.name:
                    return False  # the name was switched to another version (sieve adopt)
                current = client.get_collection(self.name, embedding_function=None)
        except NotFoundError:
            return False
        try:
            with self._ref.use() as col:
                return bool(current.id == col.id)
        except CollectionGone:
            return False

    def bump_generation(self) -> str:
        """Call *before* writing and again *after*: a run killed mid-write leaves a generation no
        cache has, and a reader that rebuilt BM25 mid-write holds a generation the finished write replaced.
        """
        gen = uuid.uuid4().hex
        with self._ref.use() as col:
            self.handle.mark_written()  # other processes reopen before they next read or write
            col.modify(metadata=self._metadata(gen))
        return gen

    def _metadata(self, generation: str) -> dict[str, str]:
        # modify() replaces the whole metadata: every write carries the embedder stamp and the run over.
        return {
            GENERATION_KEY: generation,
            **({EMBEDDER_KEY: self.embedder} if self.embedder else {}),
            **({RUN_KEY: self.run} if self.run else {}),
        }

    def record_run(self, run: str | None) -> None:
        """Record (``None``: forget) the retrained run adopted for this collection; a new generation."""
        self.state()  # the latest embedder stamp, so that it is carried over
        self.run = run
        self.bump_generation()

    # -- writes ---------------------------------------------------------------------------------
    def upsert(
        self,
        chunks: Sequence[Chunk],
        embeddings: np.ndarray,
        doc_hashes: Mapping[str, str],
        n_chunks: Mapping[str, int],
    ) -> None:
        """Write chunks and their vectors, in slices of at most Chroma's maximum batch size of records.

        The vectors go to Chroma as one float32 array per slice: Chroma validates and copies an
        array row by row in Rust, where ``tolist()`` first made 384 Python floats per chunk.
        """
        import numpy as np

        self._exact.clear()  # this process's own writes, even between two generations
        vectors = np.ascontiguousarray(embeddings, dtype=np.float32)
        step = self._ref.max_batch_size
        for at in range(0, len(chunks), step):
            part = chunks[at : at + step]
            with self._ref.use() as col:
                col.upsert(
                    ids=[c.chunk_id for c in part],
                    embeddings=vectors[at : at + step],
                    documents=[c.text for c in part],
                    metadatas=[_to_metadata(c, doc_hashes[c.doc_id], n_chunks[c.doc_id]) for c in part],
                )

    def delete_docs(self, doc_ids: Sequence[str]) -> None:
        self._exact.clear()
        for i in range(0, len(doc_ids), 500):
            with self._ref.use() as col:
                col.delete(where={"doc_id": {"$in": list(doc_ids[i : i + 500])}})

    def delete_ids(self, ids: Sequence[str]) -> None:
        self._exact.clear()
        if ids:
            with self._ref.use() as col:
                col.delete(ids=list(ids))

    # -- reads ----------------------------------------------------------------------------------
    def count(self) -> int:
        with self._ref.use() as col:
            return int(col.count())

    def scan(self, *, include_text: bool = True, where: Where | None = None) -> Iterator[tuple[str, str | None, dict]]:
        """Every (id, text, metadata) of the collection, page by page."""
        include = ["metadatas", "documents"] if include_text else ["metadatas"]
        offset = 0
        while True:
            with filter_checked(where), self._ref.use() as col:  # one session per page: the consumer runs between pages
                page = col.get(include=include, limit=PAGE, offset=offset, where=where)
            ids = page["ids"]
            if not ids:
                return
            docs = page.get("documents") or [None] * len(ids)
            for cid, text, meta in zip(ids, docs, page["metadatas"]):
                yield cid, text, meta or {}
            offset += len(ids)

    def doc_states(self) -> dict[str, DocState]:
        hashes: dict[str, str] = {}
        totals: dict[str, int] = {}
        present: dict[str, int] = {}
        sources: dict[str, str] = {}
        for _cid, _text, meta in self.scan(include_text=False):
            d = str(meta.get("doc_id"))
            h = str(meta.get("doc_hash", ""))
            sources.setdefault(d, str(meta.get("source", "")))
            if hashes.setdefault(d, h) != h:
                hashes[d] = "mixed"  # chunks of two versions: an update was interrupted
            totals[d] = int(meta.get("n_chunks", 0))
            present[d] = present.get(d, 0) + 1
        return {d: DocState(hashes[d], totals[d], present[d], sources[d]) for d in hashes}

    def get(self, ids: Sequence[str]) -> list[Chunk]:
        """Chunks by id, in the order asked; unknown ids are left out."""
        if not ids:
            return []
        with self._ref.use() as col:
            page = col.get(ids=list(ids), include=["documents", "metadatas"])
        by_id = {
            cid: chunk_from_record(cid, t, m) for cid, t, m in zip(page["ids"], page["documents"], page["metadatas"])
        }
        return [by_id[i] for i in ids if i in by_id]

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored embeddings by chunk id; unknown ids are left out."""
        import numpy as np

        if not ids:
            return {}
        with self._ref.use() as col:
            page = col.get(ids=list(ids), include=["embeddings"])
        return {cid: np.asarray(vec, dtype=np.float32) for cid, vec in zip(page["ids"], page["embeddings"])}

    def get_where(self, where: Where, limit: int | None = None) -> list[Chunk]:
        """Chunks matching a metadata filter.

        Raises:
            InvalidInput: a filter Chroma cannot run.
        """
        with filter_checked(where), self._ref.use() as col:
            page = col.get(where=where, include=["documents", "metadatas"], limit=limit)
        return [chunk_from_record(cid, t, m) for cid, t, m in zip(page["ids"], page["documents"], page["metadatas"])]

    def first_chunks(self, *, limit: int, offset: int = 0) -> list[tuple[Chunk, int]]:
        """Documents' first chunks (metadata only, no text) with each document's ``n_chunks``, one page."""
        with self._ref.use() as col:
            page = col.get(where={"position": 0}, include=["metadatas"], limit=limit, offset=offset)
        return [
            (chunk_from_record(cid, None, m), int((m or {}).get("n_chunks", 0)))
            for cid, m in zip(page["ids"], page["metadatas"])
        ]

    def ids_where(self, where: Where) -> set[str]:
        with filter_checked(where), self._ref.use() as col:
            return set(col.get(where=where, include=[])["ids"])

    def query_ids(self, embedding: np.ndarray, n: int, where: Where | None = None) -> list[tuple[str, float]]:
        """Ids of the nearest chunks with cosine similarity (1 - Chroma's cosine distance).

        Only ids and distances come back: loading texts and metadata of every candidate costs
        more than the vector search itself (at 100k chunks, 50 candidates: ~35 ms with texts,
        ~9 ms without, plus one ``get`` of the few that are kept). ``n`` may exceed the
        collection size (Chroma then returns what it has); it is not clipped with ``count()``,
        which costs ~9 ms at 100k chunks.
        """
        if n <= 0:
            return []
        if where is None:  # a collection small enough is searched exactly (sieve.retriever.exact)
            # The state this search's refresh() just read (CorpusIndex reads one per search, for BM25):
            # vectors of the same generation as the BM25 it fuses with, and no second round-trip.
            state = self._state or self.state()
            exact = self._exact.current((state.collection_id, state.generation), self.count, self._all_vectors)
            if exact is not None:
                return exact.top(embedding, n)
        beam = max(HNSW_OVERFETCH * n, HNSW_MIN_BEAM)
        with filter_checked(where), self._ref.use() as col:
            res = col.query(query_embeddings=[embedding.tolist()], n_results=beam, where=where, include=["distances"])
        return [(cid, 1.0 - float(d)) for cid, d in zip(res["ids"][0][:n], res["distances"][0][:n])]

    def _all_vectors(self) -> tuple[list[str], np.ndarray]:
        """Every chunk id and vector, in store order (pages of :data:`PAGE`, as :meth:`scan` reads)."""
        import numpy as np

        ids: list[str] = []
        parts: list[np.ndarray] = []
        with self._ref.use() as col:
            while True:
                got = col.get(limit=PAGE, offset=len(ids), include=["embeddings"])
                if not got["ids"]:
                    break
                ids.extend(got["ids"])
                parts.append(np.asarray(got["embeddings"], dtype=np.float32))
        return ids, (np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32))

    def grep(self, pattern: str, limit: int, where: Where | None = None) -> list[Chunk]:
        if len(pattern) < 3:
            # Chroma's $regex needs at least 3 characters (chroma-core/chroma#5118).
            raise InvalidPattern(f"Expected a regex of at least 3 characters, got {pattern!r}")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise InvalidPattern(f"Expected a valid regular expression, got {pattern!r}: {exc}") from exc
        if where is not None:  # bounded only: a refusal below is the pattern's (filters come checked by now)
            validate_where(where)
        try:
            with self._ref.use() as col:
                page = col.get(
                    where_document={"$regex": pattern}, where=where, limit=limit, include=["documents", "metadatas"]
                )
        except chroma_input_errors() as exc:  # e.g. look-around: Chroma uses the Rust regex engine
            raise InvalidPattern(
                f"Expected a regex the Rust engine supports (no look-around), got {pattern!r}: "
                f"{str(exc).splitlines()[-1]}"
            ) from exc
        return [chunk_from_record(cid, t, m) for cid, t, m in zip(page["ids"], page["documents"], page["metadatas"])]


def list_collection_names(client: Any) -> list[str]:
    return sorted(c.name if hasattr(c, "name") else str(c) for c in client.list_collections())


def user_collection_names(client: Any, *, include_eval: bool = False) -> list[str]:
    """The names users type: no version past the first, no registry, no eval cache unless asked.

    A name whose first version was dropped (``sieve collections --drop-old``) is still listed: it
    points at a later one."""
    from sieve.retriever.versions import REGISTRY, is_hidden, split_version

    names = {split_version(n)[0] for n in list_collection_names(client) if n != REGISTRY}
    return sorted(n for n in names if not is_hidden(n) and (include_eval or not is_eval_cache(n)))


def list_collections(
    config: RetrieverConfig,
    client: StoreHandle | Any | None = None,
    *,
    include_eval: bool = False,
) -> dict[str, int]:
    """Collection name -> chunk count; ``sieve eval``'s cached corpora only with ``include_eval``.

    It lives here, not in ``index``, so that listing (``sieve collections``) imports Chroma alone:
    ``index`` brings BM25's scipy, a second or more of start-up on a busy machine.
    """
    from sieve.retriever.handle import open_store

    if client is not None and not isinstance(client, StoreHandle):
        client = StoreHandle.wrapping(client)
    from sieve.retriever.versions import active_version

    with (client or open_store(config)).session() as chroma:
        return {
            name: int(chroma.get_collection(active_version(chroma, name), embedding_function=None).count())
            for name in user_collection_names(chroma, include_eval=include_eval)
        }


def is_eval_cache(name: str) -> bool:
    """Whether ``name`` is one of ``sieve eval``'s cached corpora (not a collection the user made).

    Example:
        >>> is_eval_cache("eval-hotpotqa-fp32-3f2a9c01d4"), is_eval_cache("eval-notes")
        (True, False)
    """
    return bool(_EVAL_CACHE_RE.match(name))


__all__ = [
    "EMBEDDER_KEY",
    "EVAL_CACHE_PREFIX",
    "GENERATION_KEY",
    "RUN_KEY",
    "ChromaStore",
    "CollectionState",
    "DocState",
    "chroma_input_errors",
    "chunk_from_record",
    "filter_checked",
    "is_eval_cache",
    "list_collection_names",
    "list_collections",
    "make_client",
    "user_collection_names",
    "validate_collection_name",
]
