"""Metric maths on hand-computed cases (exact values), and per-row / aggregate bookkeeping."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import pytrec_eval  # a test extra (trec_eval's reference maths): a missing one fails the run

from sieve.agent.trace import Evidence, ToolCall, Trace, Turn
from sieve.eval.evaluator import aggregate, row_metrics
from sieve.eval.metrics import (
    all_found_at_k,
    dedupe,
    doc_id_of,
    fbeta,
    fbeta_at_k,
    ndcg_at_k,
    percentile,
    precision_at_k,
    prune_accuracy,
    ranking_metrics,
    recall_at_k,
    reciprocal_rank,
    top_k,
    trajectory_recall,
)

# Chunks as a system returns them: two chunks of "a" lead the list.
CHUNKS = ["a#0", "a#1", "x#0", "b#2", "y#0"]
DOCS = [doc_id_of(c) for c in CHUNKS]  # a, a, x, b, y
GOLD = {"a", "b", "c"}


def test_chunks_count_for_their_document_and_dedupe_keeps_first_occurrence():
    assert DOCS == ["a", "a", "x", "b", "y"]
    assert doc_id_of("doc#with#hash#12") == "doc#with#hash"
    assert doc_id_of("plain-doc") == "plain-doc"
    assert dedupe(DOCS) == ["a", "x", "b", "y"]
    assert top_k(DOCS, 3) == ["a", "x", "b"]


def test_recall_dedupes_before_cutting_at_k():
    # Without de-duplication the top 3 would be a, a, x (1 of 3 gold); with it a, x, b (2 of 3).
    assert recall_at_k(DOCS, GOLD, 3) == pytest.approx(2 / 3)
    assert recall_at_k(DOCS, GOLD, 2) == pytest.approx(1 / 3)
    assert recall_at_k(DOCS, GOLD, 1) == pytest.approx(1 / 3)
    assert recall_at_k(DOCS, GOLD, 100) == pytest.approx(2 / 3)  # k beyond the list
    assert recall_at_k([], GOLD, 5) == 0.0
    assert recall_at_k(DOCS, set(), 5) == 0.0  # nothing to find


def test_all_found():
    assert all_found_at_k(DOCS, GOLD, 20) == 0.0  # c never returned
    assert all_found_at_k(DOCS, {"a", "b"}, 3) == 1.0
    assert all_found_at_k(DOCS, {"a", "b"}, 2) == 0.0
    assert all_found_at_k(DOCS, [], 5) == 0.0


def test_precision_is_over_the_returned_set():
    assert precision_at_k(DOCS, GOLD, 3) == pytest.approx(2 / 3)
    assert precision_at_k(DOCS, GOLD, 2) == pytest.approx(1 / 2)
    # Only 4 distinct docs were returned: precision at 10 is 2 of those 4.
    assert precision_at_k(DOCS, GOLD, 10) == pytest.approx(0.5)
    assert precision_at_k([], GOLD, 10) == 0.0


def test_fbeta_exact_values():
    assert fbeta(0.5, 1.0, beta=1) == pytest.approx(2 / 3)
    assert fbeta(0.5, 1.0, beta=2) == pytest.approx(5 / 6)  # 5*.5 / (4*.5 + 1)
    assert fbeta(0.5, 1.0, beta=4) == pytest.approx(17 / 18)  # 17*.5 / (16*.5 + 1)
    assert fbeta(0.0, 0.0) == 0.0
    assert fbeta(1.0, 0.0, beta=4) == 0.0
    with pytest.raises(ValueError, match="beta > 0"):
        fbeta(0.5, 0.5, beta=0)
    # F1 of the top-10 set: p = 2/4, r = 2/3 -> 2pr/(p+r) = 4/7.
    assert fbeta_at_k(DOCS, GOLD, 10) == pytest.approx(4 / 7)
    assert fbeta_at_k(DOCS, GOLD, 3) == pytest.approx(2 / 3)


def test_mrr_counts_distinct_documents():
    assert reciprocal_rank(DOCS, GOLD) == 1.0
    # x, x, y, b -> distinct x, y, b: b is third.
    assert reciprocal_rank(["x#0", "x#1", "y#0", "b#0"], {"b"}) == 0.0  # chunk ids are not doc ids
    assert reciprocal_rank(["x", "x", "y", "b"], {"b"}) == pytest.approx(1 / 3)
    assert reciprocal_rank(["x", "x", "y", "b"], {"b"}, k=2) == 0.0
    assert reciprocal_rank([], {"b"}) == 0.0


def test_ndcg_hand_computed():
    # distinct a, x, b, y; gold a, b, c: DCG = 1/log2(2) + 1/log2(4) = 1.5; IDCG = 1 + 1/log2(3) + 1/2.
    assert ndcg_at_k(DOCS, GOLD, 10) == pytest.approx(1.5 / (1.5 + 1 / math.log2(3)))
    # cut at 2: DCG = 1; IDCG over min(3, 2) = 2 positions = 1 + 1/log2(3).
    assert ndcg_at_k(DOCS, GOLD, 2) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert ndcg_at_k(["a", "b"], {"a", "b"}, 10) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "a"], {"a"}, 1) == 0.0


def test_cutoff_must_be_positive():
    with pytest.raises(ValueError, match="k >= 1"):
        recall_at_k(DOCS, GOLD, 0)


def test_trajectory_recall_and_prune_accuracy():
    assert trajectory_recall(["a", "x", "a", "c"], GOLD) == pytest.approx(2 / 3)
    assert trajectory_recall([], GOLD) == 0.0
    # 4 pruned chunks, one of them (a#1) from a gold doc.
    assert prune_accuracy(["x#0", "a#1", "y#0", "z#2"], GOLD) == pytest.approx(0.75)
    assert prune_accuracy(["a#0", "b#0"], GOLD) == 0.0
    assert prune_accuracy([], GOLD) is None


def test_percentile_matches_numpy_linear():
    rng = random.Random(7)
    for n in (1, 2, 5, 37):
        xs = [rng.uniform(0, 1000) for _ in range(n)]
        for q in (0, 50, 95, 100):
            assert percentile(xs, q) == pytest.approx(float(np.percentile(xs, q)))
    with pytest.raises(ValueError):
        percentile([], 50)


def test_ranking_metrics_keys_and_values():
    m = ranking_metrics(DOCS, GOLD, [2, 3])
    assert set(m) == {
        "recall@2",
        "all_found@2",
        "precision@2",
        "f1@2",
        "recall@3",
        "all_found@3",
        "precision@3",
        "f1@3",
        "mrr@10",
        "ndcg@10",
    }
    assert m["recall@3"] == pytest.approx(2 / 3)
    assert m["f1@2"] == pytest.approx(fbeta(0.5, 1 / 3))


def _agent_trace() -> Trace:
    """A hand-built trace: 2 searches, 1 grep, 1 prune, 1 malformed call over 3 turns."""
    turns = [
        Turn(
            index=0,
            tool_calls=[
                ToolCall("search", {"query": "q"}, result_chunk_ids=["a#0", "x#0"]),
                ToolCall("search", {"query": "q2"}, result_chunk_ids=["y#0"]),
            ],
        ),
        Turn(
            index=1,
            tool_calls=[
                ToolCall("grep", {"pattern": "abc"}, result_chunk_ids=["c#0"]),
                ToolCall("search", {}, malformed=True, error="missing query"),
            ],
        ),
        Turn(index=2, tool_calls=[ToolCall("prune", {"chunk_ids": ["x#0", "c#0"]})]),
    ]
    return Trace(
        question="q",
        turns=turns,
        seen_chunk_ids=["a#0", "x#0", "y#0", "c#0"],
        seen_doc_ids=["a", "x", "y", "c"],
        pruned_chunk_ids=["x#0", "c#0"],
        returned=[Evidence("a#0", "a", 0.9, 1), Evidence("y#0", "y", 0.5, 2)],
        tokens_total=1234,
        peak_context_tokens=600,
    )


def _row(returned, gold, wall_ms, trace=None, toks=None):
    return {
        "gold_ids": list(gold),
        "returned_doc_ids": list(returned),
        "wall_ms": wall_ms,
        "chunk_tokens": toks or [10] * len(returned),
        "trace": trace,
    }


def test_row_metrics_read_the_trace():
    trace = _agent_trace()
    m = row_metrics(_row(trace.returned_doc_ids, GOLD, 50.0, trace.to_dict(), [30, 20]), [1, 2])
    assert m["recall@2"] == pytest.approx(1 / 3)
    assert m["trajectory_recall"] == pytest.approx(2 / 3)  # a and c were seen, b never
    assert m["searches"] == 3  # search, search, grep; the malformed call does not count
    assert m["turns"] == 3
    assert m["tool_calls"] == 5
    assert m["malformed_calls"] == 1
    assert m["prune_calls"] == 1
    assert m["pruned_chunks"] == 2
    assert m["prune_accuracy"] == pytest.approx(0.5)  # c#0 was gold
    assert m["tokens"] == 1234
    assert m["returned_tokens@1"] == 30 and m["returned_tokens@2"] == 50
    # Baselines have no trace, hence no agent metrics at all.
    assert "trajectory_recall" not in row_metrics(_row(["a"], GOLD, 1.0), [1])


def test_aggregate_means_skip_abstentions_and_report_wall_percentiles():
    pruned = _agent_trace().to_dict()
    unpruned = _agent_trace()
    unpruned.pruned_chunk_ids = []
    rows = [
        _row(["a", "b"], {"a", "b"}, 10.0, pruned),
        _row(["x", "a"], {"a", "b"}, 30.0, unpruned.to_dict()),
        _row(["y"], {"a"}, 20.0, unpruned.to_dict()),
    ]
    agg = aggregate(rows, [1, 2])
    assert agg["n_tasks"] == 3
    assert agg["recall@1"] == pytest.approx((0.5 + 0 + 0) / 3)
    assert agg["recall@2"] == pytest.approx((1 + 0.5 + 0) / 3)
    # Only the first task pruned (x#0, c#0: neither gold for it); the others abstain instead of counting 0.
    assert agg["prune_accuracy"] == pytest.approx(1.0)
    assert agg["wall_ms_p50"] == pytest.approx(20.0)
    assert agg["wall_ms_p95"] == pytest.approx(29.0)  # 20 + 0.9 * (30 - 20)
    assert agg["wall_s_total"] == pytest.approx(0.06)
    assert aggregate([], [1]) == {}


def test_metrics_and_trec_export_agree_with_trec_eval():
    """Reference check: our maths on exported TREC files against trec_eval's (pytrec_eval bindings)."""
    from sieve.eval.exports import qrels_lines, trec_run_lines

    rng = random.Random(3)
    pool = [f"d{i}" for i in range(40)]
    rows = []
    for q in range(30):
        returned = rng.sample(pool, rng.randint(0, 20))
        gold = rng.sample(pool, rng.randint(1, 4))
        rows.append({"task_id": f"q{q}", "returned_doc_ids": returned, "gold_ids": gold})
    qrels: dict[str, dict[str, int]] = {}
    for line in qrels_lines(rows):
        qid, _, doc, rel = line.split()
        qrels.setdefault(qid, {})[doc] = int(rel)
    run: dict[str, dict[str, float]] = {}
    for line in trec_run_lines(rows, "test", depth=20):
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"recall.5,10", "ndcg_cut.10", "recip_rank"}).evaluate(run)
    for row in rows:
        if not row["returned_doc_ids"]:
            continue  # trec_eval skips queries absent from the run
        r, g = row["returned_doc_ids"], row["gold_ids"]
        got = ref[row["task_id"]]
        assert recall_at_k(r, g, 5) == pytest.approx(got["recall_5"])
        assert recall_at_k(r, g, 10) == pytest.approx(got["recall_10"])
        assert ndcg_at_k(r, g, 10) == pytest.approx(got["ndcg_cut_10"])
        assert reciprocal_rank(r, g) == pytest.approx(got["recip_rank"])


# -- span gold (../shared/eval/README-spans.md) ----------------------------------------------------
from sieve.eval.metrics import char_precision_at_k, span_found, span_metrics, span_recall_at_k  # noqa: E402


def test_span_found_is_half_of_the_shorter_of_chunk_and_span():
    span = ("f", 1000, 3000)  # a 2,000-character page
    assert span_found(span, [("f", 2500, 3300)])  # 500 of an 800-char chunk: at least half of 800
    assert not span_found(span, [("f", 2700, 3500)])  # 300 of an 800-char chunk: < half of 800
    assert not span_found(span, [("g", 1000, 3000)])  # the right range of another document
    assert span_found(("f", 100, 150), [("f", 0, 800)])  # a short span inside a long chunk: all 50 of it
    assert not span_found(("f", 100, 150), [("f", 130, 800)])  # 20 of the 50


def test_span_recall_counts_chunks_not_documents():
    spans = [("f", 0, 500), ("f", 5000, 5500)]
    # Two chunks of one filing, each covering one span: chunk-level recall needs both.
    returned = [("f", 0, 600), ("x", 0, 600), ("f", 5000, 5600)]
    assert span_recall_at_k(returned, spans, 2) == 0.5
    assert span_recall_at_k(returned, spans, 3) == 1.0
    m = span_metrics(returned, spans, [2, 3])
    assert m["all_spans@2"] == 0.0 and m["all_spans@3"] == 1.0
    assert m["returned_chars@3"] == 1800.0
    assert m["char_precision@3"] == pytest.approx(1000 / 1800)


def test_char_precision_merges_touching_spans_and_is_zero_for_nothing():
    assert char_precision_at_k([("f", 0, 100)], [("f", 0, 60), ("f", 50, 100)], 1) == 1.0
    assert char_precision_at_k([], [("f", 0, 10)], 5) == 0.0
