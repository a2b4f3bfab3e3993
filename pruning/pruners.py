"""Pluggable pruners: which chunks leave the model's view.

:class:`ModelPruner` leaves pruning to the model (its ``prune`` tool); the automatic pruners
are for policies that do not prune well: :class:`ScoreThresholdPruner` drops chunks whose
relevance to the question is below a threshold, :class:`BudgetPressurePruner` drops the least
relevant chunks once the soft limit is passed, down to a target share of the budget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from sieve.pruning.budget import TokenBudget
    from sieve.pruning.config import PruningConfig
    from sieve.pruning.context import ContextState


@runtime_checkable
class Pruner(Protocol):
    """Chooses handles to prune after a turn; the harness applies and records them."""

    name: str

    def select(self, context: ContextState, budget: TokenBudget) -> list[str]: ...


class ModelPruner:
    """Model-driven pruning only: nothing is pruned automatically."""

    name = "model"

    def select(self, context: ContextState, budget: TokenBudget) -> list[str]:
        return []


class ScoreThresholdPruner:
    """Prune every chunk in view with relevance below ``threshold`` (keeping the best ``keep_min``)."""

    name = "threshold"

    def __init__(self, threshold: float, keep_min: int = 3) -> None:
        self.threshold = threshold
        self.keep_min = keep_min

    def select(self, context: ContextState, budget: TokenBudget) -> list[str]:
        active = sorted(context.active(), key=lambda e: -e.relevance)
        return [e.handle for e in active[self.keep_min :] if e.relevance < self.threshold]


class BudgetPressurePruner:
    """Past the soft limit, prune the least relevant chunks until usage is at most ``target`` tokens."""

    name = "pressure"

    def __init__(self, target_fraction: float, keep_min: int = 3) -> None:
        self.target_fraction = target_fraction
        self.keep_min = keep_min

    def select(self, context: ContextState, budget: TokenBudget) -> list[str]:
        used = context.tokens()
        if used < budget.soft:
            return []
        target = int(budget.total * self.target_fraction)
        active = sorted(context.active(), key=lambda e: e.relevance)  # least relevant first
        chosen: list[str] = []
        for e in active[: max(0, len(active) - self.keep_min)]:
            if used <= target:
                break
            chosen.append(e.handle)
            used -= e.tokens - context.counter.count(f"[{e.handle}] (pruned)")
        return chosen


def make_pruner(config: PruningConfig) -> Pruner:
    """The automatic pruner ``config.auto`` names."""
    if config.auto == "threshold":
        return ScoreThresholdPruner(config.score_threshold, config.keep_min)
    if config.auto == "pressure":
        return BudgetPressurePruner(config.pressure_target, config.keep_min)
    return ModelPruner()


__all__ = ["BudgetPressurePruner", "ModelPruner", "Pruner", "ScoreThresholdPruner", "make_pruner"]
