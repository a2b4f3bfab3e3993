"""Training the learned policy: retrieval cache, imitation warm start, GRPO, learning curves."""

from sieve.train.learned.cache import CachedIndex
from sieve.train.learned.trainer import LearnedRLConfig, greedy_check, run_learned_rl

__all__ = ["CachedIndex", "LearnedRLConfig", "greedy_check", "run_learned_rl"]
