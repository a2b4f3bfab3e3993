"""Tune the floor's standing on declared tuning data, from one ``sieve eval`` run, without re-running the agent.

The floor merges per document, so its result for any setting follows from two rankings per task:
the policy's own (system ``agent:<policy>:nofloor``, or the ranking a floored run's trace kept) and hybrid's (system ``hybrid``, the very
ranking the floor searches). Run those two once on each tuning set, then::

    sieve eval --data DIR --systems hybrid,agent:heuristic --k 5,10,20 --out OUT
    python -m sieve.eval.tune_floor OUT1/results.jsonl OUT2/results.jsonl ...

It prints, per setting, each set's recall@k minus hybrid's, and picks, with the agreement
scaling on, the ``full_agreement``, ``agreement_power`` and ``corroboration`` whose worst (policy, set, k) difference
is largest (ties: the larger mean gain, then the more protective setting). Only pass runs on declared
tuning data (``eval/tuning_sets.json``): tuning on a reported set makes its figures in-sample.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from sieve.agent.config import FloorConfig
from sieve.agent.ranking.floor import fuse_with_floor
from sieve.agent.trace import Evidence
from sieve.eval.metrics import recall_at_k
from sieve.retriever.chunking import split_chunk_id

FULL_AGREEMENTS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)
AGREEMENT_POWERS: tuple[float, ...] = (1.0, 1.5, 2.0, 3.0)
CORROBORATIONS: tuple[float, ...] = (0.0, 0.1, 0.25, 0.5)


def _ev(doc_id: str) -> Evidence:
    return Evidence(chunk_id=f"{doc_id}#0", doc_id=doc_id, score=0.0, rank=0)


def own_ranking(result: dict[str, Any]) -> list[str] | None:
    """The documents, in order, that a floored ``sieve eval`` result's episode ranked before the floor.

    The trace keeps the policy's chunk ids (``meta.policy_returned``); the episode is greedy and the
    floor runs after it, so these are what ``agent:<policy>:nofloor`` would return. ``None`` when the
    result carries no such trace (a retrieval system, or a run without the floor).
    """
    kept = ((result.get("trace") or {}).get("meta") or {}).get("policy_returned")
    return None if kept is None else list(dict.fromkeys(split_chunk_id(c)[0] for c in kept))


def load_pairs(paths: list[Path], policy_system: str) -> dict[str, list[dict[str, Any]]]:
    """Per source, ``[{"gold", "hybrid", "policy"}]`` for every task both systems answered.

    The policy's own ranking is ``policy_system``'s returned ids, or, for a floored run of the same
    policy (``agent:<policy>``), the ranking its trace kept before the floor (``meta.policy_returned``).
    """
    floored = policy_system.removesuffix(":nofloor")
    rows: dict[tuple[str, str], dict[str, Any]] = defaultdict(dict)
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                key = (r["source"], r["task_id"])
                rows[key]["gold"] = r["gold_ids"]
                if r["system"] == "hybrid":
                    rows[key]["hybrid"] = r["returned_doc_ids"]
                elif r["system"] == policy_system:
                    rows[key]["policy"] = r["returned_doc_ids"]
                elif r["system"] == floored and "policy" not in rows[key]:
                    kept = own_ranking(r)
                    if kept is not None:
                        rows[key]["policy"] = kept
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (source, _), r in sorted(rows.items()):
        if "hybrid" in r and "policy" in r:
            out[source].append(r)
    return dict(out)


def gains(pairs: dict[str, list[dict[str, Any]]], config: FloorConfig, ks: list[int]) -> dict[tuple[str, int], float]:
    """Per (source, k): mean recall@k of the floored ranking minus hybrid's."""
    out = {}
    for source, tasks in pairs.items():
        for k in ks:
            diff = 0.0
            for t in tasks:
                fused = fuse_with_floor([_ev(d) for d in t["policy"]], [_ev(d) for d in t["hybrid"]], config, max(ks))
                diff += recall_at_k([e.doc_id for e in fused], t["gold"], k) - recall_at_k(t["hybrid"], t["gold"], k)
            out[(source, k)] = diff / len(tasks)
    return out


def _pairs_by_policy(paths: list[Path], systems: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Every (policy, source) as its own tuning set, named ``source`` or ``policy/source`` with several."""
    out: dict[str, list[dict[str, Any]]] = {}
    for system in systems:
        tag = system.removeprefix("agent:").removesuffix(":nofloor")
        for source, tasks in load_pairs(paths, system).items():
            out[source if len(systems) == 1 else f"{tag}/{source}"] = tasks
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, nargs="+", help="results.jsonl of `sieve eval` runs on tuning data.")
    ap.add_argument(
        "--policy-system",
        default="agent:heuristic:nofloor",
        help="Comma-separated policy systems; each (policy, set) counts as one tuning set.",
    )
    ap.add_argument("--ks", default="5,10,20")
    args = ap.parse_args(argv)
    ks = [int(k) for k in args.ks.split(",")]
    pairs = _pairs_by_policy(args.results, [s.strip() for s in args.policy_system.split(",") if s.strip()])
    print("tasks: " + ", ".join(f"{s} {len(t)}" for s, t in pairs.items()))
    alone = {
        (s, k): sum(recall_at_k(t["policy"], t["gold"], k) - recall_at_k(t["hybrid"], t["gold"], k) for t in ts)
        / len(ts)
        for s, ts in pairs.items()
        for k in ks
    }
    print("policy alone (no floor)  " + "  ".join(f"{s}@{k} {v:+.3f}" for (s, k), v in alone.items()))
    scored = []
    settings = [
        (True, full, power, corr)
        for full, power, corr in itertools.product(FULL_AGREEMENTS, AGREEMENT_POWERS, CORROBORATIONS)
    ]
    for agree, full, power, corr in [*settings, (False, 1.0, 1.0, 0.0)]:
        config = FloorConfig(full_agreement=full, agreement_power=power, corroboration=corr, agreement=agree)
        g = gains(pairs, config, ks)
        scored.append((min(g.values()), sum(g.values()) / len(g), agree, full, power, corr))
        label = (
            f"full_agreement={full:<4} power={power:<3} corroboration={corr:<4}"
            if agree
            else "agreement scaling off                          "
        )
        print(f"{label} " + "  ".join(f"{s}@{k} {v:+.3f}" for (s, k), v in g.items()))
    # The agreement scaling is a requirement, not a knob: without it a ranking unrelated to the
    # question displaces hybrid's (its row is printed for reference only). Ties: the larger mean
    # gain, then the more protective setting (larger full_agreement, larger power, less corroboration).
    worst, mean, _, full, power, corr = max(
        (t for t in scored if t[2]), key=lambda t: (round(t[0], 4), round(t[1], 4), t[3], t[4], -t[5])
    )
    print(
        f"chosen: full_agreement={full} agreement_power={power} corroboration={corr} "
        f"(worst {worst:+.3f}, mean {mean:+.3f} recall vs hybrid)"
    )
    return 0


__all__ = ["AGREEMENT_POWERS", "CORROBORATIONS", "FULL_AGREEMENTS", "gains", "load_pairs", "own_ranking"]


if __name__ == "__main__":
    raise SystemExit(main())
