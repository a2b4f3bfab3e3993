"""A policy driven by a chat model through any :class:`~sieve.agent.backends.base.ChatBackend`."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from sieve.agent.backends.harmony import read_reply
from sieve.agent.policies.base import PolicyStep
from sieve.agent.backends.tokens import LabelledEstimate

if TYPE_CHECKING:
    from sieve.agent.backends.base import ChatBackend, ChatResult, ParsedToolCall
    from sieve.agent.config import AgentConfig
    from sieve.agent.episode import Episode
    from sieve.pruning.tokens import TokenCounter

# Fused rollouts need diverse episodes; greedy decoding would make them identical.
ROLLOUT_TEMPERATURE = 0.7


class LLMPolicy:
    """Each turn: the pruned view goes to the model with the tool schemas; its tool calls come back."""

    def __init__(
        self,
        backend: ChatBackend,
        config: AgentConfig,
        *,
        name: str = "llm",
        counter: TokenCounter | None = None,
    ) -> None:
        self.backend = backend
        self.config = config
        self.name = name
        self._counter = counter or LabelledEstimate()
        # Backends that accept a per-call reasoning effort (the OpenAI-compatible ones) get the episode's.
        self.takes_effort = "reasoning_effort" in inspect.signature(backend.chat).parameters

    def token_counter(self) -> TokenCounter:
        return self._counter

    def start(self, episode: Episode) -> _LLMSession:
        return _LLMSession(self)


class _LLMSession:
    def __init__(self, policy: LLMPolicy) -> None:
        self.policy = policy

    def step(self, episode: Episode) -> PolicyStep:
        # The episode's config: what a request or flag chose for this episode (tokens, tool_choice, effort).
        cfg = episode.config
        temperature = cfg.temperature
        if episode.rollout > 0 and temperature == 0.0:
            temperature = ROLLOUT_TEMPERATURE
        # Only a cancellable episode passes the token, so backends without the keyword still work.
        extra: dict[str, Any] = {"cancel": episode.cancel} if episode.cancel is not None else {}
        if cfg.reasoning_effort is not None and self.policy.takes_effort:
            extra["reasoning_effort"] = cfg.reasoning_effort
        messages = episode.context.view()

        def ask(max_tokens: int) -> ChatResult:
            return self.policy.backend.chat(
                messages,
                episode.tools,
                tool_choice=cfg.tool_choice,
                max_tokens=max_tokens,
                temperature=temperature,
                **extra,
            )

        result = ask(cfg.max_new_tokens)
        calls, text, reasoning = list(result.tool_calls), result.text, result.reasoning
        if not calls:  # a backend that returns raw text (RL's recording backend): read the calls from it
            reply = read_reply(text)
            calls, text, reasoning = reply.calls, reply.text, reasoning or reply.reasoning
        meta: dict[str, object] = {"finish_reason": result.finish_reason}
        spent = (result.prompt_tokens, result.completion_tokens)
        if result.finish_reason == "length" and not _complete(calls) and cfg.length_retry_tokens > cfg.max_new_tokens:
            # The model ran out of tokens mid-turn (long reasoning, usually): ask once more with room.
            retry = ask(cfg.length_retry_tokens)
            meta["length_retry"] = {"first_max_tokens": cfg.max_new_tokens, "max_tokens": cfg.length_retry_tokens}
            spent = (spent[0] + retry.prompt_tokens, spent[1] + retry.completion_tokens)
            result = retry
            calls, text, reasoning = list(retry.tool_calls), retry.text, retry.reasoning
            if not calls:
                reply = read_reply(text)
                calls, text, reasoning = reply.calls, reply.text, reasoning or reply.reasoning
            meta["finish_reason"] = retry.finish_reason
        return PolicyStep(
            tool_calls=calls,
            text=text,
            completion=result.raw or result.text,
            prompt_tokens=spent[0],
            completion_tokens=spent[1],
            reasoning=reasoning,
            reasoning_field=result.reasoning_field,
            meta=meta,
        )


def _complete(calls: list[ParsedToolCall]) -> bool:
    """Whether a turn holds at least one tool call whose arguments could be read."""
    return any(c.arguments is not None for c in calls)


__all__ = ["ROLLOUT_TEMPERATURE", "LLMPolicy"]
