"""Training the learned policy: retrieval cache, imitation warm start, GRPO, learning curves.

The names load their module on first use: the command line reads :mod:`sieve.train.learned.config`
for its flags without loading torch, which the trainer needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sieve.core.lazy import lazy_getattr

if TYPE_CHECKING:
    from sieve.train.learned.cache import CachedIndex
    from sieve.train.learned.config import LearnedRLConfig
    from sieve.train.learned.trainer import greedy_check, run_learned_rl

_LAZY = {
    "CachedIndex": ".cache",
    "LearnedRLConfig": ".config",
    "greedy_check": ".trainer",
    "run_learned_rl": ".trainer",
}
__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = ["CachedIndex", "LearnedRLConfig", "greedy_check", "run_learned_rl"]
