"""The structured trajectory of one agent episode.

One object feeds everything downstream: the CLI step log, eval metrics and RL rewards read the
same ``Trace``; there is no second code path. ``seen_chunk_ids`` is the full, unpruned record of
every chunk shown to the model (trajectory recall is computed from it even after pruning);
``returned`` is the ranked evidence set the episode ended with.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

StopReason = Literal[
    "finished",  # the model called finish
    "no_tool_call",  # the model answered in plain text without calling a tool
    "max_turns",
    "max_tool_calls",
    "max_tokens",
    "timeout",
    "backend_error",
    "converged",  # no-LLM policy: new searches stopped adding relevant chunks
    "cancelled",  # stopped from outside (CancelToken): a client that left, a deadline
    "truncated",  # the model's turn ran out of tokens (finish_reason=length) with no tool call, even when retried
]


@dataclass
class ToolCall:
    """One tool call as the model issued it, and what the harness did with it."""

    name: str
    arguments: dict[str, Any]
    call_id: str = ""
    error: str | None = None  # the message given back to the model when the call failed
    malformed: bool = False  # unparseable JSON, unknown tool or invalid arguments
    result_chunk_ids: list[str] = field(default_factory=list)  # chunks newly shown by this call
    result_tokens: int = 0
    ms: float = 0.0


@dataclass
class Turn:
    """One model turn: what it saw (optionally), what it wrote and which tools ran."""

    index: int
    completion: str = ""  # raw text the model produced this turn (tool calls included)
    reasoning: str = ""  # the model's reasoning this turn (reasoning_content, or harmony's analysis channel)
    completion_tokens: int = 0
    context_tokens: int = 0  # tokens in the model's (pruned) view after this turn
    tool_calls: list[ToolCall] = field(default_factory=list)
    # The prompt exactly as the model saw it this turn (chat messages). Recorded only when asked
    # (RL trains on per-turn segments), since it makes traces large.
    prompt_messages: list[dict[str, Any]] | None = None
    ms: float = 0.0
    # What the policy reported about this turn (PolicyStep.meta), e.g. the learned policy's
    # decisions with their log-probabilities, or an LLM's finish reason.
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Evidence:
    """One item of the ranked evidence set an episode returns.

    ``score`` never rises with ``rank``. With the floor on (the default) it is the merged score
    of :func:`~sieve.agent.ranking.floor.fuse_with_floor`; with it off, the policy's own evidence score
    (the heuristic's), the chunk's cosine with the question (an episode that ended without
    ``finish``), or the reciprocal-rank weight of its place (a policy that orders but does not score).
    """

    chunk_id: str
    doc_id: str
    score: float
    rank: int
    title: str = ""
    source: str = ""
    text: str = ""
    justification: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Trace:
    question: str
    collection: str = "default"
    policy: str = ""
    turns: list[Turn] = field(default_factory=list)
    seen_chunk_ids: list[str] = field(default_factory=list)  # every chunk ever shown, in order
    seen_doc_ids: list[str] = field(default_factory=list)
    pruned_chunk_ids: list[str] = field(default_factory=list)
    returned: list[Evidence] = field(default_factory=list)
    answer: str | None = None
    # The answer's citations in order of first mention: {"handle": "c1", "chunk_id", "doc_id", "title"}
    # for each [c1]-style handle the answer names (handles that name no chunk seen are left out).
    citations: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: StopReason = "finished"
    budget_tokens: int = 0
    tokens_total: int = 0  # prompt + completion tokens processed over the episode
    peak_context_tokens: int = 0
    wall_ms: float = 0.0
    # What the caller must know about how the episode went wrong (a policy that never called a
    # tool, a backend that failed): the returned set is then the floor's, and says so here.
    warnings: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    # Derived counts, so that eval and rewards agree on their definitions.
    @property
    def tool_calls(self) -> list[ToolCall]:
        return [c for t in self.turns for c in t.tool_calls]

    @property
    def n_searches(self) -> int:
        from sieve.agent.tool_specs import search_tools  # lazy: the tools' registry needs no trace

        searching = search_tools()
        return sum(1 for c in self.tool_calls if c.name in searching and not c.malformed)

    @property
    def n_prune_calls(self) -> int:
        return sum(1 for c in self.tool_calls if c.name == "prune" and not c.malformed)

    @property
    def n_malformed(self) -> int:
        return sum(1 for c in self.tool_calls if c.malformed)

    @property
    def returned_chunk_ids(self) -> list[str]:
        return [e.chunk_id for e in self.returned]

    @property
    def returned_doc_ids(self) -> list[str]:
        """Returned documents in rank order, de-duplicated (first occurrence wins)."""
        return list(dict.fromkeys(e.doc_id for e in self.returned))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trace:
        data = dict(data)
        turns = []
        for t in data.pop("turns", []):
            t = dict(t)
            t["tool_calls"] = [ToolCall(**c) for c in t.get("tool_calls", [])]
            turns.append(Turn(**t))
        returned = [Evidence(**e) for e in data.pop("returned", [])]
        return cls(turns=turns, returned=returned, **data)


__all__ = ["Evidence", "StopReason", "ToolCall", "Trace", "Turn"]
