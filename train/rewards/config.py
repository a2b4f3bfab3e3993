"""Every reward weight in one dataclass, plus the schedule that anneals them over training.

Two families of terms:

* the **Context-1 reward** (Chroma's published formula), whose weights stay fixed except β,
  which steps from ``beta_start`` (4: recall-heavy, so early policies are paid for finding gold
  at all) towards ``beta_end`` (2) between epochs;
* **auxiliary penalties** of our own (single-search collapse, malformed calls, pruning gold,
  repeated queries). They shape early behaviour and are annealed from full strength towards
  ``aux_final_scale`` (default 0) late in training, so the converged objective is the outcome
  reward alone and the policy cannot learn to game the shaping terms.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from sieve.core.errors import InvalidInput

AnnealKind = Literal["constant", "linear", "cosine"]
GoldLevel = Literal["doc", "chunk"]


@dataclass(frozen=True)
class RewardWeights:
    """The weights in force at one point of training (what :meth:`RewardConfig.weights_at` returns)."""

    beta: float
    f_beta: float
    traj_recall: float
    answer: float
    epsilon: float
    prune_step: float
    prune_cap: float
    prune_streak: int
    turn_start: int
    turn_end: int
    turn_max: float
    collapse: float
    malformed: float
    malformed_cap: float
    gold_prune: float
    gold_prune_cap: float
    repeat_query: float
    repeat_query_cap: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class RewardConfig:
    """Weights of the episode reward and how they change with training progress (0 → 1)."""

    level: GoldLevel = field(
        default="doc",
        metadata={
            "help": "Score F-beta / recall over documents ('doc', gold_ids) or chunks ('chunk', meta.gold_chunk_ids)."
        },
    )
    # -- Context-1 reward -------------------------------------------------------------------------
    beta_start: float = field(default=4.0, metadata={"help": "F-beta β at the start of training (recall-heavy)."})
    beta_end: float = field(default=2.0, metadata={"help": "F-beta β in the last epoch."})
    beta_epochs: int = field(
        default=5,
        metadata={"help": "Number of epochs β is stepped over (β is constant within an epoch, as in Context-1)."},
    )
    w_f_beta: float = field(default=0.7, metadata={"help": "Weight of F-beta of the returned set."})
    w_traj_recall: float = field(
        default=0.3, metadata={"help": "Weight of trajectory recall (gold ever seen, even if pruned later)."}
    )
    w_answer: float = field(default=1.0, metadata={"help": "Bonus when a returned chunk holds the answer."})
    epsilon: float = field(default=0.01, metadata={"help": "Floor of the clamped Context-1 reward."})
    prune_step: float = field(default=0.1, metadata={"help": "Penalty per prune call beyond the allowed streak."})
    prune_cap: float = field(default=0.5, metadata={"help": "Cap of the prune-streak penalty."})
    prune_streak: int = field(default=3, metadata={"help": "Consecutive prune calls allowed before the penalty."})
    turn_start: int = field(default=64, metadata={"help": "Turn count where the turn penalty starts (0 there)."})
    turn_end: int = field(default=128, metadata={"help": "Turn count where the turn penalty reaches turn_max."})
    turn_max: float = field(default=0.5, metadata={"help": "Maximum turn penalty."})
    # -- auxiliary penalties (annealed) -------------------------------------------------------------
    collapse: float = field(
        default=0.5,
        metadata={"help": "Penalty for stopping after <= collapse_max_searches searches while gold is still unseen."},
    )
    collapse_max_searches: int = field(
        default=1, metadata={"help": "Search count at or below which stopping is collapse."}
    )
    malformed: float = field(default=0.1, metadata={"help": "Penalty per malformed tool call."})
    malformed_cap: float = field(default=0.5, metadata={"help": "Cap of the malformed-call penalty."})
    gold_prune: float = field(default=0.2, metadata={"help": "Penalty per gold chunk the agent pruned."})
    gold_prune_cap: float = field(default=0.6, metadata={"help": "Cap of the gold-prune penalty."})
    repeat_query: float = field(default=0.1, metadata={"help": "Penalty per repeated identical search/grep query."})
    repeat_query_cap: float = field(default=0.5, metadata={"help": "Cap of the repeated-query penalty."})
    aux_anneal: AnnealKind = field(
        default="cosine", metadata={"help": "How auxiliary penalties decay with progress: constant, linear or cosine."}
    )
    aux_final_scale: float = field(
        default=0.0, metadata={"help": "Scale of the auxiliary penalties at progress 1 (0 = the outcome reward alone)."}
    )

    def __post_init__(self) -> None:
        if self.level not in ("doc", "chunk"):
            raise InvalidInput(f"Expected level in ('doc', 'chunk'), got {self.level!r}")
        if self.beta_start <= 0 or self.beta_end <= 0:
            raise InvalidInput(f"Expected beta_start, beta_end > 0, got {self.beta_start}, {self.beta_end}")
        if self.beta_epochs < 1:
            raise InvalidInput(f"Expected beta_epochs >= 1, got {self.beta_epochs}")
        if not 0 < self.epsilon < 1:
            raise InvalidInput(f"Expected 0 < epsilon < 1, got {self.epsilon}")
        if self.turn_end <= self.turn_start:
            raise InvalidInput(f"Expected turn_end > turn_start, got {self.turn_end} <= {self.turn_start}")
        if self.prune_streak < 0 or self.collapse_max_searches < 0:
            raise InvalidInput(
                f"Expected prune_streak, collapse_max_searches >= 0, got "
                f"{self.prune_streak}, {self.collapse_max_searches}"
            )
        if self.aux_anneal not in ("constant", "linear", "cosine"):
            raise InvalidInput(f"Expected aux_anneal in ('constant', 'linear', 'cosine'), got {self.aux_anneal!r}")
        if not 0.0 <= self.aux_final_scale <= 1.0:
            raise InvalidInput(f"Expected 0 <= aux_final_scale <= 1, got {self.aux_final_scale}")
        negative = {k: v for k, v in asdict(self).items() if isinstance(v, float) and v < 0}
        if negative:
            raise InvalidInput(f"Expected non-negative weights, got {negative}")

    # -- schedule -----------------------------------------------------------------------------------
    def beta_at(self, progress: float) -> float:
        """β for training ``progress`` in [0, 1]: a step per epoch from ``beta_start`` to ``beta_end``.

        Example:
            >>> RewardConfig(beta_epochs=3).beta_at(0.0), RewardConfig(beta_epochs=3).beta_at(1.0)
            (4.0, 2.0)
        """
        p = _clip01(progress)
        if self.beta_epochs == 1:
            return self.beta_start
        epoch = min(int(p * self.beta_epochs), self.beta_epochs - 1)
        return self.beta_start + (self.beta_end - self.beta_start) * epoch / (self.beta_epochs - 1)

    def aux_scale_at(self, progress: float) -> float:
        """Multiplier of the auxiliary penalties: 1 at progress 0, ``aux_final_scale`` at 1."""
        p = _clip01(progress)
        if self.aux_anneal == "constant":
            return 1.0
        decay = p if self.aux_anneal == "linear" else (1 - math.cos(math.pi * p)) / 2
        return 1.0 + (self.aux_final_scale - 1.0) * decay

    def weights_at(self, progress: float) -> RewardWeights:
        """All weights in force at ``progress`` (0 = first step, 1 = last step).

        Example:
            >>> cfg = RewardConfig()
            >>> cfg.weights_at(0.0).collapse, cfg.weights_at(1.0).collapse
            (0.5, 0.0)
        """
        s = self.aux_scale_at(progress)
        return RewardWeights(
            beta=self.beta_at(progress),
            f_beta=self.w_f_beta,
            traj_recall=self.w_traj_recall,
            answer=self.w_answer,
            epsilon=self.epsilon,
            prune_step=self.prune_step,
            prune_cap=self.prune_cap,
            prune_streak=self.prune_streak,
            turn_start=self.turn_start,
            turn_end=self.turn_end,
            turn_max=self.turn_max,
            collapse=self.collapse * s,
            malformed=self.malformed * s,
            malformed_cap=self.malformed_cap * s,
            gold_prune=self.gold_prune * s,
            gold_prune_cap=self.gold_prune_cap * s,
            repeat_query=self.repeat_query * s,
            repeat_query_cap=self.repeat_query_cap * s,
        )

    @property
    def max_reward(self) -> float:
        """The best possible episode reward: perfect F-beta and recall, answer returned, no penalty."""
        return self.w_f_beta + self.w_traj_recall + self.w_answer


def _clip01(x: float) -> float:
    if math.isnan(x):
        raise InvalidInput(f"Expected progress in [0, 1], got {x}")
    return min(max(float(x), 0.0), 1.0)


__all__ = ["AnnealKind", "GoldLevel", "RewardConfig", "RewardWeights"]
