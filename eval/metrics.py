"""Pure metric functions over ranked document ids and gold evidence (reusable by ``train/`` and ``agent/``).

Conventions shared by every function here:

* A returned chunk counts for its ``doc_id``; a ranked list is de-duplicated by doc id (first
  occurrence wins) *before* it is cut at ``k`` (:func:`dedupe`), so ten chunks of one document
  never fill a top-10.
* Relevance is binary: a document is relevant iff it is in ``gold``.
* With no gold, there is nothing to find: recall-type metrics return ``0.0``. The runner never
  scores such tasks (it skips them with a warning), so this only matters to other callers.
* Precision is the precision of the returned *set*: hits divided by how many documents were
  actually returned within ``k`` (``0.0`` when nothing was). Comparisons across systems are fair
  only at equal returned-set size, which the runner ensures by asking every system for ``k`` docs.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Sequence


def dedupe(doc_ids: Iterable[str]) -> list[str]:
    """Doc ids in first-occurrence order.

    Example:
        >>> dedupe(["a", "b", "a", "c", "b"])
        ['a', 'b', 'c']
    """
    return list(dict.fromkeys(doc_ids))


def doc_id_of(chunk_id: str) -> str:
    """The document of a chunk id ``"doc#pos"`` (an id without ``#pos`` is taken as a doc id).

    Example:
        >>> doc_id_of("wiki-paris#3"), doc_id_of("wiki-paris")
        ('wiki-paris', 'wiki-paris')
    """
    doc, sep, pos = chunk_id.rpartition("#")
    return doc if sep and pos.isdigit() else chunk_id


def top_k(returned: Sequence[str], k: int) -> list[str]:
    """The first ``k`` distinct doc ids of ``returned``.

    Example:
        >>> top_k(["a", "a", "b", "c"], 2)
        ['a', 'b']
    """
    if k < 1:
        raise ValueError(f"Expected k >= 1, got {k}")
    return dedupe(returned)[:k]


def hits_at_k(returned: Sequence[str], gold: Collection[str], k: int) -> int:
    """How many distinct gold documents are in the top ``k``."""
    g = set(gold)
    return sum(1 for d in top_k(returned, k) if d in g)


def recall_at_k(returned: Sequence[str], gold: Collection[str], k: int) -> float:
    """Share of gold documents found in the top ``k`` distinct documents.

    Example:
        >>> recall_at_k(["a", "x", "a", "b"], {"a", "b"}, 2)  # top-2 distinct = a, x
        0.5
    """
    g = set(gold)
    return hits_at_k(returned, g, k) / len(g) if g else 0.0


def all_found_at_k(returned: Sequence[str], gold: Collection[str], k: int) -> float:
    """1.0 if every gold document is in the top ``k``, else 0.0.

    Example:
        >>> all_found_at_k(["b", "a"], ["a", "b"], 2), all_found_at_k(["b", "x", "a"], ["a", "b"], 2)
        (1.0, 0.0)
    """
    g = set(gold)
    return float(bool(g) and hits_at_k(returned, g, k) == len(g))


def precision_at_k(returned: Sequence[str], gold: Collection[str], k: int) -> float:
    """Share of the returned documents (at most ``k``) that are gold.

    Example:
        >>> precision_at_k(["a", "x", "y", "z"], {"a"}, 2)
        0.5
        >>> precision_at_k(["a"], {"a"}, 10)  # a set of one, all relevant
        1.0
    """
    got = top_k(returned, k)
    return hits_at_k(got, gold, k) / len(got) if got else 0.0


def fbeta(precision: float, recall: float, beta: float = 1.0) -> float:
    """F-beta of a precision/recall pair; ``beta > 1`` weighs recall higher (Context-1 uses 4, then 2).

    Example:
        >>> round(fbeta(0.5, 1.0), 4), round(fbeta(0.25, 1.0, beta=2.0), 4)
        (0.6667, 0.625)
    """
    if beta <= 0:
        raise ValueError(f"Expected beta > 0, got {beta}")
    b2 = beta * beta
    denom = b2 * precision + recall
    return (1 + b2) * precision * recall / denom if denom > 0 else 0.0


def fbeta_at_k(returned: Sequence[str], gold: Collection[str], k: int, beta: float = 1.0) -> float:
    """F-beta of the top-``k`` returned set against ``gold``."""
    return fbeta(precision_at_k(returned, gold, k), recall_at_k(returned, gold, k), beta)


def reciprocal_rank(returned: Sequence[str], gold: Collection[str], k: int | None = None) -> float:
    """1 / rank of the first gold document among distinct returned docs (within ``k``), else 0.

    Example:
        >>> reciprocal_rank(["x", "x", "y", "a"], {"a"})  # distinct: x, y, a
        0.3333333333333333
    """
    g = set(gold)
    docs = dedupe(returned) if k is None else top_k(returned, k)
    return next((1.0 / r for r, d in enumerate(docs, start=1) if d in g), 0.0)


def ndcg_at_k(returned: Sequence[str], gold: Collection[str], k: int = 10) -> float:
    """Binary-relevance nDCG@k: DCG = sum over gold hits of 1/log2(rank+1), over the ideal DCG.

    Example:
        >>> round(ndcg_at_k(["x", "a"], {"a"}, 10), 4)  # (1/log2 3) / 1
        0.6309
    """
    g = set(gold)
    if not g:
        return 0.0
    dcg = sum(1.0 / math.log2(r + 1) for r, d in enumerate(top_k(returned, k), start=1) if d in g)
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(len(g), k) + 1))
    return dcg / ideal


def trajectory_recall(seen_doc_ids: Iterable[str], gold: Collection[str]) -> float:
    """Share of gold documents the agent was *shown* at any point (even if later pruned or not returned).

    Example:
        >>> trajectory_recall(["a", "x"], ["a", "b"])
        0.5
    """
    g = set(gold)
    return len(g & set(seen_doc_ids)) / len(g) if g else 0.0


def prune_accuracy(pruned_chunk_ids: Sequence[str], gold: Collection[str]) -> float | None:
    """Share of pruned chunks whose document is *not* gold; ``None`` when nothing was pruned (abstain).

    Example:
        >>> prune_accuracy(["x#0", "a#1", "y#0", "z#2"], {"a"})
        0.75
        >>> prune_accuracy([], {"a"}) is None
        True
    """
    if not pruned_chunk_ids:
        return None
    g = set(gold)
    return sum(1 for c in pruned_chunk_ids if doc_id_of(c) not in g) / len(pruned_chunk_ids)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation between order statistics (as numpy's default).

    Example:
        >>> percentile([1, 2, 3, 4], 50), percentile([10, 20, 30, 40, 50], 95)
        (2.5, 48.0)
    """
    if not values:
        raise ValueError("Expected at least one value, got none")
    if not 0 <= q <= 100:
        raise ValueError(f"Expected 0 <= q <= 100, got {q}")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def mean(values: Iterable[float | None]) -> float | None:
    """Mean of the values that are not ``None`` (abstentions); ``None`` if all abstained.

    Example:
        >>> mean([1.0, None, 0.0]), mean([None])
        (0.5, None)
    """
    xs = [v for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


def ranking_metrics(returned: Sequence[str], gold: Collection[str], ks: Sequence[int]) -> dict[str, float]:
    """Every per-task ranking metric, keyed ``recall@5``, ``all_found@5``, ``precision@5``, ``f1@5``, ...

    ``mrr@10`` and ``ndcg@10`` are always included.

    Example:
        >>> m = ranking_metrics(["a", "x", "b"], {"a", "b"}, [2])
        >>> m["recall@2"], m["precision@2"], m["mrr@10"]
        (0.5, 0.5, 1.0)
    """
    out: dict[str, float] = {}
    for k in ks:
        p, r = precision_at_k(returned, gold, k), recall_at_k(returned, gold, k)
        out[f"recall@{k}"] = r
        out[f"all_found@{k}"] = all_found_at_k(returned, gold, k)
        out[f"precision@{k}"] = p
        out[f"f1@{k}"] = fbeta(p, r, 1.0)
    out["mrr@10"] = reciprocal_rank(returned, gold, 10)
    out["ndcg@10"] = ndcg_at_k(returned, gold, 10)
    return out


__all__ = [
    "all_found_at_k", "dedupe", "doc_id_of", "fbeta", "fbeta_at_k", "hits_at_k", "mean", "ndcg_at_k", "percentile",
    "precision_at_k", "prune_accuracy", "ranking_metrics", "recall_at_k", "reciprocal_rank", "top_k",
    "trajectory_recall",
]
