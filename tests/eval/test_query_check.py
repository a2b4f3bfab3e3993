"""No agent search in an eval report is a single common word of its corpus (real sample index, real policies)."""

from __future__ import annotations

import json

from sieve.eval.evaluator import RESULTS_FILE
from sieve.eval.query_check import agent_queries, check_queries
from sieve.eval.runner import EvalConfig, run_eval


def test_eval_traces_hold_no_single_common_word(sample_index, sample_dir, tmp_path):
    out = tmp_path / "rep"
    run_eval(
        EvalConfig(
            data=[sample_dir],
            out=out,
            progress=False,
            systems=["agent:heuristic", "agent:learned"],
            ks=[5],
            limit=6,
            plots=False,
            exports=False,
        ),
        sample_index.config,
        index=sample_index,
    )
    result = check_queries(agent_queries(out / RESULTS_FILE), sample_index.bm25_index().doc_share)
    assert result.searches > 20 and result.common == [], result.common


def test_check_flags_a_common_word(tmp_path):
    row = {
        "trace": {
            "turns": [
                {
                    "tool_calls": [
                        {"name": "search", "arguments": {"query": "Adding"}},
                        {"name": "search", "arguments": {"query": "npm cache verify"}},
                        {"name": "read", "arguments": {"id": "c1"}},
                    ]
                }
            ]
        }
    }
    path = tmp_path / RESULTS_FILE
    path.write_text(json.dumps(row) + "\n" + json.dumps({"trace": None}) + "\n", encoding="utf-8")
    result = check_queries(agent_queries(path), lambda w: {"adding": 0.05}.get(w, 0.0))
    assert (result.searches, result.single_word, result.common) == (2, 1, ["Adding"])
