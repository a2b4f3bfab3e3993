"""The LLM-policies table: every floored row re-scored with the shipped floor, plus "as run" and own rankings.

python docs/experiments/llm_table.py /work/data/llm/report-2wiki40/results.jsonl
"""

import json
import sys
from collections import defaultdict
from sieve.eval.tune_floor import own_ranking, _ev
from sieve.agent.ranking.floor import fuse_with_floor
from sieve.agent.config import FloorConfig
from sieve.eval.metrics import recall_at_k, all_found_at_k

rows = defaultdict(dict)
for l in open(sys.argv[1]):
    r = json.loads(l)
    rows[r["system"]][r["task_id"]] = r
hyb = rows["hybrid"]


def line(name, lists, golds, extra=""):
    n = len(lists)
    rec = [sum(recall_at_k(x, g, k) for x, g in zip(lists, golds)) / n for k in (5, 10, 20)]
    al = [sum(all_found_at_k(x, g, k) for x, g in zip(lists, golds)) / n for k in (5, 10, 20)]
    print(f"| {name} | {n} | " + " | ".join(f"{v:.3f}" for v in rec + al) + f" |{extra}")


print("| system | n | R@5 | R@10 | R@20 | All@5 | All@10 | All@20 | s/episode |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
ids = sorted(hyb)
line(
    "`hybrid`",
    [hyb[t]["returned_doc_ids"] for t in ids],
    [hyb[t]["gold_ids"] for t in ids],
    f" {sum(hyb[t]['wall_ms'] for t in ids) / len(ids) / 1000:.2f} |",
)
for s in ["agent:heuristic", "agent:openai", "agent:local"]:
    R = rows[s]
    ts = [t for t in ids if t in R]
    own = [own_ranking(R[t]) for t in ts]
    fused = [
        [
            e.doc_id
            for e in fuse_with_floor(
                [_ev(d) for d in o], [_ev(d) for d in hyb[t]["returned_doc_ids"]], FloorConfig(), 20
            )
        ]
        for o, t in zip(own, ts)
    ]
    g = [R[t]["gold_ids"] for t in ts]
    sec = sum(R[t]["wall_ms"] for t in ts) / len(ts) / 1000
    line(f"`{s}` (floor, shipped FloorConfig)", fused, g, f" {sec:.2f} |")
    line(f"`{s}` as run (floor of its time)", [R[t]["returned_doc_ids"] for t in ts], g, " |")
    line(f"`{s}:nofloor` (trace)", own, g, " |")
