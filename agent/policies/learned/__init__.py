"""The learned policy: a small network, trained by RL in the harness, that takes every agent decision.

The torch network (training) loads on first use of its names, so serving imports no torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sieve.agent.policies.learned.decisions import Decision, LearnedConfig, NumpyNetwork
from sieve.agent.policies.learned.policy import LearnedPolicy, default_checkpoint

if TYPE_CHECKING:
    from sieve.agent.policies.learned.network import PolicyNetwork, load_checkpoint, save_checkpoint

__all__ = [
    "Decision",
    "LearnedConfig",
    "LearnedPolicy",
    "NumpyNetwork",
    "PolicyNetwork",
    "default_checkpoint",
    "load_checkpoint",
    "save_checkpoint",
]

_TORCH = ("PolicyNetwork", "load_checkpoint", "save_checkpoint")


def __getattr__(name: str) -> Any:
    if name in _TORCH:
        return getattr(importlib.import_module("sieve.agent.policies.learned.network"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
