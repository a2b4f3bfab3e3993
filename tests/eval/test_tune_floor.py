"""The floor's tuning script reads a policy's own ranking from a nofloor row or from a floored run's trace."""

from __future__ import annotations

import json
from pathlib import Path

from sieve.agent.config import FloorConfig
from sieve.eval.tune_floor import gains, load_pairs


def _row(system: str, task: str, returned: list[str], gold: list[str], kept: list[str] | None = None) -> dict:
    row = {"system": system, "source": "toy", "task_id": task, "gold_ids": gold, "returned_doc_ids": returned}
    if kept is not None:
        row["trace"] = {"meta": {"floor": True, "policy_returned": kept}}
    return row


def test_policy_ranking_comes_from_the_floored_trace(tmp_path: Path) -> None:
    rows = [
        _row("hybrid", "t1", ["a", "b", "c", "d"], ["a", "x"]),
        # The floored run returned something else; its trace kept the policy's own chunks (two of "x").
        _row("agent:heuristic", "t1", ["a", "b", "x", "c"], ["a", "x"], kept=["x#0", "x#1", "a#0"]),
        _row("hybrid", "t2", ["p", "q"], ["q"]),
    ]  # no agent row: left out
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    pairs = load_pairs([path], "agent:heuristic:nofloor")
    assert list(pairs) == ["toy"] and len(pairs["toy"]) == 1
    assert pairs["toy"][0]["policy"] == ["x", "a"] and pairs["toy"][0]["hybrid"] == ["a", "b", "c", "d"]
    # Interleaved in full standing: a (both), x (policy rank 1 -> place 1), b, ... so recall@2 doubles hybrid's.
    g = gains(pairs, FloorConfig(full_agreement=0.5), [2, 4])
    assert g[("toy", 2)] == 0.5 and g[("toy", 4)] == 0.5
    # Standing = agreement (1/2): x's place is 2, after hybrid's b on the tie; it still enters by k = 4.
    g = gains(pairs, FloorConfig(full_agreement=1.0, agreement_power=1.0), [2, 4])
    assert g[("toy", 2)] == 0.0 and g[("toy", 4)] == 0.5
