"""Dense search returns the exact ranking at every depth a search reads, the same in every process.

Chroma's HNSW search is approximate at its last places when asked for exactly ``n`` neighbours,
and a process that opens a collection of fewer than ``sync_threshold`` records rebuilds its graph
from the write-ahead log, differently each time: before ``ChromaStore.query_ids`` widened the beam
(``HNSW_OVERFETCH``, ``HNSW_MIN_BEAM``), the same eval run twice returned other chunks below rank 5.
Random 384-d vectors are HNSW's worst case, so a narrow beam misses chunks here in every process.
A collection this small is now searched exactly (:mod:`sieve.retriever.exact`); the beam still
serves filtered searches and collections over ``EXACT_MAX_CHUNKS``, so both paths are checked.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sieve.retriever import CorpusIndex, RetrieverConfig
from sieve.retriever.types import Chunk

N_CHUNKS = 900  # under the default sync_threshold (1,000): every new process replays the log
DEPTHS = (10, 50, 200)

_PROBE = """
import json, sys
import numpy as np
from sieve.retriever import CorpusIndex, RetrieverConfig
from sieve.retriever.embeddings import Embedder
cfg = RetrieverConfig(data_dir=sys.argv[1])
index = CorpusIndex.open(cfg, "beam", embedder=Embedder.from_config(cfg, lazy=True))
index.store._exact.max_chunks = int(sys.argv[3])  # 0: HNSW's beam serves, as above EXACT_MAX_CHUNKS
queries = np.load(sys.argv[2])
print(json.dumps({n: [[c for c, _ in index.store.query_ids(q, int(n))] for q in queries] for n in sys.argv[4:]}))
"""


def _probe(data: Path, queries: Path, exact_max: int) -> dict[str, list[list[str]]]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(data), str(queries), str(exact_max), *map(str, DEPTHS)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("exact_max", [0, 20_000], ids=["hnsw-beam", "exact"])
def test_dense_rankings_are_exact_and_the_same_in_a_fresh_process(tmp_path: Path, embedder, exact_max: int) -> None:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((N_CHUNKS, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    chunks = [Chunk(f"d{i}#0", f"d{i}", 0, f"chunk {i}") for i in range(N_CHUNKS)]
    cfg = RetrieverConfig(data_dir=tmp_path / "data")
    index = CorpusIndex.open(cfg, "beam", create=True, embedder=embedder)
    index.store.upsert(chunks, vectors, {c.doc_id: "h" for c in chunks}, {c.doc_id: 1 for c in chunks})
    queries = rng.standard_normal((20, 384)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    np.save(tmp_path / "q.npy", queries)

    first, second = (_probe(cfg.data_dir, tmp_path / "q.npy", exact_max) for _ in range(2))
    assert first == second, "two processes returned different dense rankings for the same queries"
    ids = [c.chunk_id for c in chunks]
    for n in DEPTHS:
        exact = [[ids[i] for i in np.argsort(-(vectors @ q), kind="stable")[:n]] for q in queries]
        missed = sum(len(set(e) - set(g)) for e, g in zip(exact, first[str(n)]))
        assert missed == 0, f"depth {n}: {missed} of {n * len(queries)} exact neighbours missing"
