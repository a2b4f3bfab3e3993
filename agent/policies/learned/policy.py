"""The learned policy: a small network takes every decision of an episode in the standard harness.

Each turn it (1) prunes chunks that can no longer make the returned set (one Bernoulli per
chunk), (2) draws the turn's searches and reads from the candidate actions, or *end* first to
finish, and when finishing (3) ranks the chunks in view into the returned evidence. The
calls go through the same :class:`~sieve.agent.tools.Toolbox` as every other policy's, so the
budget, pruning, trace and rewards are the harness's own.

With ``sample=True`` (training) every decision is drawn from the network's distribution with a
generator seeded by the episode seed, its inputs and per-step log-probabilities are kept for
re-scoring (:meth:`LearnedPolicy.take_decisions`), and a summary with the log-probability goes
into the trace (``turn.meta["decisions"]``). Otherwise (serving) every decision is the
network's most likely one: deterministic, whatever the seed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from threading import Lock
from typing import TYPE_CHECKING, Any

import numpy as np

from sieve.agent.backends.base import ParsedToolCall
from sieve.agent.policies.base import PolicyStep, render_calls
from sieve.agent.policies.learned.features import EpisodeFeatures, TextCache
from sieve.agent.policies.learned.decisions import (
    Decision,
    LearnedConfig,
    NumpyNetwork,
    draw_bernoulli,
    draw_sequence,
)
from sieve.core.errors import InvalidInput
from sieve.pruning.budget import TokenBudget
from sieve.pruning.tokens import ApproxTokenCounter

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sieve.agent.episode import Episode
    from sieve.agent.policies.learned.features import Candidate
    from sieve.agent.policies.learned.network import PolicyNetwork
    from sieve.pruning.context import ChunkEntry
    from sieve.pruning.tokens import TokenCounter

logger = logging.getLogger(__name__)

DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "default"


def default_checkpoint() -> Path:
    """The checkpoint shipped in the package (how it was trained: ``default/README.md``)."""
    return DEFAULT_CHECKPOINT


RANKER_FILE = "fusion.json"


class LearnedPolicy:
    """A :class:`PolicyNetwork` acting through the agent's tools.

    Example:
        >>> policy = LearnedPolicy.load(None)  # the shipped checkpoint  # doctest: +SKIP
        >>> SearchAgent(index, policy, AgentConfig()).run("Who ...?").returned  # doctest: +SKIP
    """

    name = "learned"

    def __init__(
        self,
        net: PolicyNetwork | NumpyNetwork,
        config: LearnedConfig | None = None,
        *,
        sample: bool = False,
        record: bool = False,
        temperature: float = 1.0,
        path: Path | None = None,
        meta: dict[str, Any] | None = None,
        prefetch: Callable[[list[str]], Any] | None = None,
    ) -> None:
        if temperature <= 0:
            raise InvalidInput(f"Expected a sampling temperature > 0, got {temperature}")
        self.net = net
        self.config = config or LearnedConfig()
        self.sample = sample
        # Sampling divides every logit by this (training explores more); greedy choices ignore it.
        self.temperature = temperature
        # Training passes the retrieval cache's batch embedder: the turn's candidate queries are
        # embedded in one forward pass, since a group's rollouts search most of them.
        self.prefetch = prefetch
        self.record = record
        self.path = path
        self.meta = meta or {}
        self.texts = TextCache()
        self._decisions: dict[int, list[Decision]] = {}
        self._lock = Lock()

    @classmethod
    def load(
        cls, path: str | Path | None = None, *, sample: bool = False, record: bool = False, temperature: float = 1.0
    ) -> LearnedPolicy:
        """The policy saved in ``path``: a checkpoint folder, a run folder of ``sieve train all`` (its
        policy, or the shipped one when the run kept it), or ``None`` (the shipped default)."""
        from sieve.core.runs import RunArtifact

        if path is not None and RunArtifact.is_run(path):
            run = RunArtifact.load(path)
            if run.policy_kind != "learned" and run.policy is not None:
                raise InvalidInput(
                    f"Expected a run of the learned route, got {run.describe()}: its policy is a language model; "
                    "serve it with make_policy('learned', ...) or --policy-path, which load it as an LLM policy"
                )
            path = run.policy
        folder = Path(path) if path is not None else default_checkpoint()
        if sample or record:  # training: the torch network, whose decisions can be re-scored with gradients
            from sieve.agent.policies.learned.network import load_checkpoint

            net: PolicyNetwork | NumpyNetwork
            net, config, meta = load_checkpoint(folder)
        else:  # serving: the same weights in numpy, so a search never imports torch
            net, config, meta = NumpyNetwork.load(folder)
        return cls(net, config, sample=sample, record=record, temperature=temperature, path=folder, meta=meta)

    @property
    def ranker_path(self) -> Path | None:
        """The fusion model retrained with this checkpoint (``fusion.json`` beside its weights), if any:
        ``sieve train`` retrains both on the user's corpus, and one ``--policy-path`` serves both."""
        path = self.path / RANKER_FILE if self.path is not None else None
        return path if path is not None and path.is_file() else None

    def token_counter(self) -> TokenCounter:
        return ApproxTokenCounter()

    def start(self, episode: Episode) -> _Session:
        decisions: list[Decision] = []
        if self.record:
            with self._lock:
                self._decisions[episode.seed] = decisions
        return _Session(self, episode, decisions)

    def take_decisions(self, seed: int) -> list[Decision]:
        """The recorded decisions of the episode run with ``seed`` (``record=True``), removed from the policy."""
        with self._lock:
            return self._decisions.pop(seed, [])

    # -- scoring (no gradient) ------------------------------------------------------------------
    def _select(self, items: np.ndarray, state: np.ndarray) -> np.ndarray:
        if isinstance(self.net, NumpyNetwork):
            return self.net.select_scores(items, state)
        return _torch_call(self.net.select_scores, items, state)

    def _prune(self, items: np.ndarray, state: np.ndarray) -> np.ndarray:
        if isinstance(self.net, NumpyNetwork):
            return self.net.prune_logits(items, state)
        return _torch_call(self.net.prune_logits, items, state)

    def _rank(self, items: np.ndarray) -> np.ndarray:
        if isinstance(self.net, NumpyNetwork):
            return self.net.rank_scores(items)
        return _torch_call(self.net.rank_scores, items)


def _torch_call(fn: Callable[..., Any], *arrays: np.ndarray) -> np.ndarray:
    """``fn`` of a torch network on numpy inputs, without gradient (training's sampling path)."""
    import torch

    with torch.no_grad():
        return fn(*(torch.from_numpy(a) for a in arrays)).numpy()


class _Session:
    def __init__(self, policy: LearnedPolicy, episode: Episode, decisions: list[Decision]) -> None:
        cfg = policy.config
        self.p = policy
        self.cfg = cfg
        self.decisions = decisions
        self.rng = np.random.default_rng(episode.seed) if policy.sample else None
        self.temp = policy.temperature if policy.sample else 1.0
        self.f = EpisodeFeatures(
            episode.question,
            policy.texts,
            k=episode.config.k,
            max_turns=cfg.max_search_turns,
            seed_chunks=cfg.seed_chunks,
            mentions_per_chunk=cfg.mentions_per_chunk,
            max_candidates=cfg.max_candidates,
        )
        self.f.share = episode.term_share
        self.f.chunks = episode.corpus_chunks
        # The budget's thresholds, as the harness computes them from the same settings.
        self.budget = TokenBudget.from_config(episode.config.budget_tokens, episode.config.pruning)

    def step(self, episode: Episode) -> PolicyStep:
        if episode.turn > 0:
            self.f.absorb(episode)
        summary: list[dict[str, Any]] = []
        calls: list[ParsedToolCall] = []
        active = episode.context.active()
        pruned = self._prune(episode, active, summary) if episode.turn > 0 else []
        if pruned:
            calls.append(
                ParsedToolCall(
                    name="prune",
                    arguments={"ids": [e.handle for e in pruned], "reason": "cannot make the evidence set"},
                )
            )
            gone = {e.handle for e in pruned}
            active = [e for e in active if e.handle not in gone]
        used = episode.context.tokens() - sum(e.tokens for e in pruned)
        chosen = self._choose(episode, active, used, summary)
        stop = None
        if chosen:
            for i, cand in enumerate(chosen):
                call_id = f"l{episode.turn}_{i}"
                self.f.issue(call_id, cand)
                if cand.kind == "read":
                    calls.append(ParsedToolCall(name="read", arguments={"id": cand.text}, call_id=call_id))
                else:
                    k = episode.config.search_k if cand.kind in ("question", "feedback") else self.cfg.hop_k
                    calls.append(ParsedToolCall(name="search", arguments={"query": cand.text, "k": k}, call_id=call_id))
        else:
            calls.append(ParsedToolCall(name="finish", arguments={"ids": self._rank(episode, active, summary)}))
            stop = "finished"
        return PolicyStep(
            tool_calls=calls,
            completion=render_calls(calls),
            meta={"stop_reason": stop, "decisions": summary} if stop else {"decisions": summary},
        )

    # -- decisions ------------------------------------------------------------------------------
    def _record(self, decision: Decision, summary: list[dict[str, Any]], **info: Any) -> None:
        decision.temperature = self.temp
        if self.p.record:
            self.decisions.append(decision)
        summary.append({"kind": decision.kind, "logp": round(decision.logp, 6), "steps": len(decision.picks), **info})

    def _prune(self, episode: Episode, active: list[ChunkEntry], summary: list[dict[str, Any]]) -> list[ChunkEntry]:
        """Chunks outside the policy's own top ``k + margin`` may be pruned, one Bernoulli each."""
        if not active:
            return []
        x = self.f.chunk_matrix(active)
        order = np.argsort(-self.p._rank(x), kind="stable")
        keep = set(order[: episode.config.k + self.cfg.prune_margin].tolist())
        eligible = [i for i in range(len(active)) if i not in keep]
        if not eligible:
            return []
        state = self.f.state_vector(episode, active, 0, episode.context.tokens())
        items = x[eligible]
        acts, logps = draw_bernoulli(self.p._prune(items, state) / self.temp, self.rng)
        out = [active[i] for i, a in zip(eligible, acts) if a]
        self._record(Decision("prune", items, state, acts, logps), summary, pruned=[e.chunk_id for e in out])
        return out

    def _choose(
        self, episode: Episode, active: list[ChunkEntry], used: int, summary: list[dict[str, Any]]
    ) -> list[Candidate]:
        """This turn's searches/reads, or [] to finish."""
        last = episode.turn >= min(self.cfg.max_search_turns, episode.config.max_turns - 1)
        room = self._room(episode, active, used)
        if last or room == 0 or self.budget.state(used) == "hard":
            return []  # the turn cap is near, or no search result would fit the budget: finish
        cands = self.f.candidates(active)
        if not cands:
            return []
        state = self.f.state_vector(episode, active, len(cands), used)  # budget after this turn's pruning
        items = self.f.candidate_matrix(cands, active)
        if self.p.prefetch is not None:
            # Training: a group's rollouts search most candidates sooner or later; one batched
            # forward pass of the embedder costs far less than one per query.
            self.p.prefetch([c.text for c in cands if c.kind != "read"])
        scores = self.p._select(items, state) / self.temp
        picks, logps = draw_sequence(scores, room, stop_index=0, stop_first=episode.turn > 0, rng=self.rng)
        chosen = [cands[p - 1] for p in picks if p != 0]
        self._record(
            Decision("select", items, state, picks, logps, end_first=episode.turn > 0),
            summary,
            chosen=[f"{c.kind}:{c.text}" for c in chosen],
            finish=not chosen,
        )
        return chosen

    def _room(self, episode: Episode, active: list[ChunkEntry], used: int) -> int:
        """How many searches this turn can still show results within the budget (at most ``max_picks``).

        Past the hard limit the harness refuses searches, and each call's messages cost tokens of
        their own: issuing only what fits keeps the context within the budget.
        """
        per_chunk = sum(e.tokens for e in active) / len(active) if active else 150.0
        first = episode.config.search_k if episode.turn == 0 else self.cfg.hop_k
        need = first * per_chunk + 60  # results plus the call and tool-message overhead
        return max(0, min(self.cfg.max_picks, int(self.budget.remaining(used) // need)))

    def _rank(self, episode: Episode, active: list[ChunkEntry], summary: list[dict[str, Any]]) -> list[str]:
        """The returned evidence, as :func:`draw_evidence` orders the chunks in view."""
        if not active:
            return []
        x = self.f.chunk_matrix(active)
        scores = self.p._rank(x) / self.temp
        draw = draw_evidence(
            scores, [e.doc_id for e in active], episode.config.k, by_doc=episode.config.group_by_doc, rng=self.rng
        )
        self._record(
            Decision("rank", x, np.zeros(0, dtype=np.float32), draw.picks, draw.logps, groups=draw.groups),
            summary,
            returned=[active[i].chunk_id for i in draw.picks],
        )
        return [active[i].handle for i in draw.order]


@dataclass
class EvidenceDraw:
    """The policy's ranking of the chunks in view: ``order`` (indices, at most ``k``) begins with the
    drawn ``picks`` (their log-probabilities in ``logps``; ``groups``: the document of each chunk when
    drawn one per document, else None), then the rest by score."""

    picks: list[int]
    logps: list[float]
    groups: list[int] | None
    order: list[int]


def draw_evidence(
    scores: np.ndarray, doc_ids: Sequence[str], k: int, *, by_doc: bool = False, rng: np.random.Generator | None = None
) -> EvidenceDraw:
    """Draw the returned evidence from the chunks' rank scores (``rng=None``: the best first).

    Chunks are the unit: ``k`` chunks by score, several of one document when they score best. On a
    long filing the evidence is several pages of the question's own document; drawing one chunk per
    document first put another company's page, found by a keyphrase search, second or third in the
    policy's ranking, and the fusion ranker trusts those places. With ``by_doc`` (the caller asked
    for documents) one chunk per document is drawn first, then the rest follow by score.

    Example:
        >>> draw_evidence(np.array([3.0, 2.0, 1.0]), ["a", "a", "b"], 3).order
        [0, 1, 2]
        >>> draw_evidence(np.array([3.0, 2.0, 1.0]), ["a", "a", "b"], 3, by_doc=True).order
        [0, 2, 1]
    """
    groups: list[int] | None = None
    n_draws = min(k, len(doc_ids))
    if by_doc:
        doc_index = {d: i for i, d in enumerate(dict.fromkeys(doc_ids))}
        groups = [doc_index[d] for d in doc_ids]
        n_draws = min(k, len(doc_index))
    picks, logps = draw_sequence(scores, n_draws, groups=groups, rng=rng)
    chosen = set(picks)
    rest = [int(i) for i in np.argsort(-scores, kind="stable") if int(i) not in chosen]
    return EvidenceDraw(picks, logps, groups, (picks + rest)[:k])


__all__ = ["DEFAULT_CHECKPOINT", "RANKER_FILE", "EvidenceDraw", "LearnedPolicy", "default_checkpoint", "draw_evidence"]
