"""Synthetic-vs-real calibration (``python -m sieve.train.calibration``): both sides scored by one hybrid search."""

from __future__ import annotations

from sieve.train.calibration import CalibrationRow, real_recall, synthetic_recall, table
from sieve.eval.data import EvalTask


def test_synthetic_recall_scores_gold_chunks_per_kind(docs_index):
    page = docs_index.read_document("page2")
    own = {"id": "t1", "question": page[1].text, "meta": {"gold_chunk_ids": [page[1].chunk_id], "kind": "single"}}
    # the second gold chunk id names no chunk at all: half of the gold can be found
    half = {
        "id": "t2",
        "question": page[0].text,
        "meta": {"gold_chunk_ids": [page[0].chunk_id, "page2#99"], "kind": "span"},
    }
    mean, by_kind = synthetic_recall(docs_index, [own, half])
    assert by_kind == {"single": 1.0, "span": 0.5}
    assert mean == 0.75


def test_real_recall_scores_documents_or_spans(docs_index):
    page = docs_index.read_document("page3")
    by_doc = [EvalTask("q1", page[0].text, ("page3",)), EvalTask("q2", page[0].text, ("nowhere",))]
    assert real_recall(docs_index, by_doc) == (0.5, "documents")
    # a span inside the chunk's own characters is found; one past the end of its document is not
    c = page[0]
    spans = [
        EvalTask("s1", c.text, ("page3",), gold_spans=(("page3", c.char_start, c.char_end),)),
        EvalTask("s2", c.text, ("page0",), gold_spans=(("page0", 10**6, 10**6 + 100),)),
    ]
    recall, unit = real_recall(docs_index, spans)
    assert unit == "spans" and recall == 0.5


def test_the_table_shows_the_gap():
    row = CalibrationRow("locomo-dev", 80, 0.70, 383, 0.63, "documents", {"single": 0.8, "bridge": 0.6})
    assert "| locomo-dev | 80 | 0.700 | 383 | 0.630 (documents) | +0.070 | bridge 0.60, single 0.80 |" in table([row])
