"""The ranker: a small learned model that returns the pool of an episode's chunks by its probability of being evidence.

The fixed interleave that used to merge the policy's and hybrid's rankings
(:mod:`sieve.agent.ranking.floor`) had to trade one kind of question against another: it gave
hybrid half of every top k, which protected single-hop claims but cost multi-hop questions the
bridge passages the policy had found. The ranker decides per *chunk* instead, from the features of
:mod:`sieve.agent.ranking.features`, and :func:`fuse` returns the pool by its probability of being
evidence (``FloorConfig.method="fusion"``, the default; hence "fusion" in the user's settings).

The model is a logistic regression with an optional small tanh layer (:class:`Ranker`, a few
hundred weights in a JSON file, :data:`DEFAULT_RANKER` shipped), fitted by
``python -m sieve.train.ranking`` on declared training data only (``../shared/train``, SciFact's
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

from sieve.agent.ranking.features import FEATURES, pool_features
from sieve.agent.ranking.speakers import speaker_weights
from sieve.core.errors import InvalidInput

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sieve.agent.ranking.features import ClosingPool, PoolItem
    from sieve.agent.trace import Evidence

DEFAULT_RANKER = Path(__file__).resolve().parent / "ranker_default.json"


@dataclass
class Ranker:
    """A logistic regression over :data:`FEATURES` (``p = sigmoid(intercept + coef . x)``), optionally
    after a few small tanh layers (a multi-layer perceptron, for the interactions a linear model
    cannot weigh: trust the policy's places *when* it agrees with hybrid). The user's settings call
    it the fusion model (``floor.fusion_path``, ``--fusion-path``).

    Example:
        >>> m = Ranker(coef=[0.0] * len(FEATURES), intercept=0.0)
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
                "refit with python -m sieve.train.ranking"
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
    def load(cls, path: str | Path | None = None) -> Ranker:
        """The model in ``path`` (default: the one shipped with Sieve)."""
        path = Path(path) if path is not None else DEFAULT_RANKER
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
    model: Ranker,
    k: int,
    *,
    group_by_doc: bool = False,
    doc_decay: float = 1.0,
    head_cap: int = 0,
    speaker_discount: float = 0.0,
    question: str = "",
) -> list[Evidence]:
    """The returned set: the pool of the policy's and ``closing.hybrid``'s chunks ranked by ``model``, cut at ``k``.

    ``speaker_discount`` > 0 (with the ``question``) scales each probability by :func:`speaker_weights`
    (in a conversation, turns of speakers the question does not name count less). With ``group_by_doc``
    each document's best chunk only counts. ``doc_decay`` < 1 orders by :func:`decayed_order`; ``head_cap``
    > 0 then applies :func:`capped_head` (hybrid's first ``head_cap`` chunks). Scores never rise down the list.
    """
    items, x = pool_features(policy, closing.hybrid, closing.cos, closing.cover)
    if not items:
        return []
    factors = _speaker_factors(question, items, speaker_discount)
    p = model.predict(x) * factors
    # Ties (rare with a continuous cosine) keep hybrid's order, then the policy's.
    order = sorted(
        range(len(items)),
        key=lambda i: (
            -p[i],
            items[i].hybrid_rank if items[i].hybrid_rank is not None else math.inf,
            items[i].policy_rank or 0,
        ),
    )
    doc_ids = [it.evidence.doc_id for it in items]
    if doc_decay < 1 and not group_by_doc:  # grouped, each document's best chunk alone counts anyway
        order = decayed_order(order, [float(v) for v in p], doc_ids, doc_decay, k)
    if head_cap and not group_by_doc:
        order = capped_head(order, doc_ids, [e.doc_id for e in closing.hybrid[:head_cap]], head_cap)
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
            "cos": round(closing.cos.get(e.chunk_id, 0.0), 4),
            "cover": round(closing.cover.get(e.chunk_id, 0.0), 4),
            **({"speaker_weight": float(factors[i])} if factors[i] < 1 else {}),  # why its score is low
        }
        out.append(replace(e, score=round(score, 6), rank=len(out) + 1, metadata=meta))
        if len(out) >= k:
            break
    return out


def _speaker_factors(question: str, items: Sequence[PoolItem], discount: float) -> np.ndarray:
    """Per pool item, :func:`speaker_weights`'s factor (all ones when off or when the question names no speaker)."""
    return np.asarray(speaker_weights(question, [it.evidence.text for it in items], discount), dtype=float)


def decayed_order(order: Sequence[int], p: Sequence[float], doc_ids: Sequence[str], decay: float, k: int) -> list[int]:
    """The first ``k`` of ``order`` re-drawn greedily, each chunk's ``p`` counted ``decay ** n`` where ``n`` is
    the number of chunks of its document already placed (ties keep ``order``), then the rest in ``order``.

    Why: on long documents the ranker's best chunks are often all of one filing, and a question
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


def capped_head(
    order: Sequence[int], doc_ids: Sequence[str], hybrid_head: Sequence[str], depth: int, floor: int = 2
) -> list[int]:
    """``order`` with its first ``depth`` places holding no more chunks of one document than
    ``hybrid_head`` (hybrid's own first ``depth`` documents, one entry a chunk) holds of it, and at least
    ``floor``; only the first ``2 * depth`` places are reordered, so what the first ``2 * depth`` hold never
    changes. A chunk over its document's share waits, in order, right after the chunks within its share
    (so when too few other chunks are within reach, over-share chunks still fill the head, in order).

    Why: on documentation the policy's searches keep finding further sections of the long reference
    pages the question's words are spread over (a CLI page, a settings page), and the ranker, fitted
    where the policy's extra finds are new documents (a multi-hop question's second page), lets those
    siblings push the page hybrid ranked 3rd-5th out of the top 5. How many chunks of one page the
    question's own search puts in its top places says how concentrated the answer is: a filing that
    holds the whole answer keeps its places, a page the policy alone piled on does not. The reach
    keeps a chunk the ranker placed far down from being pulled up only to make room.

    Example:
        >>> capped_head([0, 1, 2, 3, 4, 5], ["a", "a", "a", "b", "c", "d"], ["a", "b", "c", "d", "e"], 5)
        [0, 1, 3, 4, 5, 2]
        >>> capped_head([0, 1, 2, 3], ["a", "a", "a", "b"], ["a", "a", "a", "b"], 5)
        [0, 1, 2, 3]
    """
    share: dict[str, int] = {}
    for d in hybrid_head:
        share[d] = share.get(d, 0) + 1
    reach = 2 * depth
    head: list[int] = []
    over: list[int] = []
    placed: dict[str, int] = {}
    for i in order[:reach]:
        d = doc_ids[i]
        if len(head) < depth and placed.get(d, 0) < max(floor, share.get(d, 0)):
            head.append(i)
            placed[d] = placed.get(d, 0) + 1
        else:
            over.append(i)
    return head + over + list(order[reach:])


__all__ = ["DEFAULT_RANKER", "Ranker", "capped_head", "decayed_order", "fuse"]
