"""The agent's toolbox: the registered tools (:data:`sieve.agent.tool_specs.TOOLS`) run against one episode's context.

A turn's calls run in two phases. *Prepare* (concurrent, one thread per call) does the
retrieval work and only reads the context; *commit* (sequential, in call order) de-duplicates
against everything shown so far, packs results into the per-call and remaining token budget,
registers chunk handles and appends the tool message. So parallel searches of one turn never
show a chunk twice, and the budget is exact. Every failure becomes a tool error message the
model can read; nothing raises out of :meth:`Toolbox.run`.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from sieve.agent.builtin_tools import Candidate, FinishRequest, PreparedCall, ToolOutcome, ToolRejected
from sieve.agent.tool_specs import TOOLS, canonical_tool, over_budget_tools, validate_arguments
from sieve.core.errors import InvalidInput, NotFound, SieveError

if TYPE_CHECKING:
    from sieve.agent.backends.base import ParsedToolCall
    from sieve.agent.config import AgentConfig
    from sieve.agent.vector_cache import VectorView
    from sieve.pruning.budget import TokenBudget
    from sieve.pruning.context import ContextState
    from sieve.retriever.index import CorpusIndex
    from sieve.retriever.types import Chunk

logger = logging.getLogger(__name__)


class Toolbox:
    """Runs tool calls for one episode."""

    def __init__(
        self,
        index: CorpusIndex,
        context: ContextState,
        budget: TokenBudget,
        config: AgentConfig,
        vectors: VectorView,
        question: str,
        *,
        where: dict[str, Any] | None = None,
    ) -> None:
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
    def _prepare(self, call: ParsedToolCall) -> PreparedCall:
        t0 = time.perf_counter()
        name = canonical_tool(call.name)
        p = PreparedCall(call=call, name=name, args=dict(call.arguments or {}))
        try:
            if call.error is not None or call.arguments is None:
                raise ToolRejected(
                    call.error or f"Expected JSON arguments for {call.name}, got {call.raw[:200]!r}", True
                )
            tool = TOOLS.get(name)
            if tool is None:
                raise ToolRejected(f"Expected a tool in {list(TOOLS)}, got {call.name!r}", True)
            try:
                p.args = validate_arguments(name, call.arguments)
            except ValueError as exc:
                raise ToolRejected(str(exc), True) from None
            tool.prepare(self, p)
        except ToolRejected as exc:
            p.error = exc
        except InvalidInput as exc:
            p.error = ToolRejected(exc.message, True)
        except NotFound as exc:
            p.error = ToolRejected(exc.message, True)
        except SieveError as exc:
            p.error = ToolRejected(f"{name} failed: {exc.message}", False)
        except Exception as exc:  # a tool bug must not end the episode; the model is told, the log keeps it
            logger.exception("Tool %s failed", name)
            p.error = ToolRejected(
                f"{name} failed with an internal error ({type(exc).__name__}); try another call.", False
            )
        p.ms = (time.perf_counter() - t0) * 1000
        return p

    def check_text(self, name: str, key: str, value: str) -> str:
        if not value.strip():
            raise ToolRejected(f"Expected a non-empty {key} for {name}, got {value!r}", True)
        if len(value) > self.config.max_arg_chars:
            raise ToolRejected(
                f"Expected a {key} of at most {self.config.max_arg_chars} characters, got {len(value)}", True
            )
        return value

    def cap_k(self, p: PreparedCall, default: int, cap: int) -> int:
        k = p.args.get("k", default)
        if k < 1:
            raise ToolRejected(f"Expected k between 1 and {cap} for {p.name}, got {k}", True)
        if k > cap:  # asking for more is a wish, not an error: cap it and say so
            p.note = f"(k capped at {cap})"
            k = cap
        p.args["k"] = k
        return k

    def with_relevance(self, chunks: list[Chunk], scores: list[float]) -> list[Candidate]:
        rel = self.vectors.cosine(self.question, chunks)
        return [Candidate(c, s, float(r)) for c, s, r in zip(chunks, scores, rel)]

    def scoped_where(self, filters: dict[str, Any] | None) -> dict[str, Any] | None:
        if not filters:
            return self.where
        return filters if self.where is None else {"$and": [self.where, filters]}

    # -- commit (sequential) --------------------------------------------------------------------
    def _commit(self, p: PreparedCall, turn: int) -> ToolOutcome:
        t0 = time.perf_counter()
        out = ToolOutcome(call=p.call, name=p.name, arguments=p.args)
        try:
            if p.error is not None:
                raise p.error
            rejection = self.budget.rejection(p.name, self.context.tokens(), allowed=over_budget_tools())
            if rejection:
                raise ToolRejected(rejection, False)
            TOOLS[p.name].commit(self, p, out, turn)
        except ToolRejected as exc:
            out.error, out.malformed = exc.message, exc.malformed
            out.content = f"Error: {exc.message}"
        except Exception as exc:  # see _prepare: never let a tool bug escape the loop
            logger.exception("Tool %s failed while committing", p.name)
            out.error = f"{p.name} failed with an internal error ({type(exc).__name__})"
            out.content = f"Error: {out.error}"
        msg = self.context.add(
            "tool", out.content, kind="tool", chunk_handles=out.handles, tool_call_id=p.call.call_id, name=p.name
        )
        out.tokens = msg.fixed_tokens + sum(self.context.chunks[h].tokens for h in out.handles)
        out.ms = p.ms + (time.perf_counter() - t0) * 1000
        return out

    def pack(self, p: PreparedCall, out: ToolOutcome, turn: int, k: int, header: str, query: str) -> None:
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
            entry = self.context.register(
                cand.chunk, relevance=cand.relevance, score=cand.score, tool=p.name, query=query, turn=turn, text=text
            )
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


__all__ = ["Candidate", "FinishRequest", "PreparedCall", "ToolOutcome", "ToolRejected", "Toolbox"]
