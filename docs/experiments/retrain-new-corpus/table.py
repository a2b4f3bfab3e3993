"""Before/after table of ``sieve eval`` runs, with each floored agent's own ranking (``:nofloor``) read from its trace.

    python docs/experiments/retrain-new-corpus/table.py before=OUT1/results.jsonl after=OUT2/results.jsonl

A floored run keeps the policy's ranking before the floor in ``trace.meta.policy_returned`` (chunk
ids); :func:`sieve.eval.tune_floor.own_ranking` turns them into what ``agent:<policy>:nofloor``
would return (the episode is greedy, the floor runs after it), so one agent run gives both rows.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from sieve.eval.metrics import all_found_at_k, recall_at_k
from sieve.eval.tune_floor import own_ranking

KS = (5, 10, 20)


def row(name: str, items: list[tuple[list[str], list[str]]]) -> str:
    n = len(items)
    rec = [sum(recall_at_k(d, g, k) for d, g in items) / n for k in KS]
    full = [sum(all_found_at_k(d, g, k) for d, g in items) / n for k in KS]
    return f"| {name} | {n} | " + " | ".join(f"{v:.3f}" for v in [*rec, *full]) + " |"


def table(runs: list[tuple[str, Path]]) -> str:
    lines = ["| system | n | R@5 | R@10 | R@20 | All@5 | All@10 | All@20 |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for label, path in runs:
        by: dict[str, list[dict[str, Any]]] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                by.setdefault(r["system"], []).append(r)
        for system, rows in sorted(by.items()):
            lines.append(row(f"{label} `{system}`", [(r["returned_doc_ids"], r["gold_ids"]) for r in rows]))
            if system.startswith("agent:") and not system.endswith(":nofloor"):
                kept = [own_ranking(r) for r in rows]
                if any(k is None for k in kept):
                    raise ValueError(f"Expected every {system} result in {path} to keep meta.policy_returned")
                own = [(k, r["gold_ids"]) for k, r in zip(kept, rows)]
                lines.append(row(f"{label} `{system}:nofloor` (trace)", own))
    return "\n".join(lines)


if __name__ == "__main__":
    print(table([(a.split("=", 1)[0], Path(a.split("=", 1)[1])) for a in sys.argv[1:]]))
