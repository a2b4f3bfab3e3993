"""The floor under every policy: fuse the policy's evidence with the question's own hybrid ranking.

A user swaps Sieve in for plain RAG on the promise that the agent finds more. A policy can
still do worse than the single search it started from: a heuristic that hops on a single-hop
claim, a small LLM that never calls a tool, a learned policy off its training distribution. So
the harness, not the policy, closes every episode the same way: it runs the one hybrid search
plain RAG would run (:meth:`~sieve.retriever.index.CorpusIndex.search_documents`, exactly the
eval's hybrid baseline) and fuses the two rankings by weighted reciprocal rank, per document.

Why rank fusion and not a switch: a policy's ranking and hybrid's agree on most documents of
an easy question, and those rise to the top; a document only the policy found (the second hop
of a multi-hop question) still enters at the place its weight earns. No per-dataset decision
is made, every policy (heuristic, learned, LLM, or one returning garbage) gets the same floor,
and the fused score is a real, rank-monotone score. The constants live in
:class:`~sieve.agent.config.FloorConfig`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sieve.agent.trace import Evidence

if TYPE_CHECKING:
    from sieve.agent.config import FloorConfig
    from sieve.retriever.index import CorpusIndex
    from sieve.retriever.types import Hit


@dataclass
class _Doc:
    """One document in the fusion: its chunks from either ranking and its ranks there (1-based)."""

    doc_id: str
    chunks: list[Evidence] = field(default_factory=list)
    policy_rank: int | None = None
    hybrid_rank: int | None = None
    score: float = 0.0


def floor_hits(index: CorpusIndex, question: str, k: int, where: dict[str, Any] | None = None) -> list[Hit]:
    """The question's own hybrid ranking, one chunk per document (what single-shot RAG returns)."""
    return index.search_documents(question, k, mode="hybrid", where=where)


def hit_evidence(hit: Hit) -> Evidence:
    """A hybrid hit as an evidence item (its score is replaced by the fused one)."""
    c = hit.chunk
    return Evidence(chunk_id=c.chunk_id, doc_id=c.doc_id, score=hit.score, rank=hit.rank, title=c.title,
                    source=c.source, text=c.text, metadata={"tool": "floor", "hybrid_score": round(hit.score, 6)})


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


def fuse_with_floor(policy: list[Evidence], hybrid: list[Evidence], config: FloorConfig, k: int) -> list[Evidence]:
    """The returned set: ``policy`` and ``hybrid`` fused per document by weighted reciprocal rank, cut at ``k``.

    A document's score is ``w / (rrf_k + its policy rank) + hybrid_weight / (rrf_k + its hybrid
    rank)`` (a ranking that misses it adds 0), where ``w`` is ``policy_weight``, times the
    :func:`agreement` of the two rankings when ``config.agreement`` is on. Each document contributes its best chunk
    (the policy's, else hybrid's) first; further chunks of listed documents fill any slots left,
    scored no higher than the item above them, so scores never rise with rank.

    Example:
        >>> from sieve.agent.config import FloorConfig
        >>> ev = lambda d: Evidence(chunk_id=f"{d}#0", doc_id=d, score=0.0, rank=0)
        >>> [e.doc_id for e in fuse_with_floor([ev("a"), ev("b")], [ev("b"), ev("c")], FloorConfig(), 3)]
        ['b', 'c', 'a']
    """
    docs = _documents(policy, hybrid)
    w_policy = config.policy_weight * (agreement(policy, hybrid) if config.agreement else 1.0)
    for d in docs:
        d.score = sum(w / (config.rrf_k + r) for w, r in ((w_policy, d.policy_rank),
                                                          (config.hybrid_weight, d.hybrid_rank)) if r is not None)
    # A stable sort: ties keep the policy's order, then hybrid's.
    docs.sort(key=lambda d: -d.score)
    firsts = [(d, d.chunks[0]) for d in docs]
    extras = [(d, c) for d in docs for c in d.chunks[1:]]
    out: list[Evidence] = []
    for d, e in (firsts + extras)[:k]:
        score = d.score if not out else min(d.score, out[-1].score)
        meta = {**e.metadata, "policy_rank": d.policy_rank, "hybrid_rank": d.hybrid_rank,
                "policy_score": e.score if d.policy_rank is not None and e.metadata.get("tool") != "floor" else None}
        out.append(Evidence(chunk_id=e.chunk_id, doc_id=e.doc_id, score=round(score, 6), rank=len(out) + 1,
                            title=e.title, source=e.source, text=e.text, justification=e.justification, metadata=meta))
    return out


__all__ = ["agreement", "floor_hits", "fuse_with_floor", "hit_evidence"]
