"""The agent loop: a policy calls tools in a token-budgeted context until it finishes.

One loop serves the CLI, the HTTP server, evaluation and RL rollouts. Every episode returns a
:class:`~sieve.agent.trace.Trace`; hard caps (turns, tool calls, tokens, wall time) always end it
cleanly, and no model misbehaviour or tool failure escapes as an exception.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sieve.agent.backends.tokens import counter_label
from sieve.agent.cancel import Cancelled
from sieve.agent.citations import resolve_citations
from sieve.agent.config import AgentConfig
from sieve.agent.episode import Episode
from sieve.agent.factory import adopted_config, make_policy
from sieve.agent.prompts import question_message, system_prompt
from sieve.agent.ranking.features import ClosingPool, question_cover, question_weights
from sieve.agent.ranking.floor import floor_hits, fuse_with_floor, hit_evidence
from sieve.agent.ranking.model import Ranker, fuse
from sieve.agent.tool_specs import tool_specs
from sieve.agent.tools import ToolOutcome, Toolbox
from sieve.agent.trace import Evidence, ToolCall, Trace, Turn
from sieve.agent.vector_cache import VectorCache
from sieve.core.errors import BackendError
from sieve.pruning.budget import TokenBudget
from sieve.pruning.context import ContextState
from sieve.pruning.pruners import make_pruner
from sieve.retriever.base import validate_query
from sieve.retriever.hybrid import rrf_fuse

if TYPE_CHECKING:
    from collections.abc import Callable

    from sieve.agent.backends.base import ChatBackend, ParsedToolCall
    from sieve.agent.cancel import CancelToken
    from sieve.agent.policies.base import Policy, PolicySession, PolicyStep
    from sieve.agent.request import AgentRequest
    from sieve.agent.tools import FinishRequest
    from sieve.agent.trace import StopReason
    from sieve.pruning.context import ChunkEntry
    from sieve.retriever.index import CorpusIndex

logger = logging.getLogger(__name__)

# Every question the closing ranking was fitted on has words its corpus holds; without one, its
# word features are blank and its probabilities mean nothing ("the of and" scored 0.84).
NO_MATCHING_WORDS = (
    "No word of the question occurs in this collection (only common words, or words no chunk holds): "
    "the evidence is ranked by meaning alone and its scores are not calibrated."
)


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
        floor = self.config.floor
        # Loaded once per agent: a bad model path fails here, before any episode.
        # An explicit fusion_path wins; else a retrained policy's own ranker (sieve train), else the shipped one.
        fusion_path = floor.fusion_path or getattr(policy, "ranker_path", None)
        self.ranker = Ranker.load(fusion_path) if floor.enabled and floor.method == "fusion" else None

    @classmethod
    def with_policy(
        cls, index: CorpusIndex, policy: str, config: AgentConfig | None = None, *, backend: ChatBackend | None = None
    ) -> SearchAgent:
        """An agent running the policy registered as ``policy``, built from ``config`` (the usual way to make one).

        Example:
            >>> agent = SearchAgent.with_policy(index, "heuristic")  # doctest: +SKIP
        """
        config = adopted_config(index, config or AgentConfig())  # the collection's adopted run, if any
        return cls(index, make_policy(policy, config, backend=backend), config)

    # -- one episode ----------------------------------------------------------------------------
    def run(
        self,
        question: str,
        *,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        seed: int | None = None,
        rollout: int = 0,
        where: dict[str, Any] | None = None,
        cancel: CancelToken | None = None,
        group_by_doc: bool | None = None,
    ) -> Trace:
        """Run one episode and return its trace (``trace.returned`` is the ranked evidence).

        ``cancel`` stops the episode at its next turn boundary (``stop_reason="cancelled"``).
        ``group_by_doc`` (default ``config.group_by_doc``) returns each document's best chunk only.
        """
        validate_query(question)
        seed = self.config.seed + rollout if seed is None else seed
        emit = _Emitter(on_event)
        trace = _EpisodeRun(
            self, question, seed=seed, rollout=rollout, where=where, emit=emit, cancel=cancel, group_by_doc=group_by_doc
        ).play()
        return self._done(self.floor(trace, where=where, group_by_doc=group_by_doc), emit)

    def _episode(
        self,
        question: str,
        rollout: int,
        where: dict[str, Any] | None,
        on_event: Callable[[dict[str, Any]], None] | None,
        cancel: CancelToken | None,
        group_by_doc: bool | None = None,
    ) -> Trace:
        """One rollout of :meth:`run_fused`: the policy's own set; the floor applies once, to the fusion."""
        emit = _Emitter(on_event)
        trace = _EpisodeRun(
            self,
            question,
            seed=self.config.seed + rollout,
            rollout=rollout,
            where=where,
            emit=emit,
            cancel=cancel,
            group_by_doc=group_by_doc,
        ).play()
        return self._done(trace, emit)

    # -- the floor ------------------------------------------------------------------------------
    def floor(self, trace: Trace, *, where: dict[str, Any] | None = None, group_by_doc: bool | None = None) -> Trace:
        """``trace`` with its returned set merged with the question's hybrid ranking.

        With ``floor.method="fusion"`` (the default) the pool of the policy's chunks and the
        question's hybrid chunks is ranked by the learned ranker (:mod:`sieve.agent.ranking.model`);
        with ``"interleave"`` the two rankings are interleaved per document (:mod:`sieve.agent.ranking.floor`).
        The policy's own ranking stays in ``trace.meta["policy_returned"]``; with the floor off
        (``config.floor.enabled``) the trace keeps the policy's ranking (grouped when asked).
        """
        cfg = self.config.floor
        k = self.config.k
        grouped = self.config.group_by_doc if group_by_doc is None else group_by_doc
        if not question_weights(trace.question, self.index.bm25_index().doc_share):
            trace.warnings.append(NO_MATCHING_WORDS)
        trace.meta["floor"] = cfg.enabled
        trace.meta["policy_returned"] = trace.returned_chunk_ids
        trace.meta["group_by_doc"] = grouped
        if not cfg.enabled:
            if grouped:
                trace.returned = _one_per_doc(trace.returned, k)
            return trace
        t0 = time.perf_counter()
        if self.ranker is not None:
            closing = self.closing_pool(trace.question, trace.returned, where=where)
            hybrid = closing.hybrid
            trace.returned = fuse(
                trace.returned,
                closing,
                self.ranker,
                k,
                group_by_doc=grouped,
                doc_decay=cfg.doc_decay,
                head_cap=cfg.head_cap,
                speaker_discount=cfg.speaker_discount,
                question=trace.question,
            )
        else:
            hybrid = [hit_evidence(h) for h in floor_hits(self.index, trace.question, k, where)]
            trace.returned = fuse_with_floor(trace.returned, hybrid, cfg, k)
            if grouped:
                trace.returned = _one_per_doc(trace.returned, k)
        # The floor's search is a real retrieval of this episode: what it showed counts as seen.
        trace.seen_chunk_ids = list(dict.fromkeys([*trace.seen_chunk_ids, *(e.chunk_id for e in hybrid)]))
        trace.seen_doc_ids = list(dict.fromkeys([*trace.seen_doc_ids, *(e.doc_id for e in hybrid)]))
        trace.wall_ms += (time.perf_counter() - t0) * 1000
        return trace

    def closing_pool(
        self,
        question: str,
        returned: list[Evidence],
        *,
        where: dict[str, Any] | None = None,
    ) -> ClosingPool:
        """What the ranker ranks beside the policy's ``returned`` chunks: the question's hybrid
        ranking (``floor.hybrid_depth`` chunks, at least ``k``), every pool chunk's cosine with the
        question and its cover of the question's words, and the pool's chunks by id (serving and
        ``sieve.train.ranking`` share this)."""
        depth = min(max(self.config.floor.hybrid_depth, self.config.k), self.index.config.max_k)
        hits = self.index.search(question, depth, mode="hybrid", where=where)
        chunks = {h.chunk_id: h.chunk for h in hits}
        missing = [e.chunk_id for e in returned if e.chunk_id not in chunks]
        chunks.update({c.chunk_id: c for c in self.index.get_chunks(missing)} if missing else {})
        cos = (
            dict(zip(chunks, (float(v) for v in self.vectors.cosine(question, list(chunks.values())))))
            if chunks
            else {}
        )
        cover = question_cover(question, chunks, self.index.bm25_index().doc_share)
        return ClosingPool([hit_evidence(h) for h in hits], cos, cover, chunks)

    @staticmethod
    def _done(trace: Trace, emit: _Emitter) -> Trace:
        for warning in trace.warnings:
            logger.warning("%s", warning)
        emit(
            {
                "type": "done",
                "stop_reason": trace.stop_reason,
                "returned": trace.returned_chunk_ids,
                "wall_ms": round(trace.wall_ms, 1),
                "warnings": list(trace.warnings),
            }
        )
        return trace

    # -- fused rollouts -------------------------------------------------------------------------
    def run_fused(
        self,
        question: str,
        rollouts: int | None = None,
        *,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        where: dict[str, Any] | None = None,
        cancel: CancelToken | None = None,
        group_by_doc: bool | None = None,
    ) -> Trace:
        """``rollouts`` independent episodes in parallel, their ranked sets fused by reciprocal rank, then floored."""
        n = rollouts if rollouts is not None else self.config.rollouts
        if n < 1:
            raise ValueError(f"Expected rollouts >= 1, got {n}")
        if n == 1:
            return self.run(question, on_event=on_event, where=where, cancel=cancel, group_by_doc=group_by_doc)
        t0 = time.perf_counter()

        validate_query(question)

        def one(i: int) -> Trace:
            cb = (lambda ev: on_event({**ev, "rollout": i})) if on_event else None
            return self._episode(question, i, where, cb, cancel, group_by_doc)

        with ThreadPoolExecutor(max_workers=n) as pool:
            traces = list(pool.map(one, range(n)))
        fused = fuse_traces(traces, k=self.config.k, rrf_k=self.config.rrf_k, wall_ms=(time.perf_counter() - t0) * 1000)
        return self.floor(fused, where=where, group_by_doc=group_by_doc)


def run_request(
    index: CorpusIndex,
    request: AgentRequest,
    *,
    policy: Policy | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    cancel: CancelToken | None = None,
) -> Trace:
    """Run ``request`` as its door built it (``sieve search``, ``Sieve.search``, the server): its config
    (``k``, caps, ``rollouts``, ``group_by_doc``), its filter, and its policy, built by name with the
    collection's adopted run, unless ``policy`` is one the caller built already (a server's, cached per app).

    Nothing is resolved or checked again here: the request was, once, when it was made.
    """
    if policy is None:
        agent = SearchAgent.with_policy(index, request.policy, request.config)
    else:
        agent = SearchAgent(index, policy, request.config)
    return agent.run_fused(request.query, on_event=on_event, where=request.where, cancel=cancel)


class _EpisodeRun:
    """One episode in motion. :meth:`play` is the loop; each part of a turn is a method of its own.

    Per turn: check the hard caps, ask the policy for a step (a failing policy ends the episode,
    never the caller), run its tool calls within the per-turn and episode caps, let the automatic
    pruner free room, post the budget notice, record the turn and stream its events. The episode
    ends on a ``finish`` call, a plain-text answer, a cap or a policy error; without ``finish``
    the evidence is the chunks still in view, most relevant first.
    """

    def __init__(
        self,
        agent: SearchAgent,
        question: str,
        *,
        seed: int,
        rollout: int,
        where: dict[str, Any] | None,
        emit: _Emitter,
        cancel: CancelToken | None = None,
        group_by_doc: bool | None = None,
    ) -> None:
        cfg = agent.config
        if group_by_doc is not None and group_by_doc != cfg.group_by_doc:
            # The unit asked for reaches the policy too: one that ranks its own evidence (the
            # learned policy) returns one chunk per document first only when documents are asked for.
            cfg = replace(cfg, group_by_doc=group_by_doc)
        self.config = cfg
        self.started = time.perf_counter()
        self.policy = agent.policy
        self.context = ContextState(agent.policy.token_counter())
        self.budget = TokenBudget.from_config(cfg.budget_tokens, cfg.pruning)
        self.toolbox = Toolbox(agent.index, self.context, self.budget, cfg, agent.vectors, question, where=where)
        self.pruner = make_pruner(cfg.pruning)
        bm25 = agent.index.bm25_index()
        self.episode = Episode(
            question=question,
            config=cfg,
            context=self.context,
            tools=tool_specs(config=cfg),
            vectors=agent.vectors,
            seed=seed,
            rollout=rollout,
            cancel=cancel,
            term_share=bm25.doc_share,
            corpus_chunks=len(bm25),
        )
        self.trace = Trace(
            question=question,
            collection=agent.index.name,
            policy=agent.policy.name,
            budget_tokens=cfg.budget_tokens,
            # Which tokens the budget counts: the model's own, or an estimate (labelled so).
            meta={"seed": seed, "rollout": rollout, "token_count": counter_label(self.context.counter)},
        )
        self.emit = emit
        self.n_calls = 0
        self.finish: FinishRequest | None = None
        self.finish_scores: dict[str, float] | None = None  # the policy's evidence scores, when it gives them
        self.stop: StopReason = "max_turns"

    def play(self) -> Trace:
        self.context.add("system", system_prompt(self.episode.config))
        self.context.add("user", question_message(self.episode.question))
        self.context.add("user", self.budget.notice(self.context.tokens()), kind="notice")
        session = self._start()
        if session is None:  # the policy could not start: no turn runs
            return self._close()
        for turn_i in range(self.config.max_turns):
            cap = self._cap_reached()
            if cap is not None:
                self.stop = cap
                break
            if self._turn(session, turn_i):
                break
        return self._close()

    # -- the policy -----------------------------------------------------------------------------
    def _start(self) -> PolicySession | None:
        try:
            return self.policy.start(self.episode)
        except BackendError as exc:
            self._fail(exc.message)
            return None

    def _step(self, session: PolicySession) -> PolicyStep | None:
        """The policy's next step, or None when it failed (the episode then ends as ``backend_error``)."""
        try:
            return session.step(self.episode)
        except Cancelled:  # the backend aborted its call: nobody wants this turn
            self.stop = "cancelled"
        except BackendError as exc:
            self._fail(exc.message)
        except Exception as exc:  # a policy bug ends this episode, never the caller
            logger.exception("Policy %s failed", self.policy.name)
            self._fail(f"{type(exc).__name__}: {exc}")
        return None

    def _fail(self, message: str) -> None:
        self.stop = "backend_error"
        self.trace.meta["error"] = message
        self.trace.warnings.append(f"Policy {self.policy.name!r} failed: {message}")

    def _cap_reached(self) -> StopReason | None:
        cfg = self.config
        if self.episode.cancel is not None and self.episode.cancel.cancelled:
            return "cancelled"
        if (time.perf_counter() - self.started) > cfg.max_wall_s:
            return "timeout"
        if self.trace.tokens_total >= cfg.max_total_tokens:
            return "max_tokens"
        if self.n_calls >= cfg.max_tool_calls:
            return "max_tool_calls"
        return None

    # -- one turn -------------------------------------------------------------------------------
    def _turn(self, session: PolicySession, turn_i: int) -> bool:
        """Play turn ``turn_i``; True when the episode ends with it."""
        self.episode.turn = turn_i
        t_turn = time.perf_counter()
        prompt = self.context.view() if self.config.record_prompts else None
        step = self._step(session)
        if step is None:
            return True
        turn = Turn(
            index=turn_i,
            completion=step.completion or step.text,
            reasoning=step.reasoning,
            completion_tokens=step.completion_tokens,
            prompt_messages=prompt,
            meta={k: v for k, v in step.meta.items() if k != "stop_reason"},
        )
        self.trace.turns.append(turn)
        if step.reasoning:
            self.emit({"type": "reasoning", "turn": turn_i, "text": step.reasoning})
        self.trace.tokens_total += (step.prompt_tokens or self.context.tokens()) + step.completion_tokens
        if not step.tool_calls:
            self._answer(step, turn, t_turn)
            return True
        outcomes = self._run_tools(step, turn_i)
        self._auto_prune()
        self.context.add("user", self.budget.notice(self.context.tokens()), kind="notice")
        self._record(turn, outcomes, t_turn)
        self.finish = next((o.finish for o in outcomes if o.finish is not None), None)
        if self.finish is None:
            return False
        self.finish_scores = step.meta.get("evidence_scores")
        self.stop = "finished" if step.meta.get("stop_reason") is None else step.meta["stop_reason"]
        return True

    def _answer(self, step: PolicyStep, turn: Turn, t_turn: float) -> None:
        """A step without tool calls: its text is the answer and the episode ends.

        A policy that never called a tool has no evidence behind its text: that is no answer, and
        the caller is warned (the returned set is then the floor's alone).
        """
        self.context.add("assistant", step.text)
        self.stop = "no_tool_call"
        if step.meta.get("finish_reason") == "length":
            self.stop = "truncated"
            retried = step.meta.get("length_retry")
            cap = retried["max_tokens"] if isinstance(retried, dict) else self.config.max_new_tokens
            self.trace.warnings.append(
                f"Policy {self.policy.name!r} ran out of tokens in turn {turn.index + 1} (finish_reason=length at "
                f"{cap} tokens{', after one retry' if retried else ''}) before writing a tool call; raise "
                "--max-new-tokens / --length-retry-tokens (SIEVE_MAX_NEW_TOKENS, SIEVE_LENGTH_RETRY_TOKENS) or lower "
                "--reasoning-effort"
            )
        text = step.text.strip() or None
        if self.context.seen_ids:
            self.trace.answer = text
        else:
            self.trace.warnings.append(
                f"Policy {self.policy.name!r} wrote no tool call (turn {turn.index + 1}); no evidence was "
                f"searched, so its text is not returned as an answer" + (f" ({text[:120]!r})" if text else "")
            )
        turn.context_tokens = self.context.tokens()
        turn.ms = (time.perf_counter() - t_turn) * 1000

    def _run_tools(self, step: PolicyStep, turn_i: int) -> list[ToolOutcome]:
        """Run the step's calls up to the per-turn and episode caps; calls past them get an error each."""
        cfg = self.config
        calls = list(step.tool_calls)
        for j, c in enumerate(calls):
            c.call_id = c.call_id or f"call_{turn_i}_{j}"
        allowed = max(0, min(cfg.max_calls_per_turn, cfg.max_tool_calls - self.n_calls))
        self.context.add(
            "assistant",
            step.text,
            tool_calls=[c.to_openai() for c in calls],
            reasoning=step.reasoning,
            reasoning_field=step.reasoning_field,
        )
        self.emit(
            {
                "type": "action",
                "turn": turn_i,
                "tools": [c.name for c in calls],
                "params": [c.arguments if c.arguments is not None else c.raw for c in calls],
            }
        )
        outcomes = self.toolbox.run(calls[:allowed], turn_i)
        outcomes.extend(_over_cap(self.context, c, allowed) for c in calls[allowed:])
        self.n_calls += len(calls)
        self.episode.last_outcomes = outcomes
        return outcomes

    def _auto_prune(self) -> None:
        auto = self.pruner.select(self.context, self.budget)
        if auto:
            done, _, _ = self.context.prune(auto)
            self.trace.meta.setdefault("auto_pruned", []).extend(e.chunk_id for e in done)

    def _record(self, turn: Turn, outcomes: list[ToolOutcome], t_turn: float) -> None:
        """Write the turn's calls into the trace and stream its observation and usage events."""
        turn.tool_calls = [_tool_call(self.context, o) for o in outcomes]
        turn.context_tokens = self.context.tokens()
        turn.ms = (time.perf_counter() - t_turn) * 1000
        self.trace.peak_context_tokens = max(self.trace.peak_context_tokens, turn.context_tokens)
        self.emit(
            {"type": "observation", "turn": turn.index, "results": [_observation(self.context, o) for o in outcomes]}
        )
        self.emit(
            {
                "type": "usage",
                "turn": turn.index,
                "context_tokens": turn.context_tokens,
                "budget": self.budget.total,
                "state": self.budget.state(turn.context_tokens),
                "tokens_total": self.trace.tokens_total,
            }
        )

    # -- the end --------------------------------------------------------------------------------
    def _close(self) -> Trace:
        trace, context = self.trace, self.context
        trace.stop_reason = self.stop
        if self.stop == "cancelled" and self.episode.cancel is not None:
            trace.meta["cancel_reason"] = self.episode.cancel.reason
        trace.seen_chunk_ids = context.seen_ids
        trace.seen_doc_ids = list(dict.fromkeys(e.doc_id for e in context.chunks.values()))
        trace.pruned_chunk_ids = context.pruned_ids
        trace.returned = self._returned()
        if self.finish is not None:
            trace.answer = self.finish.answer or trace.answer
        trace.citations = resolve_citations(trace.answer, context)
        trace.peak_context_tokens = max(trace.peak_context_tokens, context.tokens())
        if self.config.record_prompts:
            trace.meta["trajectory"] = context.full()  # every message unpruned: what scoring may read
        trace.wall_ms = (time.perf_counter() - self.started) * 1000
        return trace

    def _returned(self) -> list[Evidence]:
        """The policy's ranked evidence, each item with the most meaningful score there is for it.

        The ``finish`` ids with the policy's evidence scores when it gives them, else the
        reciprocal-rank weight of their place; without ``finish``, the chunks still in view by their
        cosine with the question.
        """
        k = self.config.k
        if self.finish is None:
            entries = sorted(self.context.active(), key=lambda e: -e.relevance)[:k]
            return _evidence(entries, [e.relevance for e in entries])
        entries = self.finish.entries[:k]
        given = self.finish_scores or {}
        if all(e.chunk_id in given for e in entries):
            return _evidence(entries, [float(given[e.chunk_id]) for e in entries])
        return _evidence(entries, [1.0 / (self.config.floor.rrf_k + r) for r in range(1, len(entries) + 1)])


def _over_cap(context: ContextState, call: ParsedToolCall, allowed: int) -> ToolOutcome:
    msg = f"Expected at most {allowed} tool calls this turn (per-turn or episode cap), got more; call skipped."
    context.add("tool", f"Error: {msg}", kind="tool", tool_call_id=call.call_id, name=call.name)
    return ToolOutcome(call=call, name=call.name, arguments=dict(call.arguments or {}), content=msg, error=msg)


def _tool_call(context: ContextState, o: ToolOutcome) -> ToolCall:
    """The trace's record of one outcome."""
    return ToolCall(
        name=o.name or o.call.name,
        arguments=o.arguments if o.arguments else (o.call.arguments or {}),
        call_id=o.call.call_id,
        error=o.error,
        malformed=o.malformed,
        result_chunk_ids=[context.chunks[h].chunk_id for h in o.handles],
        result_tokens=o.tokens,
        ms=round(o.ms, 2),
    )


def fuse_traces(traces: list[Trace], *, k: int, rrf_k: int = 60, wall_ms: float = 0.0) -> Trace:
    """One trace from several rollouts: returned sets fused by RRF, turns concatenated, sets unioned."""
    fused_ids = rrf_fuse([t.returned_chunk_ids for t in traces], k=rrf_k)[:k]
    by_id = {e.chunk_id: e for t in traces for e in reversed(t.returned)}
    returned = []
    for rank, (cid, score) in enumerate(fused_ids, start=1):
        e = by_id[cid]
        returned.append(
            Evidence(
                chunk_id=cid,
                doc_id=e.doc_id,
                score=score,
                rank=rank,
                title=e.title,
                source=e.source,
                text=e.text,
                justification=e.justification,
                metadata={**e.metadata, "votes": sum(cid in t.returned_chunk_ids for t in traces)},
            )
        )
    turns: list[Turn] = []
    for t in traces:
        for turn in t.turns:
            turns.append(Turn(**{**turn.__dict__, "index": len(turns)}))
    first = traces[0]
    pruned_any = dict.fromkeys(c for t in traces for c in t.pruned_chunk_ids)
    answered = [t for t in traces if t.answer]
    return Trace(
        question=first.question,
        collection=first.collection,
        policy=f"{first.policy}x{len(traces)}",
        turns=turns,
        seen_chunk_ids=list(dict.fromkeys(c for t in traces for c in t.seen_chunk_ids)),
        seen_doc_ids=list(dict.fromkeys(d for t in traces for d in t.seen_doc_ids)),
        pruned_chunk_ids=[c for c in pruned_any if c not in by_id],
        returned=returned,
        answer=answered[0].answer if answered else None,
        citations=list(answered[0].citations) if answered else [],
        warnings=list(dict.fromkeys(w for t in traces for w in t.warnings)),
        stop_reason="finished"
        if any(t.stop_reason in ("finished", "converged") for t in traces)
        else first.stop_reason,
        budget_tokens=first.budget_tokens,
        tokens_total=sum(t.tokens_total for t in traces),
        peak_context_tokens=max(t.peak_context_tokens for t in traces),
        wall_ms=wall_ms or max(t.wall_ms for t in traces),
        meta={
            "rollouts": [
                {
                    "seed": t.meta.get("seed"),
                    "stop_reason": t.stop_reason,
                    "returned": t.returned_chunk_ids,
                    "turns": len(t.turns),
                    "wall_ms": round(t.wall_ms, 1),
                }
                for t in traces
            ]
        },
    )


def _one_per_doc(returned: list[Evidence], k: int) -> list[Evidence]:
    """Each document's first (best) chunk, in order, at most ``k``, ranks renumbered."""
    out: list[Evidence] = []
    docs: set[str] = set()
    for e in returned:
        if e.doc_id not in docs:
            docs.add(e.doc_id)
            out.append(Evidence(**{**e.__dict__, "rank": len(out) + 1}))
    return out[:k]


def _evidence(entries: list[ChunkEntry], scores: list[float]) -> list[Evidence]:
    """Evidence items in ``entries``' order; each score is capped by the one above, so none rises with rank."""
    out: list[Evidence] = []
    for rank, (e, score) in enumerate(zip(entries, scores), start=1):
        c = e.chunk
        score = score if not out else min(score, out[-1].score)
        out.append(
            Evidence(
                chunk_id=c.chunk_id,
                doc_id=c.doc_id,
                score=round(score, 6),
                rank=rank,
                title=c.title,
                source=c.source,
                text=c.text,
                metadata={
                    "handle": e.handle,
                    "relevance": round(e.relevance, 4),
                    "tool": e.tool,
                    "query": e.query,
                    "pruned": e.pruned,
                },
            )
        )
    return out


def _observation(context: ContextState, o: ToolOutcome) -> dict[str, Any]:
    return {
        "tool": o.name,
        "handles": o.handles,
        "chunk_ids": [context.chunks[h].chunk_id for h in o.handles],
        "titles": [context.chunks[h].chunk.title for h in o.handles],
        "error": o.error,
        "tokens": o.tokens,
        "ms": round(o.ms, 1),
        "content": o.content,
    }


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


__all__ = ["SearchAgent", "fuse_traces", "run_request"]
