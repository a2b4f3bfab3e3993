"""Reciprocal rank fusion by hand, the hybrid retriever against its parts, and the sample tasks."""

from __future__ import annotations

import pytest

from sieve.retriever import CorpusIndex
from sieve.retriever.hybrid import HybridRetriever, rrf_fuse


def test_rrf_hand_computed():
    fused = dict(rrf_fuse([["a", "b", "c"], ["c", "a", "d"]], k=60))
    assert fused == pytest.approx(
        {
            "a": 1 / 61 + 1 / 62,
            "b": 1 / 62,
            "c": 1 / 63 + 1 / 61,
            "d": 1 / 63,
        }
    )
    assert [i for i, _ in rrf_fuse([["a", "b", "c"], ["c", "a", "d"]], k=60)] == ["a", "c", "b", "d"]


def test_rrf_weights_and_k():
    fused = rrf_fuse([["x", "y"], ["y", "z"]], k=1, weights=[2.0, 0.5])
    assert dict(fused) == pytest.approx({"x": 2 / 2, "y": 2 / 3 + 0.5 / 2, "z": 0.5 / 3})
    assert [i for i, _ in fused] == ["x", "y", "z"]  # 1.0 > 0.9167 > 0.1667
    assert [i for i, _ in rrf_fuse([["x", "y"], ["y", "z"]], k=1, weights=[0.5, 2.0])] == ["y", "z", "x"]


def test_rrf_ties_keep_first_seen_order_and_bad_weights():
    assert [i for i, _ in rrf_fuse([["a", "b"], ["b", "a"]])] == ["a", "b"]
    assert rrf_fuse([]) == [] and rrf_fuse([[], []]) == []
    with pytest.raises(ValueError, match="one weight per list"):
        rrf_fuse([["a"], ["b"]], weights=[1.0])


@pytest.mark.parametrize("query", ["Who painted the Mona Lisa?", "river that flows into the Gulf of California"])
def test_hybrid_is_the_rrf_of_its_dense_and_bm25_lists(sample_index: CorpusIndex, query):
    cfg = sample_index.config
    dense = [h.chunk_id for h in sample_index.dense.search(query, cfg.candidates)]
    bm25 = [cid for cid, _ in sample_index.bm25.scored_ids(query, cfg.candidates)]
    expected = rrf_fuse([dense, bm25], k=cfg.rrf_k, weights=[cfg.dense_weight, cfg.bm25_weight])[:10]
    hits = sample_index.search(query, 10, mode="hybrid")
    assert [(h.chunk_id, h.score) for h in hits] == [(i, pytest.approx(s)) for i, s in expected]
    assert all(h.mode == "hybrid" for h in hits) and all(h.chunk.text for h in hits)


def test_weights_shift_hybrid_towards_one_side(sample_index: CorpusIndex):
    query = "composer of an 1896 opera"
    bm25_only = HybridRetriever(sample_index.dense, sample_index.bm25, dense_weight=0.0, bm25_weight=1.0)
    dense_only = HybridRetriever(sample_index.dense, sample_index.bm25, dense_weight=1.0, bm25_weight=0.0)
    assert [h.chunk_id for h in bm25_only.search(query, 5)] == [h.chunk_id for h in sample_index.bm25.search(query, 5)]
    assert [h.chunk_id for h in dense_only.search(query, 5)] == [
        h.chunk_id for h in sample_index.dense.search(query, 5)
    ]


def test_batch_search_equals_search(sample_index: CorpusIndex):
    queries = ["Mona Lisa", "Grand Canyon river", "Mona Lisa"]
    batched = sample_index.hybrid.batch_search(queries, 5)
    assert [[h.chunk_id for h in hs] for hs in batched] == [
        [h.chunk_id for h in sample_index.search(q, 5)] for q in queries
    ]


def test_every_sample_task_finds_a_gold_document_in_hybrid_top10(sample_index: CorpusIndex, sample_tasks):
    assert len(sample_tasks) == 15
    misses, recalls = [], []
    for task in sample_tasks:
        hits = sample_index.search(task["question"], 10, mode="hybrid")
        found = {h.doc_id for h in hits} & set(task["gold_ids"])
        recalls.append(len(found) / len(task["gold_ids"]))
        gold_chunks = set(task["meta"]["gold_chunk_ids"]) & {h.chunk_id for h in hits}
        if not found or not gold_chunks:
            misses.append((task["id"], task["question"], [h.doc_id for h in hits]))
    assert not misses, f"tasks with no gold document/chunk in hybrid top-10: {misses}"
    # Recorded, not tuned: the doc-level recall@10 was 0.98 (one 3-hop gold doc ranked 11+) when written.
    assert sum(recalls) / len(recalls) >= 0.9, recalls
