"""Warm start by imitation of the heuristic policy (DAgger-style), before RL takes over.

The learned policy's decisions are labelled with what the hand-tuned heuristic
(:mod:`sieve.agent.policies.heuristic`) would have done in the same state, read off the same
features: search the question and its entities first; then the names mentioned by the four
best chunks, best ``parent score x mention prior`` first; finish after two hops, or when a hop
added nothing to the top ``k``; prune what fell far below the best score; rank by the
heuristic's evidence score. The states are the learner's own (its sampled episodes), so it
learns to recover from its own mistakes. Labels come from the policy's inputs, never from gold.
"""

from __future__ import annotations

import logging
import random
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from tqdm.auto import tqdm

from sieve.agent.policies.learned.features import CANDIDATE_FEATURES, CHUNK_FEATURES, KINDS, STATE_FEATURES
from sieve.agent.policies.learned.network import Decision, score_decisions
from sieve.train.learned.config import ImitationConfig

if TYPE_CHECKING:
    from sieve.agent.loop import SearchAgent
    from sieve.agent.policies.learned import LearnedConfig, LearnedPolicy, PolicyNetwork

logger = logging.getLogger(__name__)

_C = {n: i for i, n in enumerate(CANDIDATE_FEATURES)}
_K = {n: i for i, n in enumerate(CHUNK_FEATURES)}
_S = {n: i for i, n in enumerate(STATE_FEATURES)}
_MAX_HOPS = 2  # HeuristicConfig.max_hops
_SEED_CHUNKS = 4  # HeuristicConfig.seed_chunks
_PRUNE_BELOW = 0.15  # HeuristicConfig.prune_below


def heuristic_label(d: Decision, config: LearnedConfig) -> Decision:
    """``d`` with the heuristic's choice as its picks."""
    if d.kind == "prune":
        acts = (d.items[:, _K["hscore_gap"]] < -_PRUNE_BELOW).astype(int).tolist()
        return replace(d, picks=acts, step_logps=[0.0] * len(acts), temperature=1.0)
    if d.kind == "rank":
        order = np.argsort(-d.items[:, _K["hscore"]], kind="stable")
        groups = d.groups or list(range(len(d.items)))
        picks, seen = [], set()
        for i in order.tolist():
            if groups[i] not in seen:
                picks.append(i)
                seen.add(groups[i])
        picks = picks[: len(d.picks)]
        return replace(d, picks=picks, step_logps=[0.0] * len(picks), temperature=1.0)
    x, s = d.items, d.state
    kind = {k: x[:, _C[f"kind_{k}"]] > 0.5 for k in KINDS}
    turn = int(round(float(s[_S["turn"]]) * config.max_search_turns))
    if s[_S["first_turn"]] > 0.5:
        idx = [i for i in range(len(x)) if kind["question"][i]] + [i for i in range(len(x)) if kind["entity"][i]]
    elif turn > _MAX_HOPS or (turn > 1 and s[_S["added_top"]] <= 0):
        idx = []
    else:
        ok = [i for i in range(len(x)) if kind["mention"][i] and x[i, _C["parent_rank"]] >= 1.0 / (1 + _SEED_CHUNKS)]
        idx = sorted(ok, key=lambda i: -x[i, _C["parent_hscore"]] * x[i, _C["order_prior"]])
    picks = [i + 1 for i in idx[: config.max_picks]]
    if len(picks) < config.max_picks and (picks or d.end_first):
        picks.append(0)  # END: stop issuing (first: finish)
    if not picks:
        picks = [1]  # END may not come first here (the first turn); the best candidate stands in
    return replace(d, picks=picks, step_logps=[0.0] * len(picks), temperature=1.0)


def imitation_loss(net: PolicyNetwork, labelled: list[Decision]) -> torch.Tensor:
    """Mean negative log-likelihood per decision step of the labelled choices."""
    scored = score_decisions(net, labelled)
    total = sum((s.logp * s.mask.float()).sum() for s in scored.values())
    n = sum(int(s.mask.sum()) for s in scored.values())
    return -total / max(1, n)


def warm_start(
    agent: SearchAgent,
    policy: LearnedPolicy,
    tasks: list[dict[str, Any]],
    config: ImitationConfig,
    seed: int = 0,
    progress: bool = True,
) -> dict[str, Any]:
    """Fit ``policy.net`` to the heuristic's choices on states its own sampled episodes reach."""
    rng = random.Random(seed)
    opt = torch.optim.Adam(policy.net.parameters(), lr=config.lr)
    history = []
    ep_seed = 10_000_000 + seed * 100_000
    for rnd in range(config.rounds):
        labelled: list[Decision] = []
        for task in tqdm(
            rng.sample(tasks, min(config.episodes, len(tasks)))
            if len(tasks) >= config.episodes
            else [rng.choice(tasks) for _ in range(config.episodes)],
            desc=f"Imitation round {rnd + 1}/{config.rounds}",
            disable=not progress,
        ):
            ep_seed += 1
            agent.run(task["question"], seed=ep_seed)
            labelled.extend(heuristic_label(d, policy.config) for d in policy.take_decisions(ep_seed))
        policy.net.train()
        first = last = 0.0
        for epoch in range(config.epochs):
            loss = imitation_loss(policy.net, labelled)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.net.parameters(), 1.0)
            opt.step()
            first = float(loss.detach()) if epoch == 0 else first
            last = float(loss.detach())
        policy.net.eval()
        history.append(
            {"round": rnd + 1, "decisions": len(labelled), "nll_first": round(first, 4), "nll_last": round(last, 4)}
        )
        logger.info("Imitation round %d: %d decisions, NLL %.3f -> %.3f", rnd + 1, len(labelled), first, last)
    return {"rounds": history}


__all__ = ["ImitationConfig", "heuristic_label", "imitation_loss", "warm_start"]
