"""The learned policy: a small network, trained by RL in the harness, that takes every agent decision.

The torch network (training) loads on first use of its names, so serving imports no torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sieve.core.lazy import lazy_getattr
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

# The torch network's names: read from .network (which imports torch) on first use only.
_LAZY = {"PolicyNetwork": ".network", "load_checkpoint": ".network", "save_checkpoint": ".network"}
__getattr__ = lazy_getattr(__name__, _LAZY)
