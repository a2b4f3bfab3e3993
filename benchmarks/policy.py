"""Benchmark: policies and their closing rankers against single-shot hybrid, quality beside latency.

    python -m sieve.benchmarks.policy --data ../shared/eval/hotpotqa --limit 100 \
        --policies heuristic,learned --floors fusion,interleave,off

Opens the data folder's corpus as ``sieve eval``'s cached collection (indexed on first use), then
for each task compares doc-level recall@5/@k and the all-gold rate of hybrid top-k
(de-duplicated by document, cut at k) with each agent's returned set (grouped by document), and
prints p50 / p95 milliseconds per system: the quality/latency trade-off of each policy and
closing ranker (``fusion``: the learned fusion model; ``interleave``: the fixed per-document
interleave; ``off``: the policy's own ranking). The agent never sees gold labels; they are read
here only to score.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

logger = logging.getLogger(__name__)


def _recall(ranked: list[str], gold: set[str], k: int) -> float:
    return len(set(ranked[:k]) & gold) / len(gold) if gold else 0.0


def _parse_sets(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def open_index(data: Path, data_dir: Path | None = None):
    """``sieve eval``'s cached collection of ``data/corpus.jsonl`` (indexed on first use)."""
    from sieve.eval.data import load_sets, open_eval_index
    from sieve.settings import load_settings

    sets, maps = load_sets([data])
    return open_eval_index(sets, maps, load_settings(data_dir=data_dir).retriever_config())


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="Folder with corpus.jsonl and tasks.jsonl.")
    ap.add_argument("--limit", type=int, default=None, help="First N tasks only.")
    ap.add_argument("--offset", type=int, default=0, help="Skip the first N tasks.")
    ap.add_argument("--data-dir", type=Path, default=None, help="Data folder (default $SIEVE_DATA_DIR).")
    ap.add_argument("--policies", default="heuristic,learned", help="Agent policies to time and score.")
    ap.add_argument("--floors", default="fusion", help="Closing rankers: fusion, interleave, off (comma-separated).")
    ap.add_argument("-k", type=int, default=10, help="Returned-set size (documents).")
    ap.add_argument("--budget", type=int, default=8192)
    ap.add_argument("--rollouts", type=int, default=1)
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Override a HeuristicConfig field (repeatable), e.g. --set hop_k=4.",
    )
    ap.add_argument(
        "--agent-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Override an AgentConfig field (repeatable), e.g. --agent-set search_k=15.",
    )
    ap.add_argument("--json", action="store_true", help="Print the result row as JSON too.")
    return ap


def _score(
    rows: dict[str, list[float]], docs: list[str], seen: list[str], gold: set[str], k: int, searches: int, ms: float
) -> None:
    """Add one task's figures to a system's rows."""
    rows["r5"].append(_recall(docs, gold, 5))
    rows["r10"].append(_recall(docs, gold, k))
    rows["all"].append(float(gold <= set(docs[:k])))
    rows["seen"].append(_recall(seen, gold, len(seen) or 1))
    rows["searches"].append(searches)
    rows["ms"].append(ms)


def _agents(args: argparse.Namespace, index: Any) -> dict[str, Any]:
    from sieve.agent import AgentConfig, HeuristicConfig, SearchAgent

    heur = dataclasses.replace(HeuristicConfig(), **_parse_sets(args.set))
    agents = {}
    for policy in [p.strip() for p in args.policies.split(",") if p.strip()]:
        for floor in [f.strip() for f in args.floors.split(",") if f.strip()]:
            config = AgentConfig(k=args.k, budget_tokens=args.budget, heuristic=heur, **_parse_sets(args.agent_set))
            fc = dataclasses.replace(
                config.floor, enabled=floor != "off", method=floor if floor != "off" else config.floor.method
            )
            config = dataclasses.replace(config, floor=fc)
            agents[f"{policy}/{floor}"] = SearchAgent.with_policy(index, policy, config)
    return agents


def run(args: argparse.Namespace, tasks: list[dict[str, Any]]) -> dict[str, dict[str, list[float]]]:
    """Per system, per task: recall@5, recall@k, all-gold, seen-recall, searches and ms."""
    index = open_index(args.data, args.data_dir)
    agents = _agents(args, index)
    keys = ("r5", "r10", "all", "seen", "searches", "ms")
    rows: dict[str, dict[str, list[float]]] = {name: {key: [] for key in keys} for name in ("hybrid", *agents)}
    for task in tqdm(tasks, desc="tasks", unit="task"):
        gold = set(task["gold_ids"])
        t0 = time.perf_counter()
        hits = index.search(task["question"], 50, mode="hybrid")
        hyb = list(dict.fromkeys(h.doc_id for h in hits))[: args.k]
        _score(rows["hybrid"], hyb, hyb, gold, args.k, 1, (time.perf_counter() - t0) * 1000)
        for name, agent in agents.items():
            t0 = time.perf_counter()
            trace = agent.run_fused(task["question"], args.rollouts, group_by_doc=True)
            _score(
                rows[name],
                trace.returned_doc_ids[: args.k],
                list(trace.seen_doc_ids),
                gold,
                args.k,
                trace.n_searches,
                (time.perf_counter() - t0) * 1000,
            )
    return rows


def _print(args: argparse.Namespace, n_tasks: int, rows: dict[str, dict[str, list[float]]]) -> None:
    from sieve.eval.metrics import percentile

    out = sys.stdout
    out.write(f"\n{args.data.name}: {n_tasks} tasks, k={args.k}, budget={args.budget}, rollouts={args.rollouts}\n\n")
    out.write(
        f"| system | recall@5 | recall@{args.k} | all-gold@{args.k} | seen-recall | searches | p50 ms | p95 ms |\n"
    )
    out.write("|---|---:|---:|---:|---:|---:|---:|---:|\n")
    table = {}
    for name, r in rows.items():
        n = max(1, len(r["ms"]))
        m = {key: sum(v) / n for key, v in r.items()}
        m["p50"] = percentile(r["ms"], 50) if r["ms"] else 0.0
        m["p95"] = percentile(r["ms"], 95) if r["ms"] else 0.0
        table[name] = {key: round(v, 4) for key, v in m.items()}
        out.write(
            f"| {name} | {m['r5']:.3f} | {m['r10']:.3f} | {m['all']:.3f} | {m['seen']:.3f} | "
            f"{m['searches']:.1f} | {m['p50']:.0f} | {m['p95']:.0f} |\n"
        )
    if args.json:
        out.write(json.dumps({"data": args.data.name, "tasks": n_tasks, **table}) + "\n")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    from sieve.eval.data import read_tasks
    from sieve.core.runtime import prepare_runtime

    prepare_runtime()

    tasks = read_tasks(args.data / "tasks.jsonl")[args.offset :]
    if args.limit:
        tasks = tasks[: args.limit]
    _print(args, len(tasks), run(args, tasks))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
