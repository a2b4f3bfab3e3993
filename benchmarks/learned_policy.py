"""Speed of the learned policy: episodes per second (served and in training) and the cost of one GRPO update.

    python -m sieve.benchmarks.learned_policy -c trainpool --tasks runs/pool/tasks.jsonl [--policy-path DIR]

prints a table: greedy episodes/s as served (uncached retrieval, the heuristic alongside for
scale), sampled episodes/s in training (the first group of a task, retrieval cold, and the rest,
cached), and one update's time split into rollouts and the optimiser steps. Timings depend on
the machine and its load: the script prints ``os.getloadavg()`` with them.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from sieve.core.defaults import DEFAULT_K


def _rate(n: int, seconds: float) -> str:
    return f"{n / seconds:.2f}" if seconds > 0 else "-"


def bench(
    collection: str,
    tasks_path: Path,
    policy_path: Path | None,
    n_tasks: int,
    group: int,
    epochs: int,
    data_dir: Path | None,
) -> list[tuple[str, str, str]]:
    from sieve.retriever import CorpusIndex
    from sieve.settings import load_settings
    from sieve.eval.data import read_tasks

    index = CorpusIndex.open(load_settings(data_dir=data_dir).retriever_config(), collection)
    tasks = read_tasks(tasks_path, n_tasks)
    index.search(tasks[0]["question"], 5)  # load BM25 and the embedder outside the timings
    return _served_rows(index, tasks, policy_path) + _training_rows(index, tasks, policy_path, group, epochs)


def _served_rows(index: Any, tasks: list[dict[str, Any]], policy_path: Path | None) -> list[tuple[str, str, str]]:
    """Greedy episodes as served (no cache), the heuristic and the learned policy."""
    from sieve.agent import AgentConfig, SearchAgent, make_policy

    rows: list[tuple[str, str, str]] = []
    config = AgentConfig(k=DEFAULT_K)
    for name in ("heuristic", "learned"):
        agent = SearchAgent(index, make_policy(name, AgentConfig(k=DEFAULT_K, policy_path=policy_path)), config)
        index.embedder.clear_cache()
        t0 = time.perf_counter()
        traces = [agent.run(t["question"]) for t in tasks]
        dt = time.perf_counter() - t0
        searches = sum(t.n_searches for t in traces) / len(traces)
        rows.append(
            (
                f"served, {name} (greedy, no cache)",
                f"{_rate(len(tasks), dt)} episodes/s",
                f"{dt / len(tasks) * 1000:.0f} ms/episode, {searches:.1f} searches/episode",
            )
        )
    return rows


def _training_rows(
    index: Any, tasks: list[dict[str, Any]], policy_path: Path | None, group: int, epochs: int
) -> list[tuple[str, str, str]]:
    """Sampled rollouts as the trainer runs them (the first of a task cache-cold, the rest warm), then one update."""
    import torch

    from sieve.train.learned.grpo import update

    rollouts, t_cold, t_warm, policy, hit_rate = _rollouts(index, tasks, policy_path, group)
    rows = [
        ("training, 1st rollout of a task (cache cold)", f"{_rate(len(tasks), t_cold)} episodes/s", ""),
        (
            f"training, rollouts 2..{group} (cache warm)",
            f"{_rate(len(tasks) * (group - 1), t_warm)} episodes/s",
            f"cache hit rate {hit_rate:.0%}",
        ),
    ]
    opt = torch.optim.Adam(policy.net.parameters(), lr=1e-3)
    t0 = time.perf_counter()
    update(policy.net, opt, rollouts, epochs=epochs, clip=0.2, entropy_coef=0.003, max_grad_norm=1.0)
    dt = time.perf_counter() - t0
    n_dec = sum(len(r.decisions) for r in rollouts)
    rows.append((f"update: {epochs} optimiser steps on {len(rollouts)} episodes", f"{dt:.2f} s", f"{n_dec} decisions"))
    rows.append(
        (
            f"one GRPO update ({len(tasks)} tasks x {group} rollouts + optimiser)",
            f"{t_cold + t_warm + dt:.1f} s",
            f"rollouts {t_cold + t_warm:.1f} s + update {dt:.2f} s",
        )
    )
    return rows


def _rollouts(
    index: Any, tasks: list[dict[str, Any]], policy_path: Path | None, group: int
) -> tuple[list[Any], float, float, Any, float]:
    """A group of sampled rollouts per task over the retrieval cache: (rollouts, seconds of each task's
    first rollout, seconds of the rest, the sampling policy, the cache's hit rate)."""
    from sieve.agent import AgentConfig, SearchAgent
    from sieve.agent.config import FloorConfig
    from sieve.agent.policies.learned import LearnedPolicy
    from sieve.train.learned import CachedIndex
    from sieve.train.learned.grpo import run_group
    from sieve.train.rewards import RewardConfig

    cached = CachedIndex(index)
    policy = LearnedPolicy.load(policy_path, sample=True, record=True, temperature=1.5)
    policy.prefetch = cached.embedder.embed_queries
    # Training rollouts run as the trainer runs them: the floor off, so rewards judge the policy's own ranking
    # (and the floor's extra hybrid search is not timed as rollout cost).
    agent = SearchAgent(cached, policy, AgentConfig(k=DEFAULT_K, tool_workers=1, floor=FloorConfig(enabled=False)))
    index.embedder.clear_cache()
    rollouts: list[Any] = []
    t_cold = t_warm = 0.0
    for gi, task in enumerate(tasks):
        t0 = time.perf_counter()
        rollouts += run_group(agent, policy, task, gi, [gi * 1000], RewardConfig(), 0.0)
        t1 = time.perf_counter()
        rollouts += run_group(agent, policy, task, gi, [gi * 1000 + j for j in range(1, group)], RewardConfig(), 0.0)
        t_cold, t_warm = t_cold + (t1 - t0), t_warm + (time.perf_counter() - t1)
    return rollouts, t_cold, t_warm, policy, cached.hits / max(1, cached.hits + cached.misses)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-c", "--collection", required=True)
    ap.add_argument("--tasks", type=Path, required=True)
    ap.add_argument("--policy-path", type=Path, default=None)
    ap.add_argument("--tasks-per-update", type=int, default=4)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--data-dir", type=Path, default=None)
    args = ap.parse_args(argv)
    from sieve.core.runtime import prepare_runtime

    prepare_runtime()
    load = os.getloadavg()
    rows = bench(
        args.collection, args.tasks, args.policy_path, args.tasks_per_update, args.group, args.epochs, args.data_dir
    )
    print(
        f"\nLoad average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; after: "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)\n"
    )
    print("| what | rate / time | detail |\n|---|---:|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} |")


if __name__ == "__main__":
    main()
