"""Episode settings shared by SFT data collection, RL rollouts and the held-out checks.

The student must be trained on the same kind of episode it is served with: one budget, one
tool set, one turn limit. Every stage builds its :class:`~sieve.agent.config.AgentConfig` from this
dataclass, so SFT targets, RL segments and evaluation see identical prompts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sieve.core.errors import InvalidInput

if TYPE_CHECKING:
    from sieve.agent.config import AgentConfig


@dataclass(frozen=True)
class EpisodeConfig:
    budget_tokens: int = field(default=4096, metadata={"help": "Context budget of the model's view (pruning live)."})
    max_turns: int = field(default=6, metadata={"help": "Turns per episode."})
    k: int = field(default=5, metadata={"help": "Size of the returned evidence set."})
    search_k: int = field(default=5, metadata={"help": "Most chunks one search shows."})
    search_tokens: int = field(default=1024, metadata={"help": "Per-call token budget of tool results."})
    max_new_tokens: int = field(default=192, metadata={"help": "Most tokens the model writes per turn."})
    heuristic_queries: int = field(
        default=3,
        metadata={"help": "Teacher (heuristic) reformulated searches per turn; fewer keeps SFT targets short."},
    )

    def __post_init__(self) -> None:
        if self.max_turns < 1 or self.k < 1 or self.search_k < 1 or self.max_new_tokens < 1:
            raise InvalidInput(f"Expected positive max_turns, k, search_k, max_new_tokens, got {self}")

    def training_agent_config(self, **overrides: Any) -> AgentConfig:
        """The AgentConfig of a training episode (``record_prompts`` on: RL and SFT need the views; the floor off).

        Not :meth:`sieve.settings.Settings.agent_config`, the config that ``SIEVE_*`` variables imply for
        serving: this one is built from these episode settings alone, whatever the environment says.
        """
        from sieve.agent.config import AgentConfig, FloorConfig, HeuristicConfig

        base = AgentConfig(
            budget_tokens=self.budget_tokens,
            max_turns=self.max_turns,
            k=self.k,
            search_k=self.search_k,
            search_candidates=max(50, self.search_k),
            search_tokens=self.search_tokens,
            max_new_tokens=self.max_new_tokens,
            record_prompts=True,
            heuristic=HeuristicConfig(max_queries_per_turn=self.heuristic_queries),
            # Rewards, SFT filters and held-out checks judge the policy's own ranking: with the
            # floor on, hybrid's share of the fused set would be credited to the policy.
            floor=FloorConfig(enabled=False),
        )
        return replace(base, **overrides)

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


def split_tasks(tasks: list[dict[str, Any]], holdout: float, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """(train, held-out) split by a seeded shuffle of task ids; deterministic and disjoint.

    Example:
        >>> tr, ho = split_tasks([{"id": str(i)} for i in range(10)], 0.2)
        >>> len(tr), len(ho), set(t["id"] for t in tr) & set(t["id"] for t in ho)
        (8, 2, set())
    """
    import random

    if not 0.0 <= holdout < 1.0:
        raise InvalidInput(f"Expected 0 <= holdout < 1, got {holdout}")
    ids = sorted({str(t.get("id", i)) for i, t in enumerate(tasks)})
    random.Random(seed).shuffle(ids)
    n_hold = int(round(holdout * len(ids)))
    if holdout > 0 and n_hold == 0 and len(ids) > 1:
        n_hold = 1
    held = set(ids[:n_hold])
    train = [t for i, t in enumerate(tasks) if str(t.get("id", i)) not in held]
    test = [t for i, t in enumerate(tasks) if str(t.get("id", i)) in held]
    return train, test


__all__ = ["EpisodeConfig", "split_tasks"]
