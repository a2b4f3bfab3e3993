"""The search agent: tools, a token-budgeted loop with pruning, policies, and the trace it yields."""

from sieve.agent.cancel import CancelToken, Cancelled
from sieve.agent.config import AgentConfig, HeuristicConfig
from sieve.agent.factory import POLICIES, make_policy
from sieve.agent.episode import Episode
from sieve.agent.loop import SearchAgent, fuse_traces
from sieve.agent.tool_specs import TOOL_NAMES, tool_specs
from sieve.agent.trace import Evidence, ToolCall, Trace, Turn

__all__ = [
    "POLICIES",
    "TOOL_NAMES",
    "AgentConfig",
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
    "tool_specs",
]
