"""Training the learned policy: retrieval cache, imitation warm start, GRPO, learning curves.

The names load their module on first use: the command line reads :mod:`sieve.train.learned.config`
for its flags without loading torch, which the trainer needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sieve.train.learned.cache import CachedIndex
    from sieve.train.learned.config import LearnedRLConfig
    from sieve.train.learned.trainer import greedy_check, run_learned_rl

_MODULE_OF = {
    "CachedIndex": "sieve.train.learned.cache",
    "LearnedRLConfig": "sieve.train.learned.config",
    "greedy_check": "sieve.train.learned.trainer",
    "run_learned_rl": "sieve.train.learned.trainer",
}


def __getattr__(name: str) -> Any:
    if name in _MODULE_OF:
        return getattr(importlib.import_module(_MODULE_OF[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CachedIndex", "LearnedRLConfig", "greedy_check", "run_learned_rl"]
