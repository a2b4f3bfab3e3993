"""The store interface: what :class:`~sieve.retriever.index.CorpusIndex` asks of a vector store.

:class:`~sieve.retriever.store.ChromaStore` is the one implementation; the index (the reading side), its
writer, its BM25 cache and the retrievers depend on this interface only, so no code outside ``retriever/``
needs to know Chroma (its errors become Sieve's inside the store: a collection deleted while in use
raises :class:`~sieve.core.errors.CollectionGone`, a malformed filter :class:`~sieve.core.errors.InvalidInput`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    import numpy as np

    from sieve.retriever.handle import StoreHandle
    from sieve.retriever.store import CollectionState, DocState
    from sieve.retriever.types import Chunk, Where


class Store(Protocol):
    """One collection of chunks with their vectors, texts and metadata."""

    name: str  # the Chroma collection: a version of ``base`` (sieve.retriever.versions)
    base: str  # the collection's name as users type it
    handle: StoreHandle
    embedder: str | None  # the EmbedderIdentity JSON stamped on the collection
    run: str | None  # the retrained run adopted for the collection (sieve adopt), if any
    created: bool  # made by this process and never written yet (a failed first run removes it)

    # state: every write is bracketed by generation bumps, so caches can tell they are stale
    def state(self) -> CollectionState: ...
    @property
    def generation(self) -> str: ...
    def bump_generation(self) -> str: ...
    def record_run(self, run: str | None) -> None: ...
    def is_current(self) -> bool: ...

    # writes
    def upsert(
        self,
        chunks: Sequence[Chunk],
        embeddings: np.ndarray,
        doc_hashes: Mapping[str, str],
        n_chunks: Mapping[str, int],
    ) -> None: ...
    def delete_docs(self, doc_ids: Sequence[str]) -> None: ...
    def delete_ids(self, ids: Sequence[str]) -> None: ...

    # reads
    def count(self) -> int: ...
    def scan(
        self, *, include_text: bool = True, where: Where | None = None
    ) -> Iterator[tuple[str, str | None, dict[str, Any]]]: ...
    def doc_states(self) -> dict[str, DocState]: ...
    def get(self, ids: Sequence[str]) -> list[Chunk]: ...
    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]: ...
    def get_where(self, where: Where, limit: int | None = None) -> list[Chunk]: ...
    def first_chunks(self, *, limit: int, offset: int = 0) -> list[tuple[Chunk, int]]: ...
    def ids_where(self, where: Where) -> set[str]: ...
    def query_ids(self, embedding: np.ndarray, n: int, where: Where | None = None) -> list[tuple[str, float]]: ...
    def grep(self, pattern: str, limit: int, where: Where | None = None) -> list[Chunk]: ...


__all__ = ["Store"]
