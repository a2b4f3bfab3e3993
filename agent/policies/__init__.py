"""Policies: what decides each turn's tool calls (the no-LLM heuristic, or a chat model)."""

from sieve.agent.policies.base import Policy, PolicySession, PolicyStep
from sieve.agent.policies.heuristic import HeuristicPolicy

__all__ = ["HeuristicPolicy", "Policy", "PolicySession", "PolicyStep"]
