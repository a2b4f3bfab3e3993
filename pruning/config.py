"""Typed configuration of context pruning and the token budget's thresholds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from sieve.core.errors import InvalidInput

AutoPruner = Literal["none", "threshold", "pressure"]


@dataclass
class PruningConfig:
    soft_fraction: float = field(
        default=0.5,
        metadata={"help": "Share of the budget past which each turn's usage line urges the model to prune or finish."},
    )
    hard_fraction: float = field(
        default=0.9,
        metadata={"help": "Share of the budget past which every tool but prune and finish is rejected."},
    )
    auto: AutoPruner = field(
        default="none",
        metadata={
            "help": "Automatic pruner run after each turn: none (model-driven only), threshold (drop chunks "
            "below score_threshold) or pressure (past the soft limit drop the least relevant chunks)."
        },
    )
    score_threshold: float = field(
        default=0.2,
        metadata={"help": "Relevance (cosine to the question) below which the threshold pruner drops a chunk."},
    )
    pressure_target: float = field(
        default=0.4, metadata={"help": "Share of the budget the pressure pruner prunes down to."}
    )
    keep_min: int = field(
        default=3, metadata={"help": "Automatic pruners never leave fewer than this many chunks in view."}
    )

    def __post_init__(self) -> None:
        if not 0.0 < self.soft_fraction <= self.hard_fraction <= 1.0:
            raise InvalidInput(
                f"Expected 0 < soft_fraction <= hard_fraction <= 1, got soft={self.soft_fraction}, "
                f"hard={self.hard_fraction}"
            )
        if not 0.0 < self.pressure_target <= self.soft_fraction:
            raise InvalidInput(
                f"Expected 0 < pressure_target <= soft_fraction, got {self.pressure_target} > {self.soft_fraction}"
            )
        if self.auto not in ("none", "threshold", "pressure"):
            raise InvalidInput(f"Expected auto in ('none', 'threshold', 'pressure'), got {self.auto!r}")
        if self.keep_min < 0:
            raise InvalidInput(f"Expected keep_min >= 0, got {self.keep_min}")


__all__ = ["AutoPruner", "PruningConfig"]
