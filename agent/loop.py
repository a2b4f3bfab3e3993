"""The agent loop: a policy calls tools in a token-budgeted context until it finishes.

One loop serves the CLI, the HTTP server, evaluation and RL rollouts. Every episode returns a
:class:`~sieve.agent.trace.Trace`; hard caps (turns, tool calls, tokens, wall time) always end it
cleanly, and no model misbehaviour or tool failure escapes as an exception. A
:class:`~sieve.agent.cancel.CancelToken` stops an episode from outside (``stop_reason="cancelled"``)
at its next turn boundary, or sooner where the backend can abort its call.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sieve.agent.cancel import Cancelled
from sieve.agent.config import AgentConfig
from sieve.agent.prompts import SYSTEM_PROMPT, question_message
from sieve.agent.scoring import VectorCache
from sieve.agent.tools import ToolOutcome, Toolbox
from sieve.agent.trace import Evidence, ToolCall, Trace, Turn
from sieve.errors import BackendError
from sieve.pruning.budget import TokenBudget
from sieve.pruning.context import ContextState
from sieve.pruning.pruners import make_pruner
from sieve.retriever.base import validate_query
from sieve.retriever.hybrid import rrf_fuse

if TYPE_CHECKING:
    from collections.abc import Callable

    from sieve.agent.cancel import CancelToken
    from sieve.agent.policies.base import Policy
    from sieve.agent.tools import FinishRequest
    from sieve.pruning.context import ChunkEntry
    from sieve.retriever.index import CorpusIndex

logger = logging.getLogger(__name__)



@dataclass
class Episode:
    """Everything a policy may look at while deciding a turn."""

    question: str
    index: CorpusIndex
    config: AgentConfig
    context: ContextState
    budget: TokenBudget
    toolbox: Toolbox
    vectors: VectorCache
    tools: list[dict[str, Any]]
    seed: int = 0
    rollout: int = 0
    turn: int = 0
    last_outcomes: list[ToolOutcome] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)
    cancel: CancelToken | None = None  # backends that can abort a call in flight watch it


class SearchAgent:
    """Runs episodes of ``policy`` over ``index``.

    Example:
        >>> agent = SearchAgent(index, make_policy("heuristic"), AgentConfig())  # doctest: +SKIP
        >>> agent.run("Who founded the city the aircraft was named after?").returned_doc_ids  # doctest: +SKIP
    """

    def __init__(self, index: CorpusIndex, policy: Policy, config: AgentConfig | None = None) -> None:
        self.index = index
        self.policy = policy
        self.config = config or AgentConfig()
        self.vectors = VectorCache(index)  # shared by this agent's episodes: vectors never change per id

    # -- one episode ----------------------------------------------------------------------------
    def run(self, question: str, *, on_event: Callable[[dict[str, Any]], None] | None = None,
            seed: int | None = None, rollout: int = 0, where: dict[str, Any] | None = None,
            cancel: CancelToken | None = None) -> Trace:
        """Run one episode and return its trace (``trace.returned`` is the ranked evidence).

        ``cancel`` stops the episode at its next turn boundary (``stop_reason="cancelled"``).
        """
        from sieve.agent.tool_specs import tool_specs

        validate_query(question)
        cfg = self.config
        t0 = time.perf_counter()
        context = ContextState(self.policy.token_counter())
        budget = TokenBudget.from_config(cfg.budget_tokens, cfg.pruning)
        toolbox = Toolbox(self.index, context, budget, cfg, self.vectors, question, where=where)
        seed = cfg.seed + rollout if seed is None else seed
        episode = Episode(question=question, index=self.index, config=cfg, context=context, budget=budget,
                          toolbox=toolbox, vectors=self.vectors, tools=tool_specs(), seed=seed, rollout=rollout,
                          started=t0, cancel=cancel)
        trace = Trace(question=question, collection=self.index.name, policy=self.policy.name,
                      budget_tokens=cfg.budget_tokens, meta={"seed": seed, "rollout": rollout})
        context.add("system", SYSTEM_PROMPT)
        context.add("user", question_message(question))
        context.add("user", budget.notice(context.tokens()), kind="notice")
        emit = _Emitter(on_event)
        finish: FinishRequest | None = None
        stop = "max_turns"
        try:
            session = self.policy.start(episode)
        except BackendError as exc:
            session, stop = None, "backend_error"
            trace.meta["error"] = exc.message
        pruner = make_pruner(cfg.pruning)
        n_calls = 0
        for turn_i in range(cfg.max_turns if session is not None else 0):
            if cancel is not None and cancel.cancelled:
                stop = "cancelled"
                break
            if (time.perf_counter() - t0) > cfg.max_wall_s:
                stop = "timeout"
                break
            if trace.tokens_total >= cfg.max_total_tokens:
                stop = "max_tokens"
                break
            if n_calls >= cfg.max_tool_calls:
                stop = "max_tool_calls"
                break
            episode.turn = turn_i
            t_turn = time.perf_counter()
            prompt = context.view() if cfg.record_prompts else None
            try:
                step = session.step(episode)
            except Cancelled:  # the backend aborted its call: nobody wants this turn
                stop = "cancelled"
                break
            except BackendError as exc:
                stop = "backend_error"
                trace.meta["error"] = exc.message
                break
            except Exception as exc:  # a policy bug ends this episode, never the caller
                logger.exception("Policy %s failed", self.policy.name)
                stop = "backend_error"
                trace.meta["error"] = f"{type(exc).__name__}: {exc}"
                break
            turn = Turn(index=turn_i, completion=step.completion or step.text,
                        completion_tokens=step.completion_tokens, prompt_messages=prompt)
            trace.turns.append(turn)
            trace.tokens_total += (step.prompt_tokens or context.tokens()) + step.completion_tokens
            calls = list(step.tool_calls)
            if not calls:
                context.add("assistant", step.text)
                trace.answer = step.text.strip() or None
                stop = "no_tool_call"
                turn.context_tokens = context.tokens()
                turn.ms = (time.perf_counter() - t_turn) * 1000
                break
            for j, c in enumerate(calls):
                c.call_id = c.call_id or f"call_{turn_i}_{j}"
            allowed = max(0, min(cfg.max_calls_per_turn, cfg.max_tool_calls - n_calls))
            context.add("assistant", step.text, tool_calls=[c.to_openai() for c in calls])
            emit({"type": "action", "turn": turn_i, "tools": [c.name for c in calls],
                  "params": [c.arguments if c.arguments is not None else c.raw for c in calls]})
            outcomes = toolbox.run(calls[:allowed], turn_i)
            for c in calls[allowed:]:
                outcomes.append(self._over_cap(context, c, allowed))
            n_calls += len(calls)
            episode.last_outcomes = outcomes
            auto = pruner.select(context, budget)
            if auto:
                done, _, _ = context.prune(auto)
                trace.meta.setdefault("auto_pruned", []).extend(e.chunk_id for e in done)
            context.add("user", budget.notice(context.tokens()), kind="notice")
            turn.tool_calls = [self._record(context, o) for o in outcomes]
            turn.context_tokens = context.tokens()
            turn.ms = (time.perf_counter() - t_turn) * 1000
            trace.peak_context_tokens = max(trace.peak_context_tokens, turn.context_tokens)
            emit({"type": "observation", "turn": turn_i, "results": [_observation(context, o) for o in outcomes]})
            emit({"type": "usage", "turn": turn_i, "context_tokens": turn.context_tokens, "budget": budget.total,
                  "state": budget.state(turn.context_tokens), "tokens_total": trace.tokens_total})
            finish = next((o.finish for o in outcomes if o.finish is not None), None)
            if finish is not None:
                stop = "finished" if step.meta.get("stop_reason") is None else step.meta["stop_reason"]
                break
        trace.stop_reason = stop  # type: ignore[assignment]
        if stop == "cancelled" and cancel is not None:
            trace.meta["cancel_reason"] = cancel.reason
        trace.seen_chunk_ids = context.seen_ids
        trace.seen_doc_ids = list(dict.fromkeys(e.doc_id for e in context.chunks.values()))
        trace.pruned_chunk_ids = context.pruned_ids
        if finish is not None:
            trace.answer = finish.answer or trace.answer
            trace.returned = _evidence(finish.entries[: cfg.k])
        else:
            trace.returned = _evidence(self._fallback(context))
        trace.peak_context_tokens = max(trace.peak_context_tokens, context.tokens())
        if cfg.record_prompts:
            trace.meta["trajectory"] = context.full()  # every message unpruned: what scoring may read
        trace.wall_ms = (time.perf_counter() - t0) * 1000
        emit({"type": "done", "stop_reason": trace.stop_reason, "returned": trace.returned_chunk_ids,
              "wall_ms": round(trace.wall_ms, 1)})
        return trace

    def _fallback(self, context: ContextState) -> list[ChunkEntry]:
        """Without a finish call: the chunks still in view, most relevant to the question first."""
        return sorted(context.active(), key=lambda e: -e.relevance)[: self.config.k]

    @staticmethod
    def _over_cap(context: ContextState, call: Any, allowed: int) -> ToolOutcome:
        msg = f"Expected at most {allowed} tool calls this turn (per-turn or episode cap), got more; call skipped."
        context.add("tool", f"Error: {msg}", kind="tool", tool_call_id=call.call_id, name=call.name)
        return ToolOutcome(call=call, name=call.name, arguments=dict(call.arguments or {}), content=msg, error=msg)

    @staticmethod
    def _record(context: ContextState, o: ToolOutcome) -> ToolCall:
        return ToolCall(name=o.name or o.call.name, arguments=o.arguments if o.arguments else (o.call.arguments or {}),
                        call_id=o.call.call_id, error=o.error, malformed=o.malformed,
                        result_chunk_ids=[context.chunks[h].chunk_id for h in o.handles], result_tokens=o.tokens,
                        ms=round(o.ms, 2))

    # -- fused rollouts -------------------------------------------------------------------------
    def run_fused(self, question: str, rollouts: int | None = None, *,
                  on_event: Callable[[dict[str, Any]], None] | None = None,
                  where: dict[str, Any] | None = None, cancel: CancelToken | None = None) -> Trace:
        """``rollouts`` independent episodes in parallel, their ranked sets fused by reciprocal rank."""
        n = rollouts if rollouts is not None else self.config.rollouts
        if n < 1:
            raise ValueError(f"Expected rollouts >= 1, got {n}")
        if n == 1:
            return self.run(question, on_event=on_event, where=where, cancel=cancel)
        t0 = time.perf_counter()

        def one(i: int) -> Trace:
            cb = (lambda ev: on_event({**ev, "rollout": i})) if on_event else None
            return self.run(question, on_event=cb, rollout=i, where=where, cancel=cancel)

        with ThreadPoolExecutor(max_workers=n) as pool:
            traces = list(pool.map(one, range(n)))
        return fuse_traces(traces, k=self.config.k, rrf_k=self.config.rrf_k, wall_ms=(time.perf_counter() - t0) * 1000)


def fuse_traces(traces: list[Trace], *, k: int, rrf_k: int = 60, wall_ms: float = 0.0) -> Trace:
    """One trace from several rollouts: returned sets fused by RRF, turns concatenated, sets unioned."""
    fused_ids = rrf_fuse([t.returned_chunk_ids for t in traces], k=rrf_k)[:k]
    by_id = {e.chunk_id: e for t in traces for e in reversed(t.returned)}
    returned = []
    for rank, (cid, score) in enumerate(fused_ids, start=1):
        e = by_id[cid]
        returned.append(Evidence(chunk_id=cid, doc_id=e.doc_id, score=score, rank=rank, title=e.title,
                                 source=e.source, text=e.text, justification=e.justification,
                                 metadata={**e.metadata, "votes": sum(cid in t.returned_chunk_ids for t in traces)}))
    turns = []
    for t in traces:
        for turn in t.turns:
            turns.append(Turn(**{**turn.__dict__, "index": len(turns)}))
    first = traces[0]
    pruned_any = dict.fromkeys(c for t in traces for c in t.pruned_chunk_ids)
    answers = [t.answer for t in traces if t.answer]
    return Trace(
        question=first.question, collection=first.collection, policy=f"{first.policy}x{len(traces)}", turns=turns,
        seen_chunk_ids=list(dict.fromkeys(c for t in traces for c in t.seen_chunk_ids)),
        seen_doc_ids=list(dict.fromkeys(d for t in traces for d in t.seen_doc_ids)),
        pruned_chunk_ids=[c for c in pruned_any if c not in by_id], returned=returned,
        answer=answers[0] if answers else None,
        stop_reason="finished" if any(t.stop_reason in ("finished", "converged") for t in traces) else first.stop_reason,
        budget_tokens=first.budget_tokens, tokens_total=sum(t.tokens_total for t in traces),
        peak_context_tokens=max(t.peak_context_tokens for t in traces), wall_ms=wall_ms or max(t.wall_ms for t in traces),
        meta={"rollouts": [{"seed": t.meta.get("seed"), "stop_reason": t.stop_reason, "returned": t.returned_chunk_ids,
                            "turns": len(t.turns), "wall_ms": round(t.wall_ms, 1)} for t in traces]},
    )


def _evidence(entries: list[ChunkEntry]) -> list[Evidence]:
    out = []
    for rank, e in enumerate(entries, start=1):
        c = e.chunk
        out.append(Evidence(chunk_id=c.chunk_id, doc_id=c.doc_id, score=round(1.0 / rank, 6), rank=rank, title=c.title,
                            source=c.source, text=c.text,
                            metadata={"handle": e.handle, "relevance": round(e.relevance, 4), "tool": e.tool,
                                      "query": e.query, "pruned": e.pruned}))
    return out


def _observation(context: ContextState, o: ToolOutcome) -> dict[str, Any]:
    return {"tool": o.name, "handles": o.handles, "chunk_ids": [context.chunks[h].chunk_id for h in o.handles],
            "titles": [context.chunks[h].chunk.title for h in o.handles], "error": o.error, "tokens": o.tokens,
            "ms": round(o.ms, 1), "content": o.content}


class _Emitter:
    """Calls the user's event callback; a failing callback is logged, never fatal."""

    def __init__(self, callback: Callable[[dict[str, Any]], None] | None) -> None:
        self.callback = callback

    def __call__(self, event: dict[str, Any]) -> None:
        if self.callback is None:
            return
        try:
            self.callback(event)
        except Exception:  # a broken progress printer must not end a search
            logger.exception("on_event callback failed")


__all__ = ["Episode", "SearchAgent", "fuse_traces"]
