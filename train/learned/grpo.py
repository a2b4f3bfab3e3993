"""GRPO for the learned policy: groups of sampled episodes, group-normalised advantages, clipped ratios.

One update: for each of ``B`` tasks run ``G`` episodes with the policy sampling (real agent
episodes through the harness), score each with the episode reward of :mod:`sieve.train.rewards`
(unchanged), normalise rewards within each task's group, then take ``epochs`` optimiser steps on
the PPO-clipped surrogate over every decision step of the batch (token-level mean, as DAPO),
plus a small entropy bonus. Groups whose rewards all tie carry no signal and are dropped.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from sieve.agent.policies.learned.network import score_decisions
from sieve.eval.metrics import all_found_at_k, recall_at_k
from sieve.train.rewards import Gold, score_episode

if TYPE_CHECKING:
    from sieve.agent.loop import SearchAgent
    from sieve.agent.policies.learned import Decision, LearnedPolicy, PolicyNetwork
    from sieve.agent.trace import Trace
    from sieve.train.rewards import RewardBreakdown, RewardConfig


@dataclass
class Rollout:
    """One sampled episode: its trace, reward breakdown, decisions and group."""

    task: dict[str, Any]
    trace: Trace
    reward: RewardBreakdown
    decisions: list[Decision]
    group: int
    recall: float
    all_gold: float


@dataclass
class StepStats:
    """What one update did (what the curve and the tables show)."""

    update: int
    reward: float
    reward_std: float
    components: dict[str, float]
    recall: float
    all_gold: float
    searches: float
    turns: float
    pruned: float
    decisions: float
    loss: float = 0.0
    entropy: float = 0.0
    clip_frac: float = 0.0
    approx_kl: float = 0.0
    groups_used: int = 0
    rollout_s: float = 0.0
    update_s: float = 0.0
    cpu_s: float = 0.0  # CPU seconds of this process for the update (wall time counts other processes' load too)
    load: float = 0.0  # 1-minute load average when the update ended
    progress: float = 0.0
    cache_hit_rate: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


_COMPONENTS = (
    "total",
    "context1",
    "f_beta",
    "traj_recall",
    "answer",
    "p_collapse",
    "p_repeat",
    "p_gold_prune",
    "p_malformed",
    "aux_penalty",
)


def run_group(
    agent: SearchAgent,
    policy: LearnedPolicy,
    task: dict[str, Any],
    group: int,
    seeds: list[int],
    reward_config: RewardConfig,
    progress: float,
) -> list[Rollout]:
    """``len(seeds)`` sampled episodes of one task, scored."""
    gold = Gold.from_task(task)
    out = []
    for seed in seeds:
        trace = agent.run(task["question"], seed=seed)
        decisions = policy.take_decisions(seed)
        br = score_episode(trace, gold, reward_config, progress)
        docs = trace.returned_doc_ids
        out.append(
            Rollout(
                task=task,
                trace=trace,
                reward=br,
                decisions=decisions,
                group=group,
                recall=recall_at_k(docs, gold.doc_ids, agent.config.k),
                all_gold=all_found_at_k(docs, gold.doc_ids, agent.config.k),
            )
        )
    return out


def advantages(rollouts: list[Rollout], eps: float = 1e-6) -> list[float]:
    """Reward minus its group's mean, over the group's standard deviation (0 when the group ties).

    Example:
        >>> from types import SimpleNamespace as N
        >>> rs = [N(group=g, reward=N(total=t)) for g, t in ((0, 0.0), (0, 2.0), (1, 1.0), (1, 1.0))]
        >>> [round(a, 3) for a in advantages(rs)]
        [-1.0, 1.0, 0.0, 0.0]
    """
    by_group: dict[int, list[float]] = {}
    for r in rollouts:
        by_group.setdefault(r.group, []).append(r.reward.total)
    stats = {
        g: (sum(v) / len(v), math.sqrt(sum((x - sum(v) / len(v)) ** 2 for x in v) / len(v)))
        for g, v in by_group.items()
    }
    out = []
    for r in rollouts:
        mu, sd = stats[r.group]
        out.append(0.0 if sd < eps else (r.reward.total - mu) / (sd + eps))
    return out


def ppo_loss(
    net: PolicyNetwork, decisions: list[Decision], adv: torch.Tensor, clip: float, entropy_coef: float
) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped surrogate over every decision step (mean over steps), minus ``entropy_coef`` x entropy."""
    scored = score_decisions(net, decisions)
    total = torch.zeros(())
    ent = torch.zeros(())
    n = 0
    clipped = 0.0
    kl = 0.0
    for s in scored.values():
        mask = s.mask.float()
        a = adv[s.episode].unsqueeze(1)
        ratio = torch.exp(s.logp - s.old_logp)
        surr = torch.minimum(ratio * a, torch.clamp(ratio, 1 - clip, 1 + clip) * a)
        total = total + (surr * mask).sum()
        ent = ent + (s.entropy * mask).sum()
        n += int(mask.sum().item())
        with torch.no_grad():
            clipped += float((((ratio - 1).abs() > clip).float() * mask).sum())
            kl += float((((ratio - 1) - torch.log(ratio.clamp_min(1e-12))) * mask).sum())
    n = max(n, 1)
    loss = -(total + entropy_coef * ent) / n
    return loss, {"entropy": float(ent.detach()) / n, "clip_frac": clipped / n, "approx_kl": kl / n}


def update(
    net: PolicyNetwork,
    optimizer: torch.optim.Optimizer,
    rollouts: list[Rollout],
    *,
    epochs: int,
    clip: float,
    entropy_coef: float,
    max_grad_norm: float,
) -> dict[str, float]:
    """``epochs`` optimiser steps on the batch; returns the last step's loss and diagnostics."""
    adv_list = advantages(rollouts)
    decisions = []
    adv: list[float] = []
    for r, a in zip(rollouts, adv_list):
        if a == 0.0:
            continue
        for d in r.decisions:
            d.episode = len(adv)
            decisions.append(d)
        adv.append(a)
    if not decisions:
        return {"loss": 0.0, "entropy": 0.0, "clip_frac": 0.0, "approx_kl": 0.0, "groups_used": 0}
    adv_t = torch.tensor(adv, dtype=torch.float32)
    net.train()
    info: dict[str, float] = {}
    for _ in range(epochs):
        loss, info = ppo_loss(net, decisions, adv_t, clip, entropy_coef)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), max_grad_norm)
        optimizer.step()
        info["loss"] = float(loss.detach())
    net.eval()
    info["groups_used"] = len({r.group for r, a in zip(rollouts, adv_list) if a != 0.0})
    return info


def summarize(rollouts: list[Rollout], update_i: int) -> StepStats:
    """Batch means of the reward, its components and behaviour."""
    n = max(1, len(rollouts))
    totals = [r.reward.total for r in rollouts]
    mu = sum(totals) / n
    comps = {c: sum(float(getattr(r.reward, c)) for r in rollouts) / n for c in _COMPONENTS}
    return StepStats(
        update=update_i,
        reward=mu,
        reward_std=math.sqrt(sum((t - mu) ** 2 for t in totals) / n),
        components=comps,
        recall=sum(r.recall for r in rollouts) / n,
        all_gold=sum(r.all_gold for r in rollouts) / n,
        searches=sum(r.reward.n_searches for r in rollouts) / n,
        turns=sum(r.reward.n_turns for r in rollouts) / n,
        pruned=sum(len(r.trace.pruned_chunk_ids) for r in rollouts) / n,
        decisions=sum(len(r.decisions) for r in rollouts) / n,
    )


def timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


__all__ = ["Rollout", "StepStats", "advantages", "ppo_loss", "run_group", "summarize", "timed", "update"]
