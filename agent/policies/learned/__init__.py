"""The learned policy: a small network, trained by RL in the harness, that takes every agent decision."""

from sieve.agent.policies.learned.network import Decision, LearnedConfig, PolicyNetwork, load_checkpoint, save_checkpoint
from sieve.agent.policies.learned.policy import LearnedPolicy, default_checkpoint

__all__ = ["Decision", "LearnedConfig", "LearnedPolicy", "PolicyNetwork", "default_checkpoint", "load_checkpoint",
           "save_checkpoint"]
