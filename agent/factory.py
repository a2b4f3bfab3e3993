"""``make_policy``: build a policy by name from an :class:`AgentConfig`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sieve.agent.config import AgentConfig
from sieve.defaults import DEFAULT_POLICY
from sieve.errors import InvalidInput

if TYPE_CHECKING:
    from sieve.agent.backends.base import ChatBackend
    from sieve.agent.policies.base import Policy

POLICIES = ("heuristic", "learned", "openai", "local")


def make_policy(name: str, config: AgentConfig | None = None, *, backend: ChatBackend | None = None) -> Policy:
    """``"heuristic"`` (no model), ``"learned"`` (a small RL-trained network, ``config.policy_path`` or the
    shipped checkpoint), ``"openai"`` (an OpenAI-compatible server) or ``"local"`` (transformers).

    ``backend`` overrides the one the name implies (tests pass a scripted fake here).

    Example:
        >>> make_policy("heuristic").name
        'heuristic'
    """
    config = config or AgentConfig()
    if name == "heuristic":
        from sieve.agent.policies.heuristic import HeuristicPolicy

        return HeuristicPolicy(config)
    if name == "learned":
        from sieve.agent.policies.learned import LearnedPolicy

        return LearnedPolicy.load(config.policy_path)
    from sieve.agent.policies.llm import LLMPolicy

    if name == "openai":
        if backend is None:
            from sieve.agent.backends.openai import OpenAIBackend

            backend = OpenAIBackend(config.base_url, config.model, api_key=config.api_key, timeout=config.timeout_s,
                                    retries=config.retries)
        # Served models' tokenizers are not local: the budget counts ~4 characters a token.
        return LLMPolicy(backend, config, name="openai", tool_choice=config.tool_choice)
    if name == "local":
        from sieve.pruning.tokens import HFTokenCounter

        if backend is None:
            from sieve.agent.backends.local import LocalBackend
            from sieve.agent.backends.models import smollm2_path

            backend = LocalBackend.load(config.local_model or smollm2_path(config.models_dir))
        tok = getattr(backend, "tokenizer", None)
        return LLMPolicy(backend, config, name="local", counter=HFTokenCounter(tok) if tok is not None else None)
    raise InvalidInput(f"Expected a policy in {list(POLICIES)}, got {name!r}")


__all__ = ["DEFAULT_POLICY", "POLICIES", "make_policy"]
