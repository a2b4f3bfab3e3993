"""The no-LLM policy: iterative hybrid search with entity bridging, relevance pruning, RRF-free scoring.

Turn 0 searches the question, plus each entity the question names on its own (comparison
questions name two). Each later turn (a *hop*) takes the best chunks found so far, spots the
names they mention that the question does not, and searches those names in parallel: that is
how the second passage of a multi-hop question is reached ("the director of film X" -> X's page
names the director -> the director's page). A chunk's evidence score is its cosine with the
question, or, for a chunk whose title matches a bridging name, a share of the score of the chunk
that mentioned the name, whichever is higher. Chunks that fall far below the top of the pool are
pruned; the episode finishes when a hop adds nothing that enters the top k, or after ``max_hops``.

It never looks at gold labels; its knobs live in :class:`~agent.config.HeuristicConfig`.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agent.backends.base import ParsedToolCall
from agent.policies.base import PolicyStep
from agent.policies.entities import mentions, name_match, normalise
from pruning.tokens import ApproxTokenCounter

if TYPE_CHECKING:
    from agent.config import AgentConfig
    from agent.loop import Episode
    from pruning.context import ChunkEntry
    from pruning.tokens import TokenCounter


@dataclass
class _Query:
    text: str
    parent: str | None  # chunk id whose text suggested it (None: the question)
    parent_score: float
    name: str  # the entity searched for ("" for the question itself)


@dataclass
class _State:
    rng: random.Random
    hop: int = 0
    scores: dict[str, float] = field(default_factory=dict)  # chunk id -> evidence score
    queried: set[str] = field(default_factory=set)  # normalised query texts
    seeded: set[str] = field(default_factory=set)  # chunk ids already used as seeds
    pending: dict[str, _Query] = field(default_factory=dict)  # call id -> query of the last turn
    finished: bool = False


class HeuristicPolicy:
    """Deterministic for seed 0; other seeds jitter the choice of bridging names (for fused rollouts)."""

    name = "heuristic"

    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        self.h = config.heuristic

    def token_counter(self) -> TokenCounter:
        return ApproxTokenCounter()

    def start(self, episode: Episode) -> _Session:
        return _Session(self, _State(rng=random.Random(episode.seed)))


class _Session:
    def __init__(self, policy: HeuristicPolicy, state: _State) -> None:
        self.p = policy
        self.s = state

    # -- the turn -------------------------------------------------------------------------------
    def step(self, episode: Episode) -> PolicyStep:
        s, h = self.s, self.p.h
        if episode.turn == 0:
            return self._emit(self._first_queries(episode))
        added = self._absorb(episode)
        prune = self._prune_candidates(episode)
        if s.hop >= h.max_hops or (s.hop > 0 and not added):
            return self._finish(episode, prune, converged=s.hop < h.max_hops)
        queries = self._bridge_queries(episode)
        s.hop += 1
        if not queries:
            return self._finish(episode, prune, converged=True)
        return self._emit(queries, prune)

    def _first_queries(self, episode: Episode) -> list[_Query]:
        h = self.p.h
        q = episode.question
        out = [_Query(q, None, 1.0, "")]
        names = [m.text for m in mentions(q)]
        for name in dict.fromkeys(names):
            if normalise(name) != normalise(q):
                out.append(_Query(name, None, 1.0, name))
        return out[: 1 + h.max_queries_per_turn]

    def _bridge_queries(self, episode: Episode) -> list[_Query]:
        """Names mentioned by the best unseeded chunks, not in the question, not yet searched."""
        s, h = self.s, self.p.h
        ctx = episode.context
        qnorm = normalise(episode.question)
        q_words = {w[:5] for w in qnorm.split() if len(w) > 3}
        ranked = sorted((e for e in ctx.active() if e.chunk_id not in s.seeded),
                        key=lambda e: -s.scores.get(e.chunk_id, 0.0))[: h.seed_chunks]
        cands: dict[str, tuple[float, _Query]] = {}
        for e in ranked:
            s.seeded.add(e.chunk_id)
            parent_score = s.scores.get(e.chunk_id, 0.0)
            title = normalise(e.chunk.title)
            for order, m in enumerate(mentions(e.chunk.text)):
                key = normalise(m.text)
                if not key or key in s.queried or key == title or key in qnorm or title.startswith(key):
                    continue
                prior = parent_score / (1.0 + 0.25 * order)
                # A name right after a word of the question ("directed by X" for "director") is the bridge.
                if any(w.lower()[:5] in q_words for w in m.context.split()[-3:]):
                    prior *= 1.5
                if s.rng is not None and episode.seed:
                    prior *= 1.0 + h.jitter * (2 * s.rng.random() - 1)
                if key not in cands or cands[key][0] < prior:
                    cands[key] = (prior, _Query(m.text, e.chunk_id, parent_score, m.text))
        best = sorted(cands.values(), key=lambda t: -t[0])[: h.max_queries_per_turn]
        return [q for _, q in best]

    def _emit(self, queries: list[_Query], prune: list[str] | None = None) -> PolicyStep:
        s, h = self.s, self.p.h
        calls: list[ParsedToolCall] = []
        if prune:
            calls.append(ParsedToolCall(name="prune", arguments={"ids": prune, "reason": "low relevance"}))
        s.pending = {}
        for i, q in enumerate(queries):
            s.queried.add(normalise(q.text))
            k = h.first_k if q.parent is None and not q.name else h.hop_k
            call = ParsedToolCall(name="search", arguments={"query": q.text, "k": k}, call_id=f"h{s.hop}_{i}")
            s.pending[call.call_id] = q
            calls.append(call)
        return PolicyStep(tool_calls=calls, completion=_render(calls))

    # -- bookkeeping ----------------------------------------------------------------------------
    def _absorb(self, episode: Episode) -> int:
        """Score the chunks the last turn showed; returns how many entered the top k."""
        s = self.s
        k = episode.config.k
        before = self._top(k)
        for o in episode.last_outcomes:
            q = s.pending.get(o.call.call_id)
            if q is None or not o.handles:
                continue
            for rank, handle in enumerate(o.handles):
                e = episode.context.chunks[handle]
                s.scores[e.chunk_id] = self._score(e, q, rank)
        after = self._top(k)
        return len(set(after) - set(before))

    def _score(self, e: ChunkEntry, q: _Query, rank: int) -> float:
        h = self.p.h
        base = e.relevance
        if not q.name:  # the question itself: keep the fused search order as a tie-breaker
            return base + 0.02 / (1 + rank)
        match = name_match(q.name, e.chunk.title)
        parent = q.parent_score if q.parent is not None else max(self.s.scores.values(), default=base)
        inherited = h.bridge_weight * parent * match / (1.0 + 0.1 * rank)
        return max(base, inherited)

    def _top(self, k: int) -> list[str]:
        return [cid for cid, _ in sorted(self.s.scores.items(), key=lambda kv: -kv[1])[:k]]

    def _prune_candidates(self, episode: Episode) -> list[str]:
        """Active chunks well outside the top of the pool: they can no longer make the returned set."""
        s, h = self.s, self.p.h
        keep = set(self._top(episode.config.k + max(4, episode.config.k // 2)))
        top = max(s.scores.values(), default=0.0)
        return [e.handle for e in episode.context.active()
                if e.chunk_id not in keep and s.scores.get(e.chunk_id, 0.0) < top - h.prune_below]

    def _finish(self, episode: Episode, prune: list[str], *, converged: bool) -> PolicyStep:
        s = self.s
        pruned = set(prune)
        live = [e for e in episode.context.active() if e.handle not in pruned]
        ranked = sorted(live, key=lambda e: -s.scores.get(e.chunk_id, e.relevance))
        # One chunk per document first: evidence is judged by document, so spread the k slots.
        first, extra, docs = [], [], set()
        for e in ranked:
            (extra if e.doc_id in docs else first).append(e)
            docs.add(e.doc_id)
        ids = [e.handle for e in (first + extra)[: episode.config.k]]
        calls = []
        if prune:
            calls.append(ParsedToolCall(name="prune", arguments={"ids": prune, "reason": "low relevance"}))
        calls.append(ParsedToolCall(name="finish", arguments={"ids": ids}))
        s.finished = True
        return PolicyStep(tool_calls=calls, completion=_render(calls),
                          meta={"stop_reason": "converged" if converged else None})


def _render(calls: list[ParsedToolCall]) -> str:
    """The calls as a model would write them, so heuristic traces read like LLM ones."""
    return "\n".join(f"<tool_call>{json.dumps({'name': c.name, 'arguments': c.arguments}, ensure_ascii=False)}"
                     "</tool_call>" for c in calls)


__all__ = ["HeuristicPolicy"]
