"""Dense retrieval: sentence-transformers query embedding against Chroma's HNSW index."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sieve.core.defaults import DEFAULT_K, MAX_DEPTH
from sieve.retriever.base import ScoredIdsRetriever

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from sieve.retriever.embeddings import Embedder
    from sieve.retriever.store_api import Store
    from sieve.retriever.types import Hit, Where


class DenseRetriever(ScoredIdsRetriever):
    """Cosine-similarity search; scores are similarities in [-1, 1]."""

    mode = "dense"

    def __init__(self, store: Store, embedder: Embedder, *, max_k: int = MAX_DEPTH) -> None:
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

    def batch_search(
        self, queries: Sequence[str], k: int = DEFAULT_K, *, where: Where | None = None
    ) -> list[list[Hit]]:
        self.embedder.embed_queries(list(queries))  # one batched forward pass fills the query cache
        return super().batch_search(queries, k, where=where)


__all__ = ["DenseRetriever"]
