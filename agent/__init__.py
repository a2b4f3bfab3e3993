"""The search agent: tools, a token-budgeted loop with pruning, policies, and the trace it yields.

The names below resolve on first access (PEP 562), as in ``sieve.retriever``: the registries
(``sieve.agent.factory``, ``sieve.agent.tool_specs``) must be readable by the CLI's help without
loading numpy or the loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sieve.core.lazy import lazy_getattr

if TYPE_CHECKING:
    from sieve.agent.cancel import CancelToken, Cancelled
    from sieve.agent.config import AgentConfig, HeuristicConfig
    from sieve.agent.episode import Episode
    from sieve.agent.factory import POLICIES, make_policy
    from sieve.agent.loop import SearchAgent, fuse_traces, run_request
    from sieve.agent.request import AgentRequest
    from sieve.agent.tool_specs import TOOL_NAMES, tool_specs
    from sieve.agent.trace import Evidence, ToolCall, Trace, Turn

__all__ = [
    "POLICIES",
    "TOOL_NAMES",
    "AgentConfig",
    "AgentRequest",
    "CancelToken",
    "Cancelled",
    "Episode",
    "Evidence",
    "HeuristicConfig",
    "SearchAgent",
    "ToolCall",
    "Trace",
    "Turn",
    "fuse_traces",
    "make_policy",
    "run_request",
    "tool_specs",
]

_LAZY = {
    "CancelToken": ".cancel",
    "Cancelled": ".cancel",
    "AgentConfig": ".config",
    "HeuristicConfig": ".config",
    "Episode": ".episode",
    "POLICIES": ".factory",
    "make_policy": ".factory",
    "SearchAgent": ".loop",
    "fuse_traces": ".loop",
    "run_request": ".loop",
    "AgentRequest": ".request",
    "TOOL_NAMES": ".tool_specs",
    "tool_specs": ".tool_specs",
    "Evidence": ".trace",
    "ToolCall": ".trace",
    "Trace": ".trace",
    "Turn": ".trace",
}


__getattr__ = lazy_getattr(__name__, _LAZY)
