"""Learned fusion: the returned evidence is every chunk the episode holds, ranked by one small model.

An episode ends with two rankings of chunks: the policy's own (what it kept, in its order) and
the question's single hybrid search (what plain RAG returns). The fixed interleave that used to
merge them (:mod:`sieve.agent.floor`) had to trade one kind of question against another: it gave
hybrid half of every top k, which protected single-hop claims but cost multi-hop questions the
bridge passages the policy had found. The fusion model decides per *chunk* instead, from features
that mean the same on any corpus — places in both rankings, whether the two agree (in chunks), the
chunk's cosine with the question and its gap to the best one, how much of the question's rarer
words the chunk holds, and whether the policy's top chunks match the question better or worse than
hybrid's — and returns the pool by its probability of being evidence.

The model is a logistic regression with an optional small tanh layer (:class:`FusionModel`, a
few hundred weights in a JSON file), fitted
by ``python -m sieve.train.fusion`` on declared training data only (``../shared/train``, SciFact's
training claims, the tuning slices of ``eval/tuning_sets.json``); its score is a calibrated
probability in [0, 1], so the number a user sees means something. Chunks are the unit: several
chunks of one document are returned when they score best; ``group_by_doc`` keeps each document's
best chunk only.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sieve.agent.trace import Evidence
from sieve.core.errors import InvalidInput
from sieve.retriever.bm25 import passage_terms, rarity, tokenize

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from sieve.retriever.types import Chunk

DEFAULT_FUSION = Path(__file__).resolve().parent / "fusion_default.json"

FEATURES: tuple[str, ...] = (
    "hybrid_rr",  # 1 / (1 + rank) in the question's hybrid search, 0 if absent
    "in_hybrid",
    "policy_rr",  # 1 / (1 + rank) in the policy's returned ranking, 0 if absent
    "in_policy",
    "both",  # in both rankings
    "policy_only",  # found by the episode, not by the question's own search
    "agreement",  # share of the policy's chunks hybrid's ranking also holds (per episode)
    "policy_rr_x_agreement",
    "cos",  # cosine with the question
    "cos_gap",  # cosine minus the best cosine in the pool
    "cover",  # share of the question's words the chunk holds, each weighted by its rarity in the corpus
    "cover_gap",  # cover minus the best cover in the pool
    "policy_cos_lead",  # mean cosine of the policy's top 5 minus that of hybrid's top 5 (per episode)
    "policy_cover_lead",  # the same for cover
)
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
    """What the fusion model ranks beside the policy's chunks (built by ``SearchAgent.closing_pool``).

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
    """The feature matrix of a pool (rows in ``items`` order, columns :data:`FEATURES`).

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
        x[i] = (
            h_rr,
            float(h),
            p_rr,
            float(p),
            float(h and p),
            float(p and not h),
            agree,
            p_rr * agree,
            cos[i],
            cos[i] - best,
            cover[i],
            cover[i] - best_cover,
            cos_lead,
            cover_lead,
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


@dataclass
class FusionModel:
    """A logistic regression over :data:`FEATURES` (``p = sigmoid(intercept + coef . x)``), optionally
    after a few small tanh layers (a multi-layer perceptron, for the interactions a linear model
    cannot weigh: trust the policy's places *when* it agrees with hybrid).

    Example:
        >>> m = FusionModel(coef=[0.0] * len(FEATURES), intercept=0.0)
        >>> float(m.predict(np.zeros((1, len(FEATURES))))[0])
        0.5
    """

    coef: list[float]
    intercept: float
    names: tuple[str, ...] = FEATURES
    mean: list[float] | None = None  # feature standardisation fitted with the weights
    scale: list[float] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    # Hidden tanh layers before the output unit (none: a logistic regression): (weights, biases) each,
    # weights shaped (inputs, units); ``coef`` then has one weight per last hidden unit.
    hidden: list[tuple[list[list[float]], list[float]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if tuple(self.names) != FEATURES:
            raise InvalidInput(
                f"Expected fusion features {list(FEATURES)}, got {list(self.names)}; "
                "refit with python -m sieve.train.fusion"
            )
        width = len(self.hidden[-1][1]) if self.hidden else len(FEATURES)
        if len(self.coef) != width:
            raise InvalidInput(f"Expected {width} output weights in the fusion model, got {len(self.coef)}")

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Probability of being evidence, per row."""
        z = x
        if self.mean is not None and self.scale is not None:
            z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        for w, b in self.hidden:
            z = np.tanh(z @ np.asarray(w) + np.asarray(b))
        logits = z @ np.asarray(self.coef) + self.intercept
        return 1.0 / (1.0 + np.exp(-np.clip(logits, -40, 40)))

    @classmethod
    def load(cls, path: str | Path | None = None) -> FusionModel:
        """The model in ``path`` (default: the one shipped with Sieve)."""
        path = Path(path) if path is not None else DEFAULT_FUSION
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise InvalidInput(
                f"Expected a fusion model JSON at {str(path)!r}, got {type(exc).__name__}: {exc}"
            ) from None
        return cls(
            coef=[float(c) for c in raw["coef"]],
            intercept=float(raw["intercept"]),
            names=tuple(raw.get("names", FEATURES)),
            mean=raw.get("mean"),
            scale=raw.get("scale"),
            meta=raw.get("meta", {}),
            hidden=[(h["w"], h["b"]) for h in raw.get("hidden", [])],
        )

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        body = {
            "names": list(self.names),
            "coef": self.coef,
            "intercept": self.intercept,
            "mean": self.mean,
            "scale": self.scale,
            "hidden": [{"w": w, "b": b} for w, b in self.hidden],
            "meta": self.meta,
        }
        path.write_text(json.dumps(body), encoding="utf-8")
        return path


def fuse(
    policy: Sequence[Evidence],
    closing: ClosingPool,
    model: FusionModel,
    k: int,
    *,
    group_by_doc: bool = False,
    doc_decay: float = 1.0,
) -> list[Evidence]:
    """The returned set: the pool of the policy's and ``closing.hybrid``'s chunks ranked by ``model``,
    cut at ``k`` chunks.

    With ``group_by_doc`` each document contributes its best chunk only (``k`` documents).
    ``doc_decay`` < 1 orders by :func:`decayed_order`. Scores are the model's probabilities, made
    non-increasing down the list.
    """
    cos = closing.cos
    items, x = pool_features(policy, closing.hybrid, cos, closing.cover)
    if not items:
        return []
    p = model.predict(x)
    # Ties (rare with a continuous cosine) keep hybrid's order, then the policy's.
    order = sorted(
        range(len(items)),
        key=lambda i: (
            -p[i],
            items[i].hybrid_rank if items[i].hybrid_rank is not None else math.inf,
            items[i].policy_rank or 0,
        ),
    )
    if doc_decay < 1 and not group_by_doc:  # grouped, each document's best chunk alone counts anyway
        order = decayed_order(order, [float(v) for v in p], [it.evidence.doc_id for it in items], doc_decay, k)
    out: list[Evidence] = []
    docs: set[str] = set()
    for i in order:
        it = items[i]
        e = it.evidence
        if group_by_doc and e.doc_id in docs:
            continue
        docs.add(e.doc_id)
        score = float(p[i]) if not out else min(float(p[i]), out[-1].score)
        meta = {
            **e.metadata,
            "policy_rank": None if it.policy_rank is None else it.policy_rank + 1,
            "hybrid_rank": None if it.hybrid_rank is None else it.hybrid_rank + 1,
            "cos": round(cos.get(e.chunk_id, 0.0), 4),
            "cover": round(closing.cover.get(e.chunk_id, 0.0), 4),
        }
        out.append(replace(e, score=round(score, 6), rank=len(out) + 1, metadata=meta))
        if len(out) >= k:
            break
    return out


def decayed_order(order: Sequence[int], p: Sequence[float], doc_ids: Sequence[str], decay: float, k: int) -> list[int]:
    """The first ``k`` of ``order`` re-drawn greedily, each chunk's ``p`` counted ``decay ** n`` where ``n`` is
    the number of chunks of its document already placed (ties keep ``order``), then the rest in ``order``.

    Why: on long documents the fusion model's best chunks are often all of one filing, and a question
    naming a company and a year can be answered by another of its filings; a slight diminishing return
    per document keeps a second document's best chunk in reach of the top 5 without giving up the
    several chunks of one document that a long answer needs (decay 1: pure ``p`` order).

    Example:
        >>> decayed_order([0, 1, 2], [0.9, 0.8, 0.75], ["a", "a", "b"], 0.9, 3)
        [0, 2, 1]
        >>> decayed_order([0, 1, 2], [0.9, 0.8, 0.6], ["a", "a", "b"], 0.9, 3)
        [0, 1, 2]
    """
    left = list(order)
    placed: dict[str, int] = {}
    out: list[int] = []
    while left and len(out) < k:
        best = max(range(len(left)), key=lambda j: (p[left[j]] * decay ** placed.get(doc_ids[left[j]], 0), -j))
        i = left.pop(best)
        out.append(i)
        placed[doc_ids[i]] = placed.get(doc_ids[i], 0) + 1
    return out + left


__all__ = [
    "DEFAULT_FUSION",
    "FEATURES",
    "LEAD_DEPTH",
    "ClosingPool",
    "FusionModel",
    "PoolItem",
    "agreement",
    "decayed_order",
    "features",
    "fuse",
    "pool",
    "pool_features",
    "question_cover",
    "question_weights",
]
