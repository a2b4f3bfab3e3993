"""The floor under every policy: interleave the policy's evidence with the question's own hybrid ranking.

This is the closing ranking's fixed method (``FloorConfig.method="interleave"``); the default ranks
the same two rankings' chunks with the learned ranker instead (:mod:`sieve.agent.ranking.model`).

A user swaps Sieve in for plain RAG on the promise that the agent finds more. A policy can
still do worse than the single search it started from: a heuristic that hops on a single-hop
claim, a small LLM that never calls a tool, a learned policy off its training distribution. So
the harness, not the policy, closes every episode the same way: it runs the one hybrid search
plain RAG would run (:meth:`~sieve.retriever.index.CorpusIndex.search_documents`, exactly the
eval's hybrid baseline) and merges the two rankings per document by their *places*.

Why a rank interleave and not a sum of reciprocal ranks: the returned set must hold up at every
cut-off ``k``, not only on average. Interleaving gives that by construction: at most
``floor(k / 2)`` documents of any top ``k`` come from outside hybrid's ranking (a policy in full
standing gets that half for its own finds), and every document both rankings share frees a slot
for the next one. A reciprocal-rank *sum* lets documents both rankings hold mid-list overtake
hybrid's own top hits; on the declared tuning data it lost recall@5 that the interleave keeps
(``docs/experiments/tuning.md``). A shared document is still evidence twice over, so it may move up
by a bounded share of its place (``corroboration``): the two votes add as reciprocal ranks, but
it cannot jump from mid-list over hybrid's head. With corroboration ``c`` hybrid's top
``floor(k (1 - c) / 2)`` always stay in the top ``k`` (its top ``ceil(k / 2)`` with ``c = 0``).
The policy's standing is its :func:`agreement` with the question's own search: a ranking that shares nothing with it has drifted off the question and adds nothing.
No per-dataset decision is made, every policy (heuristic, learned, LLM, or one returning garbage)
gets the same floor, and the merged score is a real, rank-monotone score. The constants live in
:class:`~sieve.agent.config.FloorConfig`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sieve.agent.trace import Evidence

if TYPE_CHECKING:
    from sieve.agent.config import FloorConfig
    from sieve.retriever.index import CorpusIndex
    from sieve.retriever.types import Hit


@dataclass
class _Doc:
    """One document in the merge: its chunks from either ranking and its ranks there (1-based)."""

    doc_id: str
    chunks: list[Evidence] = field(default_factory=list)
    policy_rank: int | None = None
    hybrid_rank: int | None = None
    place: float = float("inf")


def floor_hits(index: CorpusIndex, question: str, k: int, where: dict[str, Any] | None = None) -> list[Hit]:
    """The question's own hybrid ranking, one chunk per document (what single-shot RAG returns)."""
    return index.search_documents(question, k, mode="hybrid", where=where)


def hit_evidence(hit: Hit) -> Evidence:
    """A hybrid hit as an evidence item (its score is replaced by the merged one)."""
    c = hit.chunk
    return Evidence(
        chunk_id=c.chunk_id,
        doc_id=c.doc_id,
        score=hit.score,
        rank=hit.rank,
        title=c.title,
        source=c.source,
        text=c.text,
        metadata={"tool": "floor", "hybrid_score": round(hit.score, 6)},
    )


def _documents(policy: list[Evidence], hybrid: list[Evidence]) -> list[_Doc]:
    """Documents of both rankings with their ranks; a document's chunks keep the policy's first."""
    docs: dict[str, _Doc] = {}
    for key, ranking in (("policy_rank", policy), ("hybrid_rank", hybrid)):
        rank = 0
        for e in ranking:
            d = docs.setdefault(e.doc_id, _Doc(e.doc_id))
            if getattr(d, key) is None:
                rank += 1
                setattr(d, key, rank)
            if all(c.chunk_id != e.chunk_id for c in d.chunks):
                d.chunks.append(e)
    return list(docs.values())


def agreement(policy: list[Evidence], hybrid: list[Evidence]) -> float:
    """Share of the policy's documents that the hybrid ranking also holds (0 for an empty policy set).

    Every policy starts from the same question: a good one keeps some of what the question's own
    search found (the first hop) and adds to it; a ranking sharing nothing with it has drifted.

    Example:
        >>> ev = lambda d: Evidence(chunk_id=f"{d}#0", doc_id=d, score=0.0, rank=0)
        >>> agreement([ev("a"), ev("b")], [ev("b"), ev("c")])
        0.5
    """
    mine = {e.doc_id for e in policy}
    return len(mine & {e.doc_id for e in hybrid}) / len(mine) if mine else 0.0


def standing(policy: list[Evidence], hybrid: list[Evidence], config: FloorConfig) -> float:
    """How many of hybrid's places one place of the policy's ranking is worth, in [0, 1].

    1 (an equal interleave) once the policy shares ``config.full_agreement`` of its documents
    with the question's own search, falling to 0 (hybrid alone) when it shares none, as the
    ``config.agreement_power`` of the ratio: ``min(1, agreement / full_agreement) ** power``.

    Example:
        >>> from sieve.agent.config import FloorConfig
        >>> ev = lambda d: Evidence(chunk_id=f"{d}#0", doc_id=d, score=0.0, rank=0)
        >>> policy, hybrid = [ev("a"), ev("x"), ev("y"), ev("z")], [ev("a"), ev("b")]
        >>> standing(policy, hybrid, FloorConfig(full_agreement=0.5, agreement_power=1.0))
        0.5
        >>> standing(policy, hybrid, FloorConfig(full_agreement=0.5, agreement_power=2.0))
        0.25
    """
    if not config.agreement:
        return 1.0
    return min(1.0, agreement(policy, hybrid) / config.full_agreement) ** config.agreement_power


def _place(d: _Doc, weight: float, config: FloorConfig) -> float:
    """A document's place: the better of its hybrid rank and its policy rank over ``weight``, corroborated."""
    places = [float(d.hybrid_rank)] if d.hybrid_rank is not None else []
    if d.policy_rank is not None and weight > 0:
        places.append(d.policy_rank / weight)
    place = min(places, default=float("inf"))
    if len(places) == 2 and config.corroboration > 0:
        # Both rankings hold it: their votes add as in reciprocal-rank fusion (1/place = 1/h + 1/p'),
        # but it may move up by at most ``corroboration`` of its better single place, so a pair of
        # mid-list votes cannot overtake hybrid's own top hits.
        place = max(1.0 / sum(1.0 / p for p in places), (1.0 - config.corroboration) * place)
    return place


def fuse_with_floor(policy: list[Evidence], hybrid: list[Evidence], config: FloorConfig, k: int) -> list[Evidence]:
    """The returned set: ``policy`` and ``hybrid`` interleaved per document by place, cut at ``k``.

    A document's place is the better of its hybrid rank and its policy rank divided by the
    policy's :func:`standing` (a ranking that misses it gives no place). A document both rankings
    hold is corroborated: its place is the two places combined as reciprocal ranks add
    (``1 / (1/h + 1/p')``), but no less than ``1 - config.corroboration`` times its better one.
    Documents are returned by place, hybrid's first on a tie, and scored ``1 / (rrf_k + place)``. Each document contributes its
    best chunk (the policy's, else hybrid's) first; further chunks of listed documents fill any
    slots left, scored no higher than the item above them, so scores never rise with rank.

    Example:
        >>> from sieve.agent.config import FloorConfig
        >>> ev = lambda d: Evidence(chunk_id=f"{d}#0", doc_id=d, score=0.0, rank=0)
        >>> [e.doc_id for e in fuse_with_floor([ev("a"), ev("x")], [ev("b"), ev("a"), ev("c")], FloorConfig(), 4)]
        ['b', 'a', 'c', 'x']
    """
    docs = _documents(policy, hybrid)
    weight = standing(policy, hybrid, config)
    for d in docs:
        d.place = _place(d, weight, config)
    # On a tied place hybrid's order decides (the question's own search is the floor), then the policy's.
    inf = float("inf")
    docs = sorted(
        (d for d in docs if d.place < inf), key=lambda d: (d.place, d.hybrid_rank or inf, d.policy_rank or inf)
    )
    firsts = [(d, d.chunks[0]) for d in docs]
    extras = [(d, c) for d in docs for c in d.chunks[1:]]
    out: list[Evidence] = []
    for d, e in (firsts + extras)[:k]:
        score = 1.0 / (config.rrf_k + d.place)
        score = score if not out else min(score, out[-1].score)
        meta = {
            **e.metadata,
            "policy_rank": d.policy_rank,
            "hybrid_rank": d.hybrid_rank,
            "policy_score": e.score if d.policy_rank is not None and e.metadata.get("tool") != "floor" else None,
        }
        out.append(replace(e, score=round(score, 6), rank=len(out) + 1, metadata=meta))
    return out


__all__ = ["agreement", "floor_hits", "fuse_with_floor", "hit_evidence", "standing"]
