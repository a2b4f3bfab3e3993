"""Sieve's auxiliary penalties against known failure modes of search agents.

* **single-search collapse**: the policy learns to search once and stop (Context-1 added
  trajectory recall because of it; Search-R1 studies saw plateaus at 1–2 searches);
* **malformed tool calls**: unparseable JSON, unknown tools, invalid arguments;
* **pruning gold**: removing a chunk that was evidence;
* **repeating an identical query**: wasted turns (seen ids are excluded from later searches,
  so a repeat mostly returns worse chunks).

Each is a pure function returning a non-negative amount to subtract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sieve.agent.tool_specs import search_tools
from sieve.train.rewards.context1 import trajectory_recall

if TYPE_CHECKING:
    from sieve.agent.trace import ToolCall, Trace
    from sieve.train.rewards.gold import Gold

_QUERY_KEYS = ("query", "pattern", "q")


def collapse_penalty(trace: Trace, gold: Gold, weight: float = 0.5, max_searches: int = 1, level: str = "doc") -> float:
    """``weight`` when the episode ended after at most ``max_searches`` searches with gold still unseen."""
    if trace.n_searches <= max_searches and trajectory_recall(trace, gold, level) < 1.0:
        return weight
    return 0.0


def malformed_penalty(trace: Trace, weight: float = 0.1, cap: float = 0.5) -> float:
    """``weight`` per malformed tool call, capped."""
    return min(weight * trace.n_malformed, cap)


def pruned_gold(trace: Trace, gold: Gold) -> list[str]:
    """The gold chunks the agent pruned, in pruning order."""
    return [c for c in dict.fromkeys(trace.pruned_chunk_ids) if gold.is_gold_chunk(c)]


def gold_prune_penalty(trace: Trace, gold: Gold, weight: float = 0.2, cap: float = 0.6) -> float:
    """``weight`` per distinct gold chunk pruned, capped."""
    return min(weight * len(pruned_gold(trace, gold)), cap)


def query_of(call: ToolCall) -> str | None:
    """The normalised query of a search/grep call (None for other tools or missing arguments)."""
    if call.name not in search_tools() or call.malformed or not isinstance(call.arguments, dict):
        return None
    for key in _QUERY_KEYS:
        value = call.arguments.get(key)
        if isinstance(value, str) and value.strip():
            return " ".join(value.lower().split())
    return None


def repeated_queries(trace: Trace) -> int:
    """How many search/grep calls repeated an earlier identical (normalised) query of the same tool."""
    seen: set[tuple[str, str]] = set()
    repeats = 0
    for call in trace.tool_calls:
        q = query_of(call)
        if q is None:
            continue
        key = (call.name, q)
        if key in seen:
            repeats += 1
        seen.add(key)
    return repeats


def repeat_query_penalty(trace: Trace, weight: float = 0.1, cap: float = 0.5) -> float:
    """``weight`` per repeated identical query, capped."""
    return min(weight * repeated_queries(trace), cap)


__all__ = [
    "collapse_penalty",
    "gold_prune_penalty",
    "malformed_penalty",
    "pruned_gold",
    "query_of",
    "repeat_query_penalty",
    "repeated_queries",
]
