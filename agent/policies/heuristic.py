"""The no-LLM policy: iterative hybrid search with entity bridging, relevance pruning, RRF-free scoring.

Turn 0 searches the question, plus each entity the question names on its own (comparison
questions name two). Each later turn (a *hop*) takes the best chunks found so far, spots the
names they mention that the question does not, and searches those names in parallel: that is
how the second passage of a multi-hop question is reached ("the author of book X" -> X's page
names the author -> the author's page). A chunk's evidence score is its cosine with the
question, or, for a chunk whose title matches a bridging name, a share of the score of the chunk
that mentioned the name, whichever is higher. With ``feedback`` on, the first hop also searches
the question again with the words that set its best chunks apart (pseudo-relevance feedback,
:mod:`~sieve.agent.policies.feedback`); what that search finds is scored by its cosine alone.
Chunks that fall far below the top of the pool are pruned; the episode finishes when a hop adds
nothing that enters the top k, or after ``max_hops``.

It never looks at gold labels; its knobs live in :class:`~sieve.agent.config.HeuristicConfig`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from sieve.agent.backends.base import ParsedToolCall
from sieve.agent.policies.base import PolicyStep, render_calls
from sieve.agent.policies.entities import mentions, name_match, normalise, question_names, searchable
from sieve.agent.policies.feedback import FEEDBACK_CHUNKS, feedback_query
from sieve.pruning.tokens import ApproxTokenCounter

if TYPE_CHECKING:
    from sieve.agent.config import AgentConfig, HeuristicConfig
    from sieve.agent.episode import Episode
    from sieve.pruning.tokens import TokenCounter


@dataclass
class _Query:
    text: str
    parent: str | None  # chunk id whose text suggested it (None: the question)
    name: str  # the entity searched for ("" for the question itself)
    prior: float = 1.0  # how likely the name is the bridge (mention order, relation word before it)
    feedback: bool = False  # the question with feedback words (its hits count by cosine only)


class BridgeHit(NamedTuple):
    """The chunk was found by searching a name that another chunk (its parent) mentions."""

    parent: str  # chunk id of the chunk that mentioned the name
    match: float  # how well the chunk's title names what was searched (0..1)
    rank: int  # its rank in that search
    prior: float  # how likely the name was the bridge (see _Query.prior)


class NameHit(NamedTuple):
    """The chunk was found by searching a name the question itself mentions."""

    match: float  # how well the chunk's title names what was searched (0..1)
    rank: int  # its rank in that search


@dataclass
class Features:
    """What the policy knows about a chunk; its evidence score is a function of these alone."""

    cos: float  # cosine with the question
    q_rank: int | None = None  # rank in the search for the question itself
    bridges: list[BridgeHit] = field(default_factory=list)
    named: list[NameHit] = field(default_factory=list)


@dataclass
class _State:
    rng: random.Random
    hop: int = 0
    scores: dict[str, float] = field(default_factory=dict)  # chunk id -> evidence score
    features: dict[str, Features] = field(default_factory=dict)
    queried: set[str] = field(default_factory=set)  # normalised query texts
    seeded: set[str] = field(default_factory=set)  # chunk ids already used as seeds
    pending: dict[str, _Query] = field(default_factory=dict)  # call id -> query of the last turn


class HeuristicPolicy:
    """Deterministic for seed 0; other seeds jitter the choice of bridging names (for fused rollouts)."""

    name = "heuristic"

    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        self.knobs = config.heuristic

    def token_counter(self) -> TokenCounter:
        return ApproxTokenCounter()

    def start(self, episode: Episode) -> _Session:
        return _Session(self, _State(rng=random.Random(episode.seed)))


class _Session:
    def __init__(self, policy: HeuristicPolicy, state: _State) -> None:
        self.policy = policy
        self.state = state
        self.knobs = policy.knobs

    # -- the turn -------------------------------------------------------------------------------
    def step(self, episode: Episode) -> PolicyStep:
        state, knobs = self.state, self.knobs
        if episode.turn == 0:
            return self._emit(self._first_queries(episode))
        added = self._absorb(episode)
        prune = self._prune_candidates(episode)
        if state.hop >= knobs.max_hops or (state.hop > 0 and not added):
            return self._finish(episode, prune, converged=state.hop < knobs.max_hops)
        queries = self._bridge_queries(episode)
        if state.hop == 0 and knobs.feedback:
            queries = self._feedback_query(episode) + queries
        state.hop += 1
        if not queries:
            return self._finish(episode, prune, converged=True)
        return self._emit(queries, prune)

    def _first_queries(self, episode: Episode) -> list[_Query]:
        q = episode.question
        out = [_Query(q, None, "")]
        out += [_Query(name, None, name) for name in question_names(q, episode.term_share)]
        return out[: 1 + self.knobs.max_queries_per_turn]

    def _feedback_query(self, episode: Episode) -> list[_Query]:
        """The question with the words its best chunks share (none when no word qualifies)."""
        best = sorted(episode.context.active(), key=lambda e: -self.state.scores.get(e.chunk_id, 0.0))
        query = feedback_query(episode.question, [e.chunk for e in best[:FEEDBACK_CHUNKS]], episode.term_share)
        if query is None or normalise(query) in self.state.queried:
            return []
        return [_Query(query, None, "", feedback=True)]

    def _bridge_queries(self, episode: Episode) -> list[_Query]:
        """Names mentioned by the best unseeded chunks, not in the question, not yet searched."""
        state, knobs = self.state, self.knobs
        ctx = episode.context
        qnorm = normalise(episode.question)
        q_words = {w[:5] for w in qnorm.split() if len(w) > 3}
        ranked = sorted(
            (e for e in ctx.active() if e.chunk_id not in state.seeded),
            key=lambda e: -state.scores.get(e.chunk_id, 0.0),
        )[: knobs.seed_chunks]
        cands: dict[str, tuple[float, _Query]] = {}
        for e in ranked:
            state.seeded.add(e.chunk_id)
            parent_score = state.scores.get(e.chunk_id, 0.0)
            title = normalise(e.chunk.title)
            # Common words of this corpus ("Make", "Next", "Does ...") are no names: cleaned or dropped.
            found = [
                c
                for c in (searchable(m, episode.term_share, episode.corpus_chunks) for m in mentions(e.chunk.text))
                if c is not None
            ]
            for order, m in enumerate(found):
                key = normalise(m.text)
                if not key or key in state.queried or key == title or key in qnorm or title.startswith(key):
                    continue
                prior = 1.0 / (1.0 + knobs.order_decay * order)
                # A name right after a word of the question ("directed by X" for "director") is the bridge.
                if any(w.lower()[:5] in q_words for w in m.context.split()[-3:]):
                    prior = min(1.0, prior * knobs.relation_boost)
                rank_key = parent_score * prior
                if episode.seed:
                    rank_key *= 1.0 + knobs.jitter * (2 * state.rng.random() - 1)
                if key not in cands or cands[key][0] < rank_key:
                    cands[key] = (rank_key, _Query(m.text, e.chunk_id, m.text, prior))
        best = sorted(cands.values(), key=lambda t: -t[0])[: knobs.max_queries_per_turn]
        return [q for _, q in best]

    def _emit(self, queries: list[_Query], prune: list[str] | None = None) -> PolicyStep:
        state, knobs = self.state, self.knobs
        calls: list[ParsedToolCall] = []
        if prune:
            calls.append(ParsedToolCall(name="prune", arguments={"ids": prune, "reason": "low relevance"}))
        state.pending = {}
        for i, q in enumerate(queries):
            state.queried.add(normalise(q.text))
            k = min(knobs.first_k if q.parent is None and not q.name else knobs.hop_k, self.policy.config.search_k)
            call = ParsedToolCall(name="search", arguments={"query": q.text, "k": k}, call_id=f"h{state.hop}_{i}")
            state.pending[call.call_id] = q
            calls.append(call)
        return PolicyStep(tool_calls=calls, completion=render_calls(calls))

    # -- bookkeeping ----------------------------------------------------------------------------
    def _absorb(self, episode: Episode) -> int:
        """Record what the last turn showed and re-score; returns how many chunks entered the top k."""
        state = self.state
        k = episode.config.k
        before = self._top(k)
        for o in episode.last_outcomes:
            q = state.pending.get(o.call.call_id)
            if q is None or not o.handles:
                continue
            for rank, handle in enumerate(o.handles):
                e = episode.context.chunks[handle]
                f = state.features.setdefault(e.chunk_id, Features(cos=e.relevance))
                if q.feedback:
                    continue  # scored by its cosine: a rank in a reworded search is no rank in the question's
                if not q.name:
                    f.q_rank = rank if f.q_rank is None else min(f.q_rank, rank)
                elif q.parent is None:
                    f.named.append(NameHit(name_match(q.name, e.chunk.title), rank))
                else:
                    f.bridges.append(BridgeHit(q.parent, name_match(q.name, e.chunk.title), rank, q.prior))
        # Parents are always registered before their children, so one pass in insertion order suffices.
        for cid, f in state.features.items():
            state.scores[cid] = score_features(f, state.scores, self.knobs)
        after = self._top(k)
        return len(set(after) - set(before))

    def _top(self, k: int) -> list[str]:
        return [cid for cid, _ in sorted(self.state.scores.items(), key=lambda kv: -kv[1])[:k]]

    def _prune_candidates(self, episode: Episode) -> list[str]:
        """Active chunks well outside the top of the pool: they can no longer make the returned set."""
        scores = self.state.scores
        keep = set(self._top(episode.config.k + max(4, episode.config.k // 2)))
        top = max(scores.values(), default=0.0)
        return [
            e.handle
            for e in episode.context.active()
            if e.chunk_id not in keep and scores.get(e.chunk_id, 0.0) < top - self.knobs.prune_below
        ]

    def _finish(self, episode: Episode, prune: list[str], *, converged: bool) -> PolicyStep:
        scores = self.state.scores
        pruned = set(prune)
        live = [e for e in episode.context.active() if e.handle not in pruned]
        # Chunks are the unit: several chunks of one document when they score best (the harness
        # groups by document only when asked).
        chosen = sorted(live, key=lambda e: -scores.get(e.chunk_id, 0.0))[: episode.config.k]
        calls = []
        if prune:
            calls.append(ParsedToolCall(name="prune", arguments={"ids": prune, "reason": "low relevance"}))
        calls.append(ParsedToolCall(name="finish", arguments={"ids": [e.handle for e in chosen]}))
        # The evidence scores go to the harness beside the call: they become Evidence.score.
        return PolicyStep(
            tool_calls=calls,
            completion=render_calls(calls),
            meta={
                "stop_reason": "converged" if converged else None,
                "evidence_scores": {e.chunk_id: round(scores.get(e.chunk_id, 0.0), 6) for e in chosen},
            },
        )


def score_features(f: Features, scores: dict[str, float], knobs: HeuristicConfig) -> float:
    """Evidence score: fused rank in the question search + cosine, plus the best bridge or name match.

    A bridge adds a share of its parent's score, scaled by how well the chunk's title matches the
    name searched and how likely that name was the bridge; so the page of "the author" of a
    top-ranked book lands right after the book.
    """
    first = knobs.w_rank / (1.0 + f.q_rank / knobs.rank_tau) if f.q_rank is not None else 0.0
    base = first + knobs.w_cos * f.cos
    link = 0.0
    for b in f.bridges:
        if b.match >= knobs.min_match:
            link = max(
                link,
                knobs.bridge_weight * scores.get(b.parent, 0.0) * b.match * b.prior / (1.0 + knobs.rank_decay * b.rank),
            )
    for n in f.named:
        if n.match >= knobs.min_match:
            link = max(link, knobs.named_weight * n.match / (1.0 + knobs.rank_decay * n.rank))
    return base + link


__all__ = ["BridgeHit", "Features", "HeuristicPolicy", "NameHit", "score_features"]
