"""Benchmark: the heuristic policy against single-shot hybrid retrieval at the same returned-set size.

    python -m sieve.eval.bench_policy --data ../shared/eval/2wikimultihopqa --limit 60

Indexes ``corpus.jsonl`` of the data folder into a cached collection (idempotent: a second run
reuses it), then for each task compares doc-level recall@5/@10 and the all-gold rate of
hybrid top-k (de-duplicated by document, cut at k) with the agent's returned set. The agent
never sees gold labels; they are read here only to score.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
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


def open_index(data: Path, data_dir: Path, collection: str | None = None):
    """The cached collection of ``data/corpus.jsonl`` (indexed on first use)."""
    from sieve.retriever import CorpusIndex, RetrieverConfig

    cfg = RetrieverConfig(data_dir=data_dir, embed_backend="torch", embed_dtype="bfloat16")
    name = collection or f"bench-{data.name.replace('_', '-')}"
    index = CorpusIndex.open(cfg, name, create=True)
    report = index.index_path(data / "corpus.jsonl", progress=True)
    if report.chunks_written:
        logger.info("Indexed %s: %d chunks in %.0fs", name, report.chunks_written, report.seconds)
    return index


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="Folder with corpus.jsonl and tasks.jsonl.")
    ap.add_argument("--limit", type=int, default=None, help="First N tasks only.")
    ap.add_argument("--offset", type=int, default=0, help="Skip the first N tasks.")
    ap.add_argument("--data-dir", type=Path, default=Path(os.path.expanduser("~/.cache/sieve-bench")))
    ap.add_argument("--collection", default=None)
    ap.add_argument("-k", type=int, default=10, help="Returned-set size (documents).")
    ap.add_argument("--budget", type=int, default=8192)
    ap.add_argument("--rollouts", type=int, default=1)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="Override a HeuristicConfig field (repeatable), e.g. --set hop_k=4.")
    ap.add_argument("--agent-set", action="append", default=[], metavar="KEY=VALUE",
                    help="Override an AgentConfig field (repeatable), e.g. --agent-set search_k=15.")
    ap.add_argument("--json", action="store_true", help="Print the result row as JSON too.")
    return ap


def _score(sums: dict[str, float], docs: list[str], seen: list[str], gold: set[str], k: int, searches: int,
           ms: float) -> None:
    """Add one task's figures to a system's running sums."""
    sums["r5"] += _recall(docs, gold, 5)
    sums["r10"] += _recall(docs, gold, k)
    sums["all"] += float(gold <= set(docs))
    sums["seen"] += _recall(seen, gold, len(seen) or 1)
    sums["searches"] += searches
    sums["ms"] += ms


def run(args: argparse.Namespace, tasks: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per system, the sums over ``tasks`` of recall@5, recall@k, all-gold, seen-recall, searches and ms."""
    from sieve.agent import AgentConfig, HeuristicConfig, SearchAgent, make_policy

    index = open_index(args.data, args.data_dir, args.collection)
    heur = dataclasses.replace(HeuristicConfig(), **_parse_sets(args.set))
    config = AgentConfig(k=args.k, budget_tokens=args.budget, heuristic=heur, **_parse_sets(args.agent_set))
    agent = SearchAgent(index, make_policy("heuristic", config), config)
    sums = {name: dict.fromkeys(("r5", "r10", "all", "seen", "searches", "ms"), 0.0) for name in ("hybrid", "heuristic")}
    for task in tqdm(tasks, desc="tasks", unit="task"):
        gold = set(task["gold_ids"])
        t0 = time.perf_counter()
        hits = index.search(task["question"], 50, mode="hybrid")
        hyb = list(dict.fromkeys(h.doc_id for h in hits))[: args.k]
        _score(sums["hybrid"], hyb, hyb, gold, args.k, 1, (time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        trace = agent.run_fused(task["question"], args.rollouts) if args.rollouts > 1 else agent.run(task["question"])
        _score(sums["heuristic"], trace.returned_doc_ids[: args.k], list(trace.seen_doc_ids), gold, args.k,
               trace.n_searches, (time.perf_counter() - t0) * 1000)
    return sums


def _print(args: argparse.Namespace, n_tasks: int, sums: dict[str, dict[str, float]]) -> None:
    n = max(1, n_tasks)
    rows = {name: {key: round(v / n, 4) for key, v in s.items()} for name, s in sums.items()}
    out = sys.stdout
    out.write(f"\n{args.data.name}: {n_tasks} tasks, k={args.k}, budget={args.budget}, rollouts={args.rollouts}\n")
    out.write(f"{'system':<12}{'recall@5':>10}{f'recall@{args.k}':>11}{'all-gold':>10}{'seen-recall':>13}"
              f"{'searches':>10}{'ms/task':>10}\n")
    for name, r in rows.items():
        out.write(f"{name:<12}{r['r5']:>10.3f}{r['r10']:>11.3f}{r['all']:>10.3f}{r['seen']:>13.3f}"
                  f"{r['searches']:>10.1f}{r['ms']:>10.0f}\n")
    if args.json:
        out.write(json.dumps({"data": args.data.name, "tasks": n_tasks, **rows}) + "\n")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    from sieve.eval.data import read_tasks
    from sieve.runtime import prepare_runtime

    prepare_runtime()

    tasks = read_tasks(args.data / "tasks.jsonl")[args.offset:]
    if args.limit:
        tasks = tasks[: args.limit]
    _print(args, len(tasks), run(args, tasks))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
