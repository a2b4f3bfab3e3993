"""The policy protocol: what decides the next turn's tool calls, with or without a model."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from sieve.agent.backends.base import ParsedToolCall
    from sieve.agent.episode import Episode
    from sieve.pruning.tokens import TokenCounter


@dataclass
class PolicyStep:
    """One turn's output: the tool calls, the text around them and what they cost."""

    tool_calls: list[ParsedToolCall] = field(default_factory=list)
    text: str = ""  # free text of the assistant message (an answer when there are no calls)
    completion: str = ""  # the raw completion as generated (text + tool-call markup)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # The model's reasoning this turn: sent back with the turn's tool calls under ``reasoning_field``
    # (the name its server used), recorded in the trace and streamed as a ``reasoning`` event.
    reasoning: str = ""
    reasoning_field: str = "reasoning_content"
    # Harness-read keys: "stop_reason" (a finish's reason, e.g. "converged") and "evidence_scores"
    # ({chunk id: score} of the finish ids: the policy's own scores, shown as Evidence.score).
    meta: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class PolicySession(Protocol):
    """The per-episode state of a policy (one per episode, so rollouts can run in parallel)."""

    def step(self, episode: Episode) -> PolicyStep: ...


@runtime_checkable
class Policy(Protocol):
    name: str

    def start(self, episode: Episode) -> PolicySession: ...

    def token_counter(self) -> TokenCounter: ...


def render_calls(calls: list[ParsedToolCall]) -> str:
    """Tool calls as a model would write them, so no-LLM policies' traces read like LLM ones."""
    return "\n".join(
        f"<tool_call>{json.dumps({'name': c.name, 'arguments': c.arguments}, ensure_ascii=False)}</tool_call>"
        for c in calls
    )


__all__ = ["Policy", "PolicySession", "PolicyStep", "render_calls"]
