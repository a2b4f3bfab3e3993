"""Episode rewards over the agent :class:`~sieve.agent.trace.Trace` (CONVENTIONS item 9).

Themed modules of pure functions: ``metrics`` (F-beta, recall), ``context1`` (Chroma Context-1's
published reward terms), ``penalties`` (Sieve's anti-collapse penalties), ``episode`` (the
combination, and picklable TRL callables), ``report`` (per-batch aggregates).
"""

from sieve.train.rewards.config import RewardConfig, RewardWeights
from sieve.train.rewards.episode import (
    ComponentReward,
    EpisodeReward,
    RewardBreakdown,
    check_reward_weights,
    get_component_reward,
    get_episode_reward,
    score_episode,
)
from sieve.train.rewards.gold import Gold
from sieve.train.rewards.report import RewardReport

__all__ = [
    "ComponentReward",
    "EpisodeReward",
    "Gold",
    "RewardBreakdown",
    "RewardConfig",
    "RewardReport",
    "RewardWeights",
    "check_reward_weights",
    "get_component_reward",
    "get_episode_reward",
    "score_episode",
]
