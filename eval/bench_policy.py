"""Benchmark: the heuristic policy against single-shot hybrid retrieval at the same returned-set size.

    python -m sieve.agent.bench_policy --data /work/shared/eval/2wikimultihopqa --limit 60

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

    cfg = RetrieverConfig(data_dir=data_dir, embed_dtype="bfloat16")
    name = collection or f"bench-{data.name.replace('_', '-')}"
    index = CorpusIndex.open(cfg, name, create=True)
    report = index.index_path(data / "corpus.jsonl", progress=True)
    if report.chunks_written:
        logger.info("Indexed %s: %d chunks in %.0fs", name, report.chunks_written, report.seconds)
    return index


def main(argv: list[str] | None = None) -> int:
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
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    from sieve.runtime import prepare_runtime

    prepare_runtime()

    from sieve.agent import AgentConfig, HeuristicConfig, SearchAgent, make_policy

    index = open_index(args.data, args.data_dir, args.collection)
    with (args.data / "tasks.jsonl").open(encoding="utf-8") as f:
        tasks = [json.loads(line) for line in f if line.strip()]
    tasks = tasks[args.offset:]
    if args.limit:
        tasks = tasks[: args.limit]
    heur = dataclasses.replace(HeuristicConfig(), **_parse_sets(args.set))
    config = AgentConfig(k=args.k, budget_tokens=args.budget, heuristic=heur, **_parse_sets(args.agent_set))
    agent = SearchAgent(index, make_policy("heuristic", config), config)

    rows: dict[str, dict[str, float]] = {"hybrid": {}, "heuristic": {}}
    sums = {name: {"r5": 0.0, "r10": 0.0, "all": 0.0, "seen": 0.0, "searches": 0.0, "ms": 0.0} for name in rows}
    for task in tqdm(tasks, desc="tasks", unit="task"):
        gold = set(task["gold_ids"])
        t0 = time.perf_counter()
        hits = index.search(task["question"], 50, mode="hybrid")
        hyb = list(dict.fromkeys(h.doc_id for h in hits))[: args.k]
        ms_h = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        trace = agent.run_fused(task["question"], args.rollouts) if args.rollouts > 1 else agent.run(task["question"])
        ms_a = (time.perf_counter() - t0) * 1000
        ret = trace.returned_doc_ids[: args.k]
        for name, docs, seen, n, ms in (("hybrid", hyb, hyb, 1, ms_h),
                                        ("heuristic", ret, trace.seen_doc_ids, trace.n_searches, ms_a)):
            s = sums[name]
            s["r5"] += _recall(docs, gold, 5)
            s["r10"] += _recall(docs, gold, args.k)
            s["all"] += float(gold <= set(docs))
            s["seen"] += _recall(list(seen), gold, len(seen) or 1)
            s["searches"] += n
            s["ms"] += ms
    n = max(1, len(tasks))
    out = sys.stdout
    out.write(f"\n{args.data.name}: {len(tasks)} tasks, k={args.k}, budget={args.budget}, rollouts={args.rollouts}\n")
    out.write(f"{'system':<12}{'recall@5':>10}{f'recall@{args.k}':>11}{'all-gold':>10}{'seen-recall':>13}"
              f"{'searches':>10}{'ms/task':>10}\n")
    for name, s in sums.items():
        rows[name] = {key: round(v / n, 4) for key, v in s.items()}
        r = rows[name]
        out.write(f"{name:<12}{r['r5']:>10.3f}{r['r10']:>11.3f}{r['all']:>10.3f}{r['seen']:>13.3f}"
                  f"{r['searches']:>10.1f}{r['ms']:>10.0f}\n")
    if args.json:
        out.write(json.dumps({"data": args.data.name, "tasks": len(tasks), **rows}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
