"""What an HTTP caller may ask of an episode: the settings' defaults, lowered (never raised) per request.

Kept apart from ``agent_runner.py`` (which runs episodes in the app) so that the app's state can
resolve its own defaults here without importing the runner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sieve.core.errors import InvalidInput

if TYPE_CHECKING:
    from sieve.agent.config import AgentConfig
    from sieve.settings import Settings


def _at_most(name: str, asked: float | None, cap: float) -> float:
    if asked is not None and asked > cap:
        raise InvalidInput(f"Expected {name} <= {cap} (SIEVE_{name.upper()}), got {asked}")
    return cap if asked is None else asked


def is_llm_policy(name: str) -> bool:
    """Whether the policy registered as ``name`` runs a language model (its episodes get ``SIEVE_MAX_WALL_S``)."""
    from sieve.agent.factory import POLICIES

    spec = POLICIES.get(name)
    return spec is not None and spec.requires != "none"


def episode_config(
    s: Settings,
    policy: str,
    *,
    k: int | None = None,
    budget_tokens: int | None = None,
    max_turns: int | None = None,
    reasoning_effort: str | None = None,
    tool_choice: str | None = None,
    max_new_tokens: int | None = None,
    max_tool_calls: int | None = None,
    max_wall_s: float | None = None,
) -> AgentConfig:
    """An episode's ``AgentConfig``: the settings' defaults, what the caller asked for (None: the setting),
    budgets and caps no higher than the settings' maxima. ``k`` is checked by the request that holds it.

    ``max_wall_s`` is how long the episode may run: an LLM policy's (the setting or less), else the
    request timeout. The agent checks its wall clock every turn: stopping there frees the worker
    thread that a request timeout otherwise only abandons.
    """
    budget = budget_tokens or s.budget_tokens
    if budget > s.max_budget_tokens:
        raise InvalidInput(f"Expected budget_tokens <= {s.max_budget_tokens}, got {budget}")
    turns = max_turns or s.max_turns
    if turns > s.max_turns:
        raise InvalidInput(f"Expected max_turns <= {s.max_turns} (SIEVE_MAX_TURNS), got {turns}")
    llm: dict[str, Any] = {
        "max_new_tokens": int(_at_most("max_new_tokens", max_new_tokens, s.max_new_tokens)),
        "max_tool_calls": int(_at_most("max_tool_calls", max_tool_calls, s.max_tool_calls)),
    }
    if reasoning_effort is not None:
        llm["reasoning_effort"] = reasoning_effort
    if tool_choice is not None:
        llm["tool_choice"] = tool_choice
    wall_s = float(_at_most("max_wall_s", max_wall_s, s.max_wall_s)) if is_llm_policy(policy) else s.request_timeout_s
    return s.agent_config(k=k or s.k, budget_tokens=budget, max_turns=turns, max_wall_s=wall_s, **llm)


__all__ = ["episode_config", "is_llm_policy"]
