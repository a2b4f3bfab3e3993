"""Pure metric functions over ranked document ids and gold evidence (reusable by ``train/`` and ``agent/``).

Conventions shared by every function here:

* A returned chunk counts for its ``doc_id``; a ranked list is de-duplicated by doc id (first
  occurrence wins) *before* it is cut at ``k`` (:func:`dedupe`), so ten chunks of one document
  never fill a top-10.
* Relevance is binary: a document is relevant iff it is in ``gold``.
* With no gold, there is nothing to find: recall-type metrics return ``0.0``. The runner never
  scores such tasks (it skips them with a warning), so this only matters to other callers.
* Where tasks carry ``gold_spans`` (character ranges inside long documents), chunks are the unit:
  the span metrics cut the returned *chunk* list at ``k`` with no de-duplication
  (:func:`span_metrics`).
* Precision is the precision of the returned *set*: hits divided by how many documents were
  actually returned within ``k`` (``0.0`` when nothing was). Comparisons across systems are fair
  only at equal returned-set size, which the runner ensures by asking every system for ``k`` docs.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING
from sieve.core.defaults import DEFAULT_K

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


def ndcg_at_k(returned: Sequence[str], gold: Collection[str], k: int = DEFAULT_K) -> float:
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


Span = tuple[str, int, int]
"""A character range of a document: ``(doc_id, start, end)``, end exclusive (``gold_spans``, returned chunks)."""


def overlap(a0: int, a1: int, b0: int, b1: int) -> int:
    """Characters shared by the ranges ``[a0, a1)`` and ``[b0, b1)``.

    Example:
        >>> overlap(0, 10, 5, 20), overlap(0, 5, 5, 9)
        (5, 0)
    """
    return max(0, min(a1, b1) - max(a0, b0))


def span_found(span: Span, returned: Sequence[Span]) -> bool:
    """Whether a returned chunk covers the gold ``span`` (``../shared/eval/README-spans.md``'s rule).

    Found when some returned chunk of the same document overlaps the span by at least half of the
    shorter of the two (chunk or span), so the rule holds for chunks smaller or larger than a span.

    Example:
        >>> span_found(("d", 100, 200), [("d", 150, 900)])  # 50 chars = half of the 100-char span
        True
        >>> span_found(("d", 100, 200), [("d", 160, 900), ("e", 100, 200)])
        False
    """
    doc, s0, s1 = span
    for d, c0, c1 in returned:
        if d == doc:
            ov = overlap(c0, c1, s0, s1)
            if ov > 0 and ov >= 0.5 * min(c1 - c0, s1 - s0):
                return True
    return False


def span_recall_at_k(returned: Sequence[Span], spans: Sequence[Span], k: int) -> float:
    """Share of gold spans found by the first ``k`` returned chunks (no de-duplication: chunks are the unit).

    Example:
        >>> span_recall_at_k([("d", 0, 100), ("d", 100, 200)], [("d", 120, 180), ("d", 500, 600)], 2)
        0.5
    """
    if k < 1:
        raise ValueError(f"Expected k >= 1, got {k}")
    got = list(returned[:k])
    return sum(span_found(s, got) for s in spans) / len(spans) if spans else 0.0


def all_spans_at_k(returned: Sequence[Span], spans: Sequence[Span], k: int) -> float:
    """1.0 if the first ``k`` returned chunks find every gold span, else 0.0."""
    return float(bool(spans) and span_recall_at_k(returned, spans, k) == 1.0)


def returned_chars_at_k(returned: Sequence[Span], k: int) -> int:
    """Characters of the first ``k`` returned chunks (what a reader is handed).

    Example:
        >>> returned_chars_at_k([("d", 0, 100), ("e", 10, 30)], 5)
        120
    """
    return sum(max(0, e - s) for _, s, e in returned[:k])


def char_precision_at_k(returned: Sequence[Span], spans: Sequence[Span], k: int) -> float:
    """Share of the returned characters (first ``k`` chunks) that lie inside a gold span.

    Returning whole filings or huge chunks does not look like a win: their characters mostly
    fall outside the evidence. ``0.0`` when nothing was returned.

    Example:
        >>> char_precision_at_k([("d", 0, 100), ("e", 0, 100)], [("d", 50, 300)], 2)
        0.25
    """
    got = list(returned[:k])
    total = returned_chars_at_k(got, k)
    if not total:
        return 0.0
    inside = 0
    for d, c0, c1 in got:
        # Gold spans of one document may touch: merge them so no character is counted twice.
        ranges = sorted((s0, s1) for doc, s0, s1 in spans if doc == d)
        merged: list[list[int]] = []
        for s0, s1 in ranges:
            if merged and s0 <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], s1)
            else:
                merged.append([s0, s1])
        inside += sum(overlap(c0, c1, s0, s1) for s0, s1 in merged)
    return inside / total


def span_metrics(returned: Sequence[Span], spans: Sequence[Span], ks: Sequence[int]) -> dict[str, float]:
    """Every per-task span metric, keyed ``span_recall@5``, ``all_spans@5``, ``char_precision@5``, ``returned_chars@5``.

    Example:
        >>> m = span_metrics([("d", 0, 100)], [("d", 20, 80)], [5])
        >>> m["span_recall@5"], m["char_precision@5"], m["returned_chars@5"]
        (1.0, 0.6, 100.0)
    """
    out: dict[str, float] = {}
    for k in ks:
        out[f"span_recall@{k}"] = span_recall_at_k(returned, spans, k)
        out[f"all_spans@{k}"] = all_spans_at_k(returned, spans, k)
        out[f"char_precision@{k}"] = char_precision_at_k(returned, spans, k)
        out[f"returned_chars@{k}"] = float(returned_chars_at_k(returned, k))
    return out


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
    "Span",
    "all_found_at_k",
    "all_spans_at_k",
    "char_precision_at_k",
    "dedupe",
    "doc_id_of",
    "fbeta",
    "fbeta_at_k",
    "hits_at_k",
    "mean",
    "ndcg_at_k",
    "overlap",
    "percentile",
    "precision_at_k",
    "prune_accuracy",
    "ranking_metrics",
    "recall_at_k",
    "reciprocal_rank",
    "returned_chars_at_k",
    "span_found",
    "span_metrics",
    "span_recall_at_k",
    "top_k",
    "trajectory_recall",
]
