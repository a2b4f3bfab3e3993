"""The agent's tools: search, grep, read, prune, finish, executed against one episode's context.

A turn's calls run in two phases. *Prepare* (concurrent, one thread per call) does the
retrieval work and only reads the context; *commit* (sequential, in call order) de-duplicates
against everything shown so far, packs results into the per-call and remaining token budget,
registers chunk handles and appends the tool message. So parallel searches of one turn never
show a chunk twice, and the budget is exact. Every failure becomes a tool error message the
model can read; nothing raises out of :meth:`Toolbox.run`.
"""

from __future__ import annotations

import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sieve.agent.tool_specs import TOOL_NAMES, canonical_tool, validate_arguments
from sieve.errors import InvalidInput, NotFound, SieveError

if TYPE_CHECKING:
    from sieve.agent.backends.base import ParsedToolCall
    from sieve.agent.config import AgentConfig
    from sieve.agent.vector_cache import VectorView
    from sieve.pruning.budget import TokenBudget
    from sieve.pruning.context import ChunkEntry, ContextState
    from sieve.retriever.index import CorpusIndex
    from sieve.retriever.types import Chunk

logger = logging.getLogger(__name__)


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


class _Reject(Exception):
    """Internal: a call that cannot run; becomes a tool error message."""

    def __init__(self, message: str, malformed: bool) -> None:
        super().__init__(message)
        self.message = message
        self.malformed = malformed


@dataclass
class _Prepared:
    call: ParsedToolCall
    name: str
    args: dict[str, Any]
    candidates: list[Candidate] = field(default_factory=list)
    note: str = ""
    dropped_filters: dict[str, Any] | None = None  # search: the model's filters matched nothing and were dropped
    error: _Reject | None = None
    ms: float = 0.0


class Toolbox:
    """Runs tool calls for one episode."""

    def __init__(self, index: CorpusIndex, context: ContextState, budget: TokenBudget, config: AgentConfig,
                 vectors: VectorView, question: str, *, where: dict[str, Any] | None = None) -> None:
        self.index = index
        self.context = context
        self.budget = budget
        self.config = config
        self.vectors = vectors
        self.question = question
        self.where = where

    # -- public ---------------------------------------------------------------------------------
    def run(self, calls: list[ParsedToolCall], turn: int) -> list[ToolOutcome]:
        """Execute one turn's calls: prepare concurrently, commit in order. Never raises."""
        if not calls:
            return []
        if len(calls) == 1 or self.config.tool_workers == 1:
            prepared = [self._prepare(c) for c in calls]
        else:
            with ThreadPoolExecutor(max_workers=min(self.config.tool_workers, len(calls))) as pool:
                prepared = list(pool.map(self._prepare, calls))
        return [self._commit(p, turn) for p in prepared]

    # -- prepare (concurrent; reads the context only) -----------------------------------------
    def _prepare(self, call: ParsedToolCall) -> _Prepared:
        t0 = time.perf_counter()
        name = canonical_tool(call.name)
        p = _Prepared(call=call, name=name, args=dict(call.arguments or {}))
        try:
            if call.error is not None or call.arguments is None:
                raise _Reject(call.error or f"Expected JSON arguments for {call.name}, got {call.raw[:200]!r}", True)
            if name not in TOOL_NAMES:
                raise _Reject(f"Expected a tool in {list(TOOL_NAMES)}, got {call.name!r}", True)
            try:
                p.args = validate_arguments(name, call.arguments)
            except ValueError as exc:
                raise _Reject(str(exc), True) from None
            getattr(self, f"_prepare_{name}")(p)
        except _Reject as exc:
            p.error = exc
        except InvalidInput as exc:
            p.error = _Reject(exc.message, True)
        except NotFound as exc:
            p.error = _Reject(exc.message, True)
        except SieveError as exc:
            p.error = _Reject(f"{name} failed: {exc.message}", False)
        except Exception as exc:  # a tool bug must not end the episode; the model is told, the log keeps it
            logger.exception("Tool %s failed", name)
            p.error = _Reject(f"{name} failed with an internal error ({type(exc).__name__}); try another call.", False)
        p.ms = (time.perf_counter() - t0) * 1000
        return p

    def _check_text(self, name: str, key: str, value: str) -> str:
        if not value.strip():
            raise _Reject(f"Expected a non-empty {key} for {name}, got {value!r}", True)
        if len(value) > self.config.max_arg_chars:
            raise _Reject(f"Expected a {key} of at most {self.config.max_arg_chars} characters, got {len(value)}", True)
        return value

    def _k(self, p: _Prepared, default: int, cap: int) -> int:
        k = p.args.get("k", default)
        if k < 1:
            raise _Reject(f"Expected k between 1 and {cap} for {p.name}, got {k}", True)
        if k > cap:  # asking for more is a wish, not an error: cap it and say so
            p.note = f"(k capped at {cap})"
            k = cap
        p.args["k"] = k
        return k

    def _with_relevance(self, chunks: list[Chunk], scores: list[float]) -> list[Candidate]:
        rel = self.vectors.cosine(self.question, chunks)
        return [Candidate(c, s, float(r)) for c, s, r in zip(chunks, scores, rel)]

    def _where(self, filters: dict[str, Any] | None) -> dict[str, Any] | None:
        if not filters:
            return self.where
        return filters if self.where is None else {"$and": [self.where, filters]}

    def _prepare_search(self, p: _Prepared) -> None:
        query = self._check_text("search", "query", p.args["query"])
        self._k(p, self.config.search_k, self.config.search_k)
        filters = p.args.get("filters")
        seen = set(self.context.seen_ids)
        hits = self.index.search(query, self.config.search_candidates, mode="hybrid",
                                 where=self._where(filters), exclude=seen)
        if not hits and filters:
            # Small models invent filters ({"country": "USA"}) that no chunk carries, and then every
            # search of the episode comes back empty. A filter that matches nothing is dropped, and
            # the result says so; the caller's own ``where`` scope always stays.
            hits = self.index.search(query, self.config.search_candidates, mode="hybrid", where=self.where,
                                     exclude=seen)
            p.dropped_filters = filters if hits else None
        if not hits:
            return
        chunks = [h.chunk for h in hits]
        w = self.config.rescore_dense
        top = max(h.score for h in hits) or 1.0
        # Re-score the wide fused list: query-chunk cosine blended with the fused rank score.
        qcos = self.vectors.cosine(query, chunks) if w > 0 else [0.0] * len(chunks)
        scores = [w * float(c) + (1 - w) * h.score / top for h, c in zip(hits, qcos)]
        cands = self._with_relevance(chunks, scores)
        p.candidates = sorted(cands, key=lambda c: -c.score)

    def _prepare_grep(self, p: _Prepared) -> None:
        pattern = self._check_text("grep", "pattern", p.args["pattern"])
        k = self._k(p, self.config.grep_k, self.config.grep_k)
        hits = self.index.grep(pattern, k, where=self.where, exclude=set(self.context.seen_ids))
        cands = self._with_relevance([h.chunk for h in hits], [h.score for h in hits])
        p.candidates = sorted(cands, key=lambda c: -c.relevance)

    def _prepare_read(self, p: _Prepared) -> None:
        ref = self._check_text("read", "id", p.args["id"]).strip()
        entry = self.context.resolve(ref)
        target = entry.chunk_id if entry is not None else ref
        window = p.args.get("window", self.config.read_window)
        if window < 0:
            raise _Reject(f"Expected window >= 0, got {window}", True)
        chunks = self.index.read(target, window)
        fresh = [c for c in chunks if not self.context.is_seen(c.chunk_id)]
        if not fresh:
            p.note = f"Every chunk of {ref} in that window is already in your context or was pruned."
            return
        cands = self._with_relevance(fresh, [1.0] * len(fresh))
        # Ranked by relevance so the cut to the remaining budget keeps the useful part.
        p.candidates = sorted(cands, key=lambda c: -c.relevance)

    def _prepare_prune(self, p: _Prepared) -> None:
        if not p.args["ids"]:
            raise _Reject("Expected at least one handle to prune, got []", True)

    def _prepare_finish(self, p: _Prepared) -> None:
        return None

    # -- commit (sequential) --------------------------------------------------------------------
    def _commit(self, p: _Prepared, turn: int) -> ToolOutcome:
        t0 = time.perf_counter()
        out = ToolOutcome(call=p.call, name=p.name, arguments=p.args)
        try:
            if p.error is not None:
                raise p.error
            rejection = self.budget.rejection(p.name, self.context.tokens())
            if rejection:
                raise _Reject(rejection, False)
            getattr(self, f"_commit_{p.name}")(p, out, turn)
        except _Reject as exc:
            out.error, out.malformed = exc.message, exc.malformed
            out.content = f"Error: {exc.message}"
        except Exception as exc:  # see _prepare: never let a tool bug escape the loop
            logger.exception("Tool %s failed while committing", p.name)
            out.error = f"{p.name} failed with an internal error ({type(exc).__name__})"
            out.content = f"Error: {out.error}"
        msg = self.context.add("tool", out.content, kind="tool", chunk_handles=out.handles,
                               tool_call_id=p.call.call_id, name=p.name)
        out.tokens = msg.fixed_tokens + sum(self.context.chunks[h].tokens for h in out.handles)
        out.ms = p.ms + (time.perf_counter() - t0) * 1000
        return out

    def _pack(self, p: _Prepared, out: ToolOutcome, turn: int, k: int, header: str, query: str) -> None:
        """Show up to ``k`` unseen candidates within the per-call and remaining budget."""
        used = self.context.tokens() + self.context.counter.count(header) + 8
        room = min(self.config.search_tokens, self.budget.remaining(used))
        spent = 0
        skipped_seen = 0
        for cand in p.candidates:
            if len(out.handles) >= k:
                break
            if self.context.is_seen(cand.chunk.chunk_id):
                skipped_seen += 1  # shown by an earlier call of this same turn
                continue
            need = self.context.block_tokens(cand.chunk, self.context.next_handle())
            text = None
            if spent + need > room:
                if out.handles:
                    break
                # Not even one chunk fits: show a truncated one rather than nothing.
                keep = max(0, room - spent - (need - self.context.counter.count(cand.chunk.text)))
                if keep < 16:
                    break
                text = cand.chunk.text[: keep * 4].rsplit(" ", 1)[0] + " …"
            entry = self.context.register(cand.chunk, relevance=cand.relevance, score=cand.score, tool=p.name,
                                          query=query, turn=turn, text=text)
            spent += entry.tokens
            out.handles.append(entry.handle)
        n = len(out.handles)
        capped = p.note if p.note.startswith("(k capped") else ""
        if capped:
            header = f"{header} {capped}"
        if n:
            out.content = f"{header}: {n} new chunk{'s' if n != 1 else ''}."
        elif p.note and not capped:
            out.content = p.note
        elif p.candidates and room < 16:
            out.content = f"{header}: no room left in the context budget; prune chunks or finish."
        else:
            out.content = f"{header}: no new chunks (results already shown are excluded). Try a different query."

    def _commit_search(self, p: _Prepared, out: ToolOutcome, turn: int) -> None:
        k = p.args.get("k", self.config.search_k)
        header = f"search {p.args['query']!r}"
        if p.dropped_filters:
            header += (f" (no chunk matches filters {json.dumps(p.dropped_filters, ensure_ascii=False)}; "
                       "showing results without them)")
        self._pack(p, out, turn, k, header, p.args["query"])

    def _commit_grep(self, p: _Prepared, out: ToolOutcome, turn: int) -> None:
        k = p.args.get("k", self.config.grep_k)
        self._pack(p, out, turn, k, f"grep {p.args['pattern']!r}", p.args["pattern"])

    def _commit_read(self, p: _Prepared, out: ToolOutcome, turn: int) -> None:
        self._pack(p, out, turn, len(p.candidates) or 1, f"read {p.args['id']!r}", p.args["id"])

    def _commit_prune(self, p: _Prepared, out: ToolOutcome, turn: int) -> None:
        before = self.context.tokens()
        done, unknown, already = self.context.prune(p.args["ids"])
        if not done and not already:
            raise _Reject(f"Expected handles shown in this episode (e.g. c3), got {unknown}", True)
        out.pruned = [e.chunk_id for e in done]
        freed = before - self.context.tokens()
        parts = [f"Pruned {len(done)} chunk{'s' if len(done) != 1 else ''}"
                 + (f" ({', '.join(e.handle for e in done)}), freed {freed:,} tokens" if done else "")]
        if already:
            parts.append(f"already pruned: {', '.join(e.handle for e in already)}")
        if unknown:
            parts.append(f"unknown ids ignored: {unknown}")
        out.content = "; ".join(parts) + "."

    def _commit_finish(self, p: _Prepared, out: ToolOutcome, turn: int) -> None:
        entries: list[ChunkEntry] = []
        unknown: list[str] = []
        for ref in p.args["ids"]:
            e = self.context.resolve(ref)
            if e is None:
                unknown.append(ref)
            elif e not in entries:
                entries.append(e)
        answer = p.args.get("answer")
        out.finish = FinishRequest(entries=entries, answer=answer if isinstance(answer, str) else None, unknown=unknown)
        out.content = f"Finished with {len(entries)} evidence chunks." + (
            f" Unknown ids ignored: {unknown}." if unknown else "")


__all__ = ["Candidate", "FinishRequest", "ToolOutcome", "Toolbox"]
