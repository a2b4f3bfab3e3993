"""What the closing ranker reads: the pool of the policy's and hybrid's chunks and one feature row per chunk.

An episode ends with two rankings of chunks: the policy's own (what it kept, in its order) and
the question's single hybrid search (what plain RAG returns). Their union is the *pool*
(:func:`pool`); each chunk of it gets one row of :class:`RankingFeatures`, values that mean the
same on any corpus — places in both rankings, whether the two agree (in chunks), the chunk's
cosine with the question and its gap to the best one, how much of the question's rarer words the
chunk holds (:func:`question_cover`), and whether the policy's top chunks match the question
better or worse than hybrid's. The ranker (:mod:`sieve.agent.ranking.model`) turns each row into a
probability of being evidence.

These are not the learned policy's ``CHUNK_FEATURES``
(:mod:`sieve.agent.policies.learned.features`): those describe a chunk *during* the episode, to
choose the next search or read; these describe it once the episode is over, against the
question's own search, to rank what is returned.

To add a feature: add a field to :class:`RankingFeatures` (its place is its column) and its value
in :func:`features`, then refit the ranker (``python -m sieve.train.ranking``): a model file
names its columns and a model fitted on other columns refuses to load.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from sieve.agent.trace import Evidence
from sieve.retriever.bm25 import passage_terms, rarity, tokenize

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from sieve.retriever.types import Chunk


class RankingFeatures(NamedTuple):
    """One pool chunk's features, in the ranker's column order (its fields are :data:`FEATURES`)."""

    hybrid_rr: float  # 1 / (1 + rank) in the question's hybrid search, 0 if absent
    in_hybrid: float
    policy_rr: float  # 1 / (1 + rank) in the policy's returned ranking, 0 if absent
    in_policy: float
    both: float  # in both rankings
    policy_only: float  # found by the episode, not by the question's own search
    agreement: float  # share of the policy's chunks hybrid's ranking also holds (per episode)
    policy_rr_x_agreement: float
    cos: float  # cosine with the question
    cos_gap: float  # cosine minus the best cosine in the pool
    cover: float  # share of the question's words the chunk holds, each weighted by its rarity in the corpus
    cover_gap: float  # cover minus the best cover in the pool
    policy_cos_lead: float  # mean cosine of the policy's top 5 minus that of hybrid's top 5 (per episode)
    policy_cover_lead: float  # the same for cover


FEATURES: tuple[str, ...] = RankingFeatures._fields
# Only what means the same on a corpus of short passages and on one of 500-page filings: places,
# agreement counted in chunks, cosines, shares of the question's words. Per-document counts (how
# many chunks of its document the pool holds) never vary on the passage sets the model is fitted
# on, so a model would extrapolate them blindly on long documents. The two "lead" features say
# whether the policy drifted: on filings its keyphrase searches can rank another company's page
# first, a chunk that holds neither the question's company nor its year and has a far lower
# cosine than hybrid's top chunks.
LEAD_DEPTH = 5


@dataclass
class ClosingPool:
    """What the ranker ranks beside the policy's chunks (built by ``SearchAgent.closing_pool``).

    ``hybrid``: the question's own hybrid ranking; ``cos`` and ``cover``: chunk id -> cosine with the
    question and :func:`question_cover`, for every chunk of the pool; ``chunks``: the pool's chunks by id.
    """

    hybrid: list[Evidence]
    cos: dict[str, float]
    cover: dict[str, float]
    chunks: dict[str, Chunk] = field(default_factory=dict)


def question_weights(question: str, doc_share: Callable[[str], float]) -> dict[str, float]:
    """The question's distinct words (BM25's tokens, stop words dropped) that the corpus holds, each
    weighted ``log(1 + 1/share)`` by the share of chunks holding it; empty when none is held.

    Example:
        >>> question_weights("the of and", lambda t: 0.5)
        {}
        >>> {t: round(w, 2) for t, w in question_weights("Amcor and zzz", lambda t: 0.1 if t == "amcor" else 0.0).items()}
        {'amcor': 2.4}
    """
    return {term: w for term in dict.fromkeys(tokenize(question)) if (w := rarity(doc_share(term))) > 0}


def question_cover(question: str, chunks: Mapping[str, Chunk], doc_share: Callable[[str], float]) -> dict[str, float]:
    """Chunk id -> the share of the question's words the chunk (title included) holds, in [0, 1].

    Each distinct word of the question (BM25's tokens, stop words dropped) weighs ``log(1 + 1/share)``
    where ``share`` is the share of the corpus's chunks that hold it, so the company, the year or the
    name a question turns on counts far more than "revenue" in a filing or "npm" in npm's docs;
    words the corpus lacks weigh nothing. Cosines miss exactly this: a page of another company's
    cash-flow statement is close in meaning to a question about this one's.

    Example:
        >>> from sieve.retriever.types import Chunk
        >>> share = {"amcor": 0.1, "ebitda": 0.5}.get
        >>> chunks = {"a#0": Chunk("a#0", "a", 0, "Adjusted EBITDA", title="Amcor 2023"),
        ...           "b#0": Chunk("b#0", "b", 0, "Adjusted EBITDA", title="Pfizer 2023")}
        >>> {k: round(v, 2) for k, v in question_cover("Amcor's EBITDA?", chunks, lambda t: share(t, 0.0)).items()}
        {'a#0': 1.0, 'b#0': 0.31}
    """
    weights = question_weights(question, doc_share)
    total = sum(weights.values())
    if not total:
        return {cid: 0.0 for cid in chunks}
    out: dict[str, float] = {}
    for cid, chunk in chunks.items():
        words = set(passage_terms(chunk.title, chunk.text, chunk.heading_path))
        out[cid] = sum(w for t, w in weights.items() if t in words) / total
    return out


@dataclass(frozen=True)
class PoolItem:
    """One chunk of the pool with where it came from."""

    evidence: Evidence
    hybrid_rank: int | None  # 0-based
    policy_rank: int | None  # 0-based


def pool(policy: Sequence[Evidence], hybrid: Sequence[Evidence]) -> list[PoolItem]:
    """The union of both rankings, policy order first, each chunk once with its two ranks."""
    h_rank = {e.chunk_id: i for i, e in enumerate(hybrid)}
    p_rank = {e.chunk_id: i for i, e in enumerate(policy)}
    by_id: dict[str, Evidence] = {}
    for e in [*policy, *hybrid]:
        by_id.setdefault(e.chunk_id, e)
    return [PoolItem(e, h_rank.get(cid), p_rank.get(cid)) for cid, e in by_id.items()]


def agreement(policy: Sequence[Evidence], hybrid: Sequence[Evidence]) -> float:
    """Share of the policy's chunks that the hybrid ranking also holds (0 for an empty policy set).

    Counted in chunks, not documents: inside one long filing every chunk shares its document with
    hybrid's hits, so only the chunks themselves say whether the policy kept the question's evidence.

    Example:
        >>> ev = lambda c: Evidence(chunk_id=c, doc_id=c.split("#")[0], score=0.0, rank=0)
        >>> agreement([ev("a#0"), ev("b#0")], [ev("b#0"), ev("c#0")])
        0.5
        >>> agreement([ev("f#1"), ev("f#2")], [ev("f#7"), ev("f#9")])  # one filing, other pages
        0.0
    """
    mine = {e.chunk_id for e in policy}
    return len(mine & {e.chunk_id for e in hybrid}) / len(mine) if mine else 0.0


def _lead(items: Sequence[PoolItem], values: Sequence[float]) -> float:
    """Mean of ``values`` over the policy's top :data:`LEAD_DEPTH` minus that over hybrid's (0 for an empty side)."""
    mine = [v for it, v in zip(items, values) if it.policy_rank is not None and it.policy_rank < LEAD_DEPTH]
    theirs = [v for it, v in zip(items, values) if it.hybrid_rank is not None and it.hybrid_rank < LEAD_DEPTH]
    return (sum(mine) / len(mine) if mine else 0.0) - (sum(theirs) / len(theirs) if theirs else 0.0)


def features(items: Sequence[PoolItem], cos: Sequence[float], agree: float, cover: Sequence[float]) -> np.ndarray:
    """The feature matrix of a pool: one :class:`RankingFeatures` row per item, in ``items`` order.

    ``cos`` and ``cover`` are per item, in ``items`` order.
    """
    n = len(items)
    x = np.zeros((n, len(FEATURES)), dtype=np.float64)
    if not n:
        return x
    if len(cos) != n or len(cover) != n:
        raise ValueError(f"Expected {n} cosines and covers, one per pool item, got {len(cos)} and {len(cover)}")
    best = max(cos)
    best_cover = max(cover)
    cos_lead = _lead(items, cos)
    cover_lead = _lead(items, cover)
    for i, it in enumerate(items):
        h = it.hybrid_rank is not None
        p = it.policy_rank is not None
        h_rr = 1.0 / (1 + it.hybrid_rank) if h else 0.0  # type: ignore[operator]
        p_rr = 1.0 / (1 + it.policy_rank) if p else 0.0  # type: ignore[operator]
        x[i] = RankingFeatures(
            hybrid_rr=h_rr,
            in_hybrid=float(h),
            policy_rr=p_rr,
            in_policy=float(p),
            both=float(h and p),
            policy_only=float(p and not h),
            agreement=agree,
            policy_rr_x_agreement=p_rr * agree,
            cos=cos[i],
            cos_gap=cos[i] - best,
            cover=cover[i],
            cover_gap=cover[i] - best_cover,
            policy_cos_lead=cos_lead,
            policy_cover_lead=cover_lead,
        )
    return x


def pool_features(
    policy: Sequence[Evidence], hybrid: Sequence[Evidence], cos: dict[str, float], cover: dict[str, float]
) -> tuple[list[PoolItem], np.ndarray]:
    """The pool of both rankings and its feature matrix (``cos``, ``cover``: chunk id -> value)."""
    items = pool(policy, hybrid)
    ids = [it.evidence.chunk_id for it in items]
    return items, features(
        items, [cos.get(c, 0.0) for c in ids], agreement(policy, hybrid), [cover.get(c, 0.0) for c in ids]
    )


__all__ = [
    "FEATURES",
    "LEAD_DEPTH",
    "ClosingPool",
    "PoolItem",
    "RankingFeatures",
    "agreement",
    "features",
    "pool",
    "pool_features",
    "question_cover",
    "question_weights",
]
