"""The learned route's run settings: GRPO (:class:`LearnedRLConfig`) and its imitation warm start.

Apart from the trainer so that the command line reads its defaults and help from here (one home
per default) without loading torch or numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sieve.core.errors import InvalidInput
from sieve.train.rewards.config import RewardConfig

if TYPE_CHECKING:
    from sieve.agent.policies.learned.decisions import LearnedConfig


def _policy_config() -> LearnedConfig:
    # imported here: the policy's module loads numpy, which `sieve --help` must not (tests/server/test_cli.py)
    from sieve.agent.policies.learned.decisions import LearnedConfig

    return LearnedConfig()


@dataclass
class ImitationConfig:
    rounds: int = field(default=2, metadata={"help": "Collect-then-fit rounds."})
    episodes: int = field(default=32, metadata={"help": "Episodes collected per round."})
    epochs: int = field(default=30, metadata={"help": "Optimiser steps per round over the collected decisions."})
    lr: float = field(default=3e-3, metadata={"help": "Adam learning rate."})


DEFAULT_UPDATES = 200
"""GRPO updates of a run given neither ``steps`` nor ``minutes``."""


@dataclass
class LearnedRLConfig:
    tasks: Path = field(default=Path("tasks.jsonl"), metadata={"help": "Tasks JSONL (e.g. from `sieve train synth`)."})
    out: Path = field(default=Path("runs/learned"), metadata={"help": "Run folder; the checkpoint is OUT/model."})
    init: str = field(
        default="default",
        metadata={
            "help": "Start: 'default' (the shipped checkpoint), 'none' (a fresh network), or a checkpoint folder."
        },
    )
    warm_start: bool = field(
        default=True, metadata={"help": "A fresh network (init 'none') first imitates the heuristic."}
    )
    steps: int | None = field(
        default=None,
        metadata={
            "help": f"Most GRPO updates (one batch of B tasks x G rollouts each); unset: {DEFAULT_UPDATES}, or no cap "
            "when `minutes` is set (the time budget ends the run)."
        },
    )
    minutes: float | None = field(
        default=None,
        metadata={
            "help": "Wall-clock budget of the run (set-up, screen and checks included); the updates get what those "
            "leave, rewards anneal over it, and the run stops when it is spent."
        },
    )
    questions_per_step: int = field(default=4, metadata={"help": "Tasks per update (B)."})
    group: int = field(default=8, metadata={"help": "Rollouts per task, the GRPO group (G)."})
    epochs: int = field(default=4, metadata={"help": "Optimiser steps per batch (clipped ratios keep them close)."})
    clip: float = field(default=0.2, metadata={"help": "PPO clip range of the importance ratio."})
    lr: float = field(default=1e-3, metadata={"help": "Adam learning rate."})
    entropy: float = field(default=0.003, metadata={"help": "Entropy bonus coefficient."})
    temperature: float = field(
        default=1.5,
        metadata={"help": "Rollout sampling temperature (logits / T; the ratios use the same T). Serving is greedy."},
    )
    skip_solved: float = field(
        default=0.75,
        metadata={"help": "Chance of skipping a task whose last group all found every gold document (no signal)."},
    )
    screen: bool = field(
        default=True,
        metadata={
            "help": "Before RL, one greedy episode per task: train on the tasks the start policy does not solve "
            "(every gold document in its top k), plus `keep_solved` of the solved ones."
        },
    )
    keep_solved: float = field(
        default=0.1,
        metadata={"help": "Share of the screened-solved tasks kept in training (against forgetting what they teach)."},
    )
    max_grad_norm: float = field(default=1.0, metadata={"help": "Gradient-norm clip."})
    k: int = field(default=10, metadata={"help": "Returned evidence per episode (what F-beta scores)."})
    budget_tokens: int = field(default=8192, metadata={"help": "Episode context budget (as served)."})
    holdout: float = field(default=0.15, metadata={"help": "Share of tasks held apart for the greedy checks."})
    heldout_tasks: Path | None = field(
        default=None,
        metadata={"help": "Tasks for the greedy checks instead of a random share (then every task of --tasks trains)."},
    )
    eval_every: int = field(
        default=50, metadata={"help": "Greedy held-apart check every N updates (0: start/end only)."}
    )
    table_every: int = field(default=20, metadata={"help": "A row of the progress table every N updates."})
    save_every: int = field(default=20, metadata={"help": "Checkpoint + trainer state every N updates."})
    limit: int | None = field(default=None, metadata={"help": "Use only the first N tasks."})
    seed: int = field(default=0, metadata={"help": "Seed (network init, task order, sampling)."})
    policy: LearnedConfig = field(default_factory=_policy_config)
    imitation: ImitationConfig = field(default_factory=ImitationConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    command: str = field(default="", metadata={"help": "The command line, recorded in the summary."})

    def __post_init__(self) -> None:
        self.tasks, self.out = Path(self.tasks), Path(self.out)
        self.heldout_tasks = Path(self.heldout_tasks) if self.heldout_tasks is not None else None
        self.init = "none" if self.init is None else str(self.init)
        if self.group < 2:
            raise InvalidInput(f"Expected num_generations >= 2 (GRPO needs a group), got {self.group}")
        if (self.steps is not None and self.steps < 1) or self.questions_per_step < 1 or self.epochs < 1:
            raise InvalidInput(
                f"Expected steps, questions_per_step, epochs >= 1, got "
                f"{self.steps}, {self.questions_per_step}, {self.epochs}"
            )
        if self.minutes is not None and self.minutes <= 0:
            raise InvalidInput(f"Expected minutes > 0, got {self.minutes}")
        if self.temperature <= 0 or not 0 <= self.skip_solved <= 1:
            raise InvalidInput(
                f"Expected temperature > 0 and 0 <= skip_solved <= 1, got {self.temperature}, {self.skip_solved}"
            )
        if not 0 < self.clip < 1 or self.lr <= 0:
            raise InvalidInput(f"Expected 0 < clip < 1 and lr > 0, got {self.clip}, {self.lr}")
        if not 0 <= self.keep_solved <= 1:
            raise InvalidInput(f"Expected 0 <= keep_solved <= 1, got {self.keep_solved}")

    @property
    def step_cap(self) -> int | None:
        """The step cap in force: ``steps`` if given, none under a time budget, else :data:`DEFAULT_UPDATES`."""
        if self.steps is not None:
            return self.steps
        return None if self.minutes else DEFAULT_UPDATES

    @property
    def fresh(self) -> bool:
        """Whether the run starts from a fresh network (``init`` 'none')."""
        return self.init == "none"


__all__ = ["DEFAULT_UPDATES", "ImitationConfig", "LearnedRLConfig"]
