"""The token budget with Context-1's published mechanics.

After every turn the model reads ``[Token usage: 14,203/32,768]``. Past the soft limit (half
the budget by default) the line carries a request to prune or finish; past the hard limit every
tool except ``prune`` and ``finish`` is rejected with an error saying so, so the model must free
context or conclude.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

from sieve.core.defaults import MIN_BUDGET_TOKENS
from sieve.core.errors import InvalidInput
from sieve.pruning.config import PruningConfig

BudgetState = Literal["ok", "soft", "hard"]


def share_words(fraction: float) -> str:
    """A budget share as the prompt says it: ``0.5`` -> ``"half"``, ``0.6`` -> ``"60%"``.

    Example:
        >>> share_words(0.5), share_words(0.75)
        ('half', '75%')
    """
    return "half" if fraction == 0.5 else f"{fraction:.0%}"


def soft_notice(fraction: float) -> str:
    """The warning past the soft limit, naming the configured share (``PruningConfig.soft_fraction``)."""
    return (
        f"You have used more than {share_words(fraction)} of your context budget. Prune chunks that do not help "
        "answer the question (prune tool) or finish with the evidence you have (finish tool)."
    )


SOFT_NOTICE = soft_notice(0.5)  # at the default soft_fraction
HARD_NOTICE = (
    "Context budget nearly exhausted: only prune and finish are accepted now. Prune irrelevant chunks "
    "to continue searching, or finish."
)
# Tools still allowed past the hard limit when the caller names none: freeing context, and concluding.
# The agent passes its registry's over-budget tools (sieve.agent.tool_specs.over_budget_tools()).
HARD_ALLOWED = ("prune", "finish")


@dataclass(frozen=True)
class TokenBudget:
    """Budget thresholds in tokens.

    Example:
        >>> b = TokenBudget.from_config(32768, PruningConfig())
        >>> b.usage_line(14203)
        '[Token usage: 14,203/32,768]'
        >>> b.state(20000)
        'soft'
    """

    total: int
    soft: int
    hard: int
    soft_fraction: float = 0.5  # what the soft notice says; soft = int(total * soft_fraction)

    @classmethod
    def from_config(cls, total: int, config: PruningConfig) -> TokenBudget:
        if total < MIN_BUDGET_TOKENS:
            raise InvalidInput(f"Expected a token budget >= {MIN_BUDGET_TOKENS}, got {total}")
        return cls(
            total=total,
            soft=int(total * config.soft_fraction),
            hard=int(total * config.hard_fraction),
            soft_fraction=config.soft_fraction,
        )

    def state(self, used: int) -> BudgetState:
        if used >= self.hard:
            return "hard"
        if used >= self.soft:
            return "soft"
        return "ok"

    def remaining(self, used: int) -> int:
        """Tokens that may still be added before the hard limit."""
        return max(0, self.hard - used)

    def usage_line(self, used: int) -> str:
        return f"[Token usage: {used:,}/{self.total:,}]"

    def notice(self, used: int) -> str:
        """The per-turn message: the usage line, plus a warning past the soft or hard limit."""
        state = self.state(used)
        line = self.usage_line(used)
        if state == "hard":
            return f"{line}\n{HARD_NOTICE}"
        if state == "soft":
            return f"{line}\n{soft_notice(self.soft_fraction)}"
        return line

    def rejection(self, tool: str, used: int, *, allowed: Collection[str] = HARD_ALLOWED) -> str | None:
        """The error for calling ``tool`` at ``used`` tokens, or None when it is allowed (``allowed``:
        the tools accepted past the hard limit)."""
        if self.state(used) != "hard" or tool in allowed:
            return None
        return (
            f"Expected {' or '.join(allowed)} past the hard context limit ({used:,}/{self.total:,} tokens used, "
            f"limit {self.hard:,}), got {tool}. Prune chunks you no longer need, or finish."
        )


__all__ = ["HARD_ALLOWED", "HARD_NOTICE", "SOFT_NOTICE", "BudgetState", "TokenBudget", "share_words", "soft_notice"]
