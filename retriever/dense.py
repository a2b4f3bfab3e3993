"""Dense retrieval: sentence-transformers query embedding against Chroma's HNSW index."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sieve.retriever.base import validate_k, validate_query
from sieve.retriever.types import Hit

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from sieve.retriever.embeddings import Embedder
    from sieve.retriever.store import ChromaStore
    from sieve.retriever.types import Where


class DenseRetriever:
    """Cosine-similarity search; scores are similarities in [-1, 1]."""

    def __init__(self, store: ChromaStore, embedder: Embedder, *, max_k: int = 200) -> None:
        self.store = store
        self.embedder = embedder
        self.max_k = max_k

    def scored_ids(
        self, query: str, k: int, *, where: Where | None = None, exclude: Collection[str] | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` nearest (chunk id, similarity) pairs, ids in ``exclude`` left out."""
        exclude = exclude or ()
        # Chroma cannot exclude ids in a vector query; over-fetch by the exclusion size instead.
        pairs = self.store.query_ids(self.embedder.embed_query(query), k + len(exclude), where=where)
        return [(cid, s) for cid, s in pairs if cid not in exclude][:k]

    def search(
        self, query: str, k: int = 10, *, where: Where | None = None, exclude: Collection[str] | None = None
    ) -> list[Hit]:
        validate_query(query)
        validate_k(k, self.max_k)
        pairs = self.scored_ids(query, k, where=where, exclude=exclude)
        by_id = {c.chunk_id: c for c in self.store.get([cid for cid, _ in pairs])}
        kept = [(by_id[cid], s) for cid, s in pairs if cid in by_id]
        return [Hit(chunk=c, score=s, rank=i + 1, mode="dense") for i, (c, s) in enumerate(kept)]

    def batch_search(self, queries: Sequence[str], k: int = 10, *, where: Where | None = None) -> list[list[Hit]]:
        self.embedder.embed_queries(list(queries))  # one batched forward pass fills the query cache
        return [self.search(q, k, where=where) for q in queries]


__all__ = ["DenseRetriever"]
