"""The built-in tools' behaviour (search, grep, read, prune, finish) and the records a tool call fills in.

Each tool is two plain functions over a :class:`ToolHost` (the episode's toolbox): ``prepare``
(concurrent; reads the context and retrieves) and ``commit`` (sequential; shows chunks within
the budget, writes the message). :mod:`sieve.agent.tool_specs` pairs them with each tool's schema
and prompt line in one :class:`~sieve.agent.tool_specs.AgentTool`; :class:`~sieve.agent.tools.Toolbox`
runs them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sieve.agent.backends.base import ParsedToolCall
    from sieve.agent.config import AgentConfig
    from sieve.agent.vector_cache import VectorView
    from sieve.pruning.context import ChunkEntry, ContextState
    from sieve.retriever.index import CorpusIndex
    from sieve.retriever.types import Chunk


@dataclass
class Candidate:
    """A chunk a tool found, before packing."""

    chunk: Chunk
    score: float
    relevance: float  # cosine with the question


@dataclass
class FinishRequest:
    entries: list[ChunkEntry]
    answer: str | None = None
    unknown: list[str] = field(default_factory=list)


@dataclass
class ToolOutcome:
    """What one call did: the message for the model and the facts for the trace."""

    call: ParsedToolCall
    name: str
    arguments: dict[str, Any]
    content: str = ""
    handles: list[str] = field(default_factory=list)  # chunks newly shown
    error: str | None = None
    malformed: bool = False
    tokens: int = 0
    ms: float = 0.0
    finish: FinishRequest | None = None
    pruned: list[str] = field(default_factory=list)  # chunk ids pruned by this call


class ToolRejected(Exception):
    """A call that cannot run; becomes a tool error message (``malformed``: the model's fault)."""

    def __init__(self, message: str, malformed: bool) -> None:
        super().__init__(message)
        self.message = message
        self.malformed = malformed


@dataclass
class PreparedCall:
    """One call between its two phases: validated arguments and what ``prepare`` found."""

    call: ParsedToolCall
    name: str
    args: dict[str, Any]
    candidates: list[Candidate] = field(default_factory=list)
    note: str = ""
    dropped_filters: dict[str, Any] | None = None  # search: the model's filters matched nothing and were dropped
    error: ToolRejected | None = None
    ms: float = 0.0


class ToolHost(Protocol):
    """What a tool's ``prepare``/``commit`` may use of the episode's toolbox."""

    index: CorpusIndex
    context: ContextState
    config: AgentConfig
    vectors: VectorView
    question: str
    where: dict[str, Any] | None

    def check_text(self, name: str, key: str, value: str) -> str: ...
    def cap_k(self, p: PreparedCall, default: int, cap: int) -> int: ...
    def with_relevance(self, chunks: list[Chunk], scores: list[float]) -> list[Candidate]: ...
    def scoped_where(self, filters: dict[str, Any] | None) -> dict[str, Any] | None: ...
    def pack(self, p: PreparedCall, out: ToolOutcome, turn: int, k: int, header: str, query: str) -> None: ...


# -- prepare (concurrent; reads the context only) ----------------------------------------------
def prepare_search(box: ToolHost, p: PreparedCall) -> None:
    query = box.check_text("search", "query", p.args["query"])
    box.cap_k(p, box.config.search_k, box.config.search_k)
    filters = p.args.get("filters")
    seen = set(box.context.seen_ids)
    hits = box.index.search(
        query, box.config.search_candidates, mode="hybrid", where=box.scoped_where(filters), exclude=seen
    )
    if not hits and filters:
        # Small models invent filters ({"country": "USA"}) that no chunk carries, and then every
        # search of the episode comes back empty. A filter that matches nothing is dropped, and
        # the result says so; the caller's own ``where`` scope always stays.
        hits = box.index.search(query, box.config.search_candidates, mode="hybrid", where=box.where, exclude=seen)
        p.dropped_filters = filters if hits else None
    if not hits:
        return
    chunks = [h.chunk for h in hits]
    w = box.config.rescore_dense
    top = max(h.score for h in hits) or 1.0
    # Re-score the wide fused list: query-chunk cosine blended with the fused rank score.
    qcos = box.vectors.cosine(query, chunks) if w > 0 else [0.0] * len(chunks)
    scores = [w * float(c) + (1 - w) * h.score / top for h, c in zip(hits, qcos)]
    cands = box.with_relevance(chunks, scores)
    p.candidates = sorted(cands, key=lambda c: -c.score)


def prepare_grep(box: ToolHost, p: PreparedCall) -> None:
    pattern = box.check_text("grep", "pattern", p.args["pattern"])
    k = box.cap_k(p, box.config.grep_k, box.config.grep_k)
    hits = box.index.grep(pattern, k, where=box.where, exclude=set(box.context.seen_ids))
    cands = box.with_relevance([h.chunk for h in hits], [h.score for h in hits])
    p.candidates = sorted(cands, key=lambda c: -c.relevance)


def prepare_read(box: ToolHost, p: PreparedCall) -> None:
    ref = box.check_text("read", "id", p.args["id"]).strip()
    entry = box.context.resolve(ref)
    target = entry.chunk_id if entry is not None else ref
    window = p.args.get("window", box.config.read_window)
    if window < 0:
        raise ToolRejected(f"Expected window >= 0, got {window}", True)
    chunks = box.index.read(target, window)
    fresh = [c for c in chunks if not box.context.is_seen(c.chunk_id)]
    if not fresh:
        p.note = f"Every chunk of {ref} in that window is already in your context or was pruned."
        return
    cands = box.with_relevance(fresh, [1.0] * len(fresh))
    # Ranked by relevance so the cut to the remaining budget keeps the useful part.
    p.candidates = sorted(cands, key=lambda c: -c.relevance)


def prepare_prune(box: ToolHost, p: PreparedCall) -> None:
    if not p.args["ids"]:
        raise ToolRejected("Expected at least one handle to prune, got []", True)


def prepare_finish(box: ToolHost, p: PreparedCall) -> None:
    return None


# -- commit (sequential) -----------------------------------------------------------------------


def commit_search(box: ToolHost, p: PreparedCall, out: ToolOutcome, turn: int) -> None:
    k = p.args.get("k", box.config.search_k)
    header = f"search {p.args['query']!r}"
    if p.dropped_filters:
        header += (
            f" (no chunk matches filters {json.dumps(p.dropped_filters, ensure_ascii=False)}; "
            "showing results without them)"
        )
    box.pack(p, out, turn, k, header, p.args["query"])


def commit_grep(box: ToolHost, p: PreparedCall, out: ToolOutcome, turn: int) -> None:
    k = p.args.get("k", box.config.grep_k)
    box.pack(p, out, turn, k, f"grep {p.args['pattern']!r}", p.args["pattern"])


def commit_read(box: ToolHost, p: PreparedCall, out: ToolOutcome, turn: int) -> None:
    box.pack(p, out, turn, len(p.candidates) or 1, f"read {p.args['id']!r}", p.args["id"])


def commit_prune(box: ToolHost, p: PreparedCall, out: ToolOutcome, turn: int) -> None:
    before = box.context.tokens()
    done, unknown, already = box.context.prune(p.args["ids"])
    if not done and not already:
        raise ToolRejected(f"Expected handles shown in this episode (e.g. c3), got {unknown}", True)
    out.pruned = [e.chunk_id for e in done]
    freed = before - box.context.tokens()
    parts = [
        f"Pruned {len(done)} chunk{'s' if len(done) != 1 else ''}"
        + (f" ({', '.join(e.handle for e in done)}), freed {freed:,} tokens" if done else "")
    ]
    if already:
        parts.append(f"already pruned: {', '.join(e.handle for e in already)}")
    if unknown:
        parts.append(f"unknown ids ignored: {unknown}")
    out.content = "; ".join(parts) + "."


def commit_finish(box: ToolHost, p: PreparedCall, out: ToolOutcome, turn: int) -> None:
    entries: list[ChunkEntry] = []
    unknown: list[str] = []
    for ref in p.args["ids"]:
        e = box.context.resolve(ref)
        if e is None:
            unknown.append(ref)
        elif e not in entries:
            entries.append(e)
    answer = p.args.get("answer")
    out.finish = FinishRequest(entries=entries, answer=answer if isinstance(answer, str) else None, unknown=unknown)
    out.content = f"Finished with {len(entries)} evidence chunks." + (
        f" Unknown ids ignored: {unknown}." if unknown else ""
    )


__all__ = [
    "Candidate",
    "FinishRequest",
    "PreparedCall",
    "ToolHost",
    "ToolOutcome",
    "ToolRejected",
    "commit_finish",
    "commit_grep",
    "commit_prune",
    "commit_read",
    "commit_search",
    "prepare_finish",
    "prepare_grep",
    "prepare_prune",
    "prepare_read",
    "prepare_search",
]
