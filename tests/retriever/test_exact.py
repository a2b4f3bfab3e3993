"""Exact dense search below EXACT_MAX_CHUNKS: the brute-force ranking, read again after every write."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sieve.retriever import CorpusIndex, RetrieverConfig
from sieve.retriever.exact import ExactVectors
from sieve.retriever.types import Chunk


def test_top_is_the_brute_force_ranking_and_ties_keep_store_order() -> None:
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((200, 16)).astype(np.float32)
    vectors[7] = vectors[3]  # an exact tie: store order decides, in every process
    ids = [f"c{i}" for i in range(200)]
    ev = ExactVectors.build(("col", "gen"), ids, vectors)
    q = vectors[3] + 0.01 * rng.standard_normal(16).astype(np.float32)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    brute = [ids[i] for i in np.argsort(-(unit @ (q / np.linalg.norm(q))), kind="stable")[:20]]
    got = ev.top(q, 20)
    assert [c for c, _ in got] == brute and got[0][0] == "c3" and got[1][0] == "c7"
    assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    assert len(ev.top(q, 500)) == 200 and ev.top(q, 0) == []


def _chunks(n: int, start: int = 0) -> list[Chunk]:
    return [Chunk(f"d{i}#0", f"d{i}", 0, f"chunk {i}") for i in range(start, start + n)]


def _collection(tmp_path: Path, embedder, n: int, seed: int) -> tuple[CorpusIndex, list[Chunk], np.ndarray]:
    """A real embedded-Chroma collection of ``n`` one-chunk documents with random vectors."""
    vectors = np.random.default_rng(seed).standard_normal((n, 384)).astype(np.float32)
    index = CorpusIndex.open(RetrieverConfig(data_dir=tmp_path / "data"), "exact", create=True, embedder=embedder)
    chunks = _chunks(n)
    index.store.upsert(chunks, vectors, {c.doc_id: "h" for c in chunks}, {c.doc_id: 1 for c in chunks})
    return index, chunks, vectors


def test_a_small_collection_is_searched_exactly_and_every_write_is_seen(tmp_path: Path, embedder) -> None:
    index, chunks, vectors = _collection(tmp_path, embedder, 300, seed=2)
    q = np.random.default_rng(20).standard_normal(384).astype(np.float32)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    brute = [chunks[i].chunk_id for i in np.argsort(-(unit @ q), kind="stable")[:50]]
    assert [c for c, _ in index.store.query_ids(q, 50)] == brute

    new = _chunks(1, start=300)  # a write: the new chunk, the query's own direction, comes first
    index.store.upsert(new, q[None, :], {"d300": "h"}, {"d300": 1})
    assert index.store.query_ids(q, 1)[0][0] == "d300#0"
    index.store.delete_ids(["d300#0"])
    assert [c for c, _ in index.store.query_ids(q, 50)] == brute
    # Filtered searches go through HNSW's beam: same answer on a collection this small.
    where = {"doc_id": {"$in": [c.doc_id for c in chunks[:100]]}}
    filtered = [c for c, _ in index.store.query_ids(q, 10, where=where)]
    assert (
        filtered
        == [c for c in [chunks[i].chunk_id for i in np.argsort(-(unit @ q), kind="stable")] if int(c[1:-2]) < 100][:10]
    )


def test_a_collection_over_the_limit_is_served_by_hnsw(tmp_path: Path, embedder) -> None:
    index, _, vectors = _collection(tmp_path, embedder, 60, seed=3)
    index.store._exact.max_chunks = 50  # as if over EXACT_MAX_CHUNKS: no vectors held in memory
    got = index.store.query_ids(vectors[5], 5)
    assert got[0][0] == "d5#0" and index.store._exact._current is None
