"""Per-batch reward report: mean reward, its components and the behaviour behind them."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sieve.train.rewards.episode import RewardBreakdown

logger = logging.getLogger(__name__)

_COMPONENTS = (
    "total",
    "context1",
    "f_beta",
    "traj_recall",
    "answer",
    "p_prune",
    "p_turn",
    "p_collapse",
    "p_malformed",
    "p_gold_prune",
    "p_repeat",
)


@dataclass(frozen=True)
class RewardReport:
    """Aggregates of one batch of episodes.

    Attributes:
        n: episodes in the batch.
        means: mean of every reward component (``total``, ``f_beta``, ``p_collapse``...).
        reward_std: standard deviation of ``total``.
        searches_per_episode: mean search+grep calls.
        prune_calls_per_episode: mean prune calls.
        pruned_gold_per_episode: mean gold chunks pruned.
        collapse_rate: share of episodes penalised for single-search collapse.
        single_search_rate: share of episodes with at most one search (collapse or not).
        malformed_per_episode: mean malformed tool calls.
        turns_per_episode: mean turns.
    """

    n: int
    means: dict[str, float] = field(default_factory=dict)
    reward_std: float = 0.0
    searches_per_episode: float = 0.0
    prune_calls_per_episode: float = 0.0
    pruned_gold_per_episode: float = 0.0
    collapse_rate: float = 0.0
    single_search_rate: float = 0.0
    malformed_per_episode: float = 0.0
    turns_per_episode: float = 0.0

    @classmethod
    def from_breakdowns(cls, items: Sequence[RewardBreakdown]) -> RewardReport:
        n = len(items)
        if n == 0:
            return cls(n=0)

        def mean(xs: Sequence[float]) -> float:
            return sum(xs) / n

        totals = [b.total for b in items]
        mu = mean(totals)
        return cls(
            n=n,
            means={c: mean([getattr(b, c) for b in items]) for c in _COMPONENTS},
            reward_std=math.sqrt(sum((t - mu) ** 2 for t in totals) / n),
            searches_per_episode=mean([b.n_searches for b in items]),
            prune_calls_per_episode=mean([b.n_prune_calls for b in items]),
            pruned_gold_per_episode=mean([b.n_pruned_gold for b in items]),
            collapse_rate=mean([1.0 if b.p_collapse > 0 else 0.0 for b in items]),
            single_search_rate=mean([1.0 if b.n_searches <= 1 else 0.0 for b in items]),
            malformed_per_episode=mean([b.n_malformed for b in items]),
            turns_per_episode=mean([b.n_turns for b in items]),
        )

    def to_metrics(self, prefix: str = "sieve/") -> dict[str, float]:
        """Flat, name-prefixed metrics (what the trainer logs)."""
        out = {f"{prefix}reward/{k}": v for k, v in self.means.items()}
        out.update(
            {
                f"{prefix}reward_std": self.reward_std,
                f"{prefix}searches_per_episode": self.searches_per_episode,
                f"{prefix}prune_calls_per_episode": self.prune_calls_per_episode,
                f"{prefix}pruned_gold_per_episode": self.pruned_gold_per_episode,
                f"{prefix}collapse_rate": self.collapse_rate,
                f"{prefix}single_search_rate": self.single_search_rate,
                f"{prefix}malformed_per_episode": self.malformed_per_episode,
                f"{prefix}turns_per_episode": self.turns_per_episode,
            }
        )
        return out

    def log(self, step: int | None = None, log: logging.Logger = logger) -> None:
        """One INFO line with the headline numbers."""
        m = self.means
        log.info(
            "reward%s n=%d mean=%.3f±%.3f f_beta=%.3f traj_recall=%.3f answer=%.2f p_collapse=%.3f "
            "p_gold_prune=%.3f searches/ep=%.2f prunes/ep=%.2f collapse=%.0f%% malformed/ep=%.2f",
            "" if step is None else f"[step {step}]",
            self.n,
            m.get("total", 0.0),
            self.reward_std,
            m.get("f_beta", 0.0),
            m.get("traj_recall", 0.0),
            m.get("answer", 0.0),
            m.get("p_collapse", 0.0),
            m.get("p_gold_prune", 0.0),
            self.searches_per_episode,
            self.prune_calls_per_episode,
            100 * self.collapse_rate,
            self.malformed_per_episode,
        )


__all__ = ["RewardReport"]
