"""Hybrid retrieval: dense and BM25 candidate lists fused by weighted reciprocal rank.

RRF score of a chunk = sum over lists of ``weight / (rrf_k + rank)`` (rank from 1), the fusion
Context-1 and most hybrid systems use. Single-node Chroma has no hybrid query of its own
(its ``Rrf`` search is Chroma Cloud only), so fusion happens here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sieve.core.defaults import DEFAULT_K, MAX_DEPTH
from sieve.retriever.base import ScoredIdsRetriever

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from sieve.retriever.bm25 import BM25Retriever
    from sieve.retriever.dense import DenseRetriever
    from sieve.retriever.types import Hit, Where


def rrf_fuse(
    ranked_lists: Sequence[Sequence[str]], *, k: int = 60, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Fuse ranked id lists by reciprocal rank; ties keep first-seen order.

    Example:
        >>> [i for i, _ in rrf_fuse([["a", "b"], ["b", "c"]], k=60)]
        ['b', 'a', 'c']
    """
    weights = list(weights) if weights is not None else [1.0] * len(ranked_lists)
    if len(weights) != len(ranked_lists):
        raise ValueError(f"Expected one weight per list, got {len(weights)} weights for {len(ranked_lists)} lists")
    scores: dict[str, float] = {}
    for ids, w in zip(ranked_lists, weights):
        for rank, cid in enumerate(ids, start=1):
            scores[cid] = scores.get(cid, 0.0) + w / (k + rank)
    return sorted(scores.items(), key=lambda kv: -kv[1])


class HybridRetriever(ScoredIdsRetriever):
    """Dense top-``candidates`` + BM25 top-``candidates``, fused by RRF, cut at ``k``."""

    mode = "hybrid"

    def __init__(
        self,
        dense: DenseRetriever,
        bm25: BM25Retriever,
        *,
        rrf_k: int = 60,
        candidates: int = 50,
        dense_weight: float = 1.0,
        bm25_weight: float = 1.0,
        max_k: int = MAX_DEPTH,
    ) -> None:
        self.dense = dense
        self.bm25 = bm25
        self.rrf_k = rrf_k
        self.candidates = candidates
        self.weights = (dense_weight, bm25_weight)
        self.max_k = max_k
        self.store = dense.store

    def scored_ids(
        self, query: str, k: int, *, where: Where | None = None, exclude: Collection[str] | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` best fused (chunk id, RRF score) pairs of both candidate lists."""
        depth = max(k, self.candidates)
        exclude = set(exclude or ())
        # Candidates are ids only; the base class fetches texts for the k fused winners alone.
        dense_pairs = self.dense.scored_ids(query, depth, where=where, exclude=exclude)
        bm25_pairs = self.bm25.scored_ids(query, depth, where=where, exclude=exclude)
        return rrf_fuse(
            [[cid for cid, _ in dense_pairs], [cid for cid, _ in bm25_pairs]], k=self.rrf_k, weights=self.weights
        )[:k]

    def batch_search(
        self, queries: Sequence[str], k: int = DEFAULT_K, *, where: Where | None = None
    ) -> list[list[Hit]]:
        self.dense.embedder.embed_queries(list(queries))
        return super().batch_search(queries, k, where=where)


__all__ = ["HybridRetriever", "rrf_fuse"]
