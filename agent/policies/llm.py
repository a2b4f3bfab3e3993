"""A policy driven by a chat model through any :class:`~sieve.agent.backends.base.ChatBackend`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sieve.agent.backends.parsing import calls_in_text
from sieve.agent.policies.base import PolicyStep
from sieve.pruning.tokens import ApproxTokenCounter

if TYPE_CHECKING:
    from sieve.agent.backends.base import ChatBackend
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
        tool_choice: str = "auto",
    ) -> None:
        self.backend = backend
        self.config = config
        self.name = name
        self.tool_choice = tool_choice
        self._counter = counter or ApproxTokenCounter()

    def token_counter(self) -> TokenCounter:
        return self._counter

    def start(self, episode: Episode) -> _LLMSession:
        return _LLMSession(self)


class _LLMSession:
    def __init__(self, policy: LLMPolicy) -> None:
        self.policy = policy

    def step(self, episode: Episode) -> PolicyStep:
        cfg = self.policy.config
        temperature = cfg.temperature
        if episode.rollout > 0 and temperature == 0.0:
            temperature = ROLLOUT_TEMPERATURE
        # Only a cancellable episode passes the token, so backends without the keyword still work.
        extra = {"cancel": episode.cancel} if episode.cancel is not None else {}
        result = self.policy.backend.chat(
            episode.context.view(),
            episode.tools,
            tool_choice=self.policy.tool_choice,
            max_tokens=cfg.max_new_tokens,
            temperature=temperature,
            **extra,
        )
        calls, text = list(result.tool_calls), result.text
        if not calls:  # a backend that returns raw text (RL's recording backend): read the calls from it
            calls, text = calls_in_text(text)
        return PolicyStep(
            tool_calls=calls,
            text=text,
            completion=result.raw or result.text,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            meta={"finish_reason": result.finish_reason},
        )


__all__ = ["ROLLOUT_TEMPERATURE", "LLMPolicy"]
