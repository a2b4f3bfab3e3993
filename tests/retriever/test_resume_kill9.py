"""A real ``kill -9`` in the middle of indexing leaves a consistent store, and indexing resumes."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _retriever_helpers import RESUME_CONFIG, assert_consistent, synthetic_docs

from sieve.retriever import CorpusIndex, RetrieverConfig
from sieve.retriever.bm25_segments import SegmentedBM25

CHILD = Path(__file__).with_name("_resume_child.py")
N_DOCS = 200
KILL_AFTER_BATCHES = 3


def _run_and_kill(data_dir: Path) -> list[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(data_dir), str(N_DOCS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 120
        while len(lines) < KILL_AFTER_BATCHES and time.monotonic() < deadline:
            line = proc.stdout.readline()  # type: ignore[union-attr]
            if not line:
                break
            lines.append(line.strip())
        assert len(lines) == KILL_AFTER_BATCHES and all(x.startswith("batch") for x in lines), (
            f"child did not report {KILL_AFTER_BATCHES} batches: {lines}, exit {proc.poll()}"
        )
        time.sleep(0.15)  # let it get into the next batch (embedding or writing) before the kill
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return lines


@pytest.mark.slow
def test_kill9_mid_index_then_resume(tmp_path, embedder, caplog):
    data_dir = tmp_path / "data"
    lines = _run_and_kill(data_dir)
    written_before_kill = int(lines[-1].split()[1])

    caplog.set_level(logging.INFO, logger="sieve.retriever.bm25_cache")
    cfg = RetrieverConfig(data_dir=data_dir, **RESUME_CONFIG)
    index = CorpusIndex.open(cfg, "resume", embedder=embedder)
    docs = synthetic_docs(N_DOCS)
    fresh_total = sum(len(index.writer.chunker.chunk(d)) for d in docs)

    # The store opens consistent: some, not all, chunks; the BM25 on disk (if any) predates the
    # killed run's last generation, so it is rebuilt from Chroma rather than trusted.
    present = index.count()
    assert written_before_kill <= present < fresh_total
    saved = SegmentedBM25.load(index.bm25_dir)
    assert saved is None or saved[1] != index.store.generation
    chroma_ids = {cid for cid, _t, _m in index.store.scan(include_text=False)}
    assert set(index.bm25_index().ids) == chroma_ids
    assert "Rebuilt BM25" in caplog.text
    for mode in ("dense", "bm25", "hybrid"):
        assert index.search("harbour lantern granite", 5, mode=mode)
    some_doc = next(iter(sorted(index.documents())))
    assert index.search(f"uniqueword{int(some_doc.split('-')[1])}", 1, mode="bm25")[0].doc_id == some_doc

    complete = {d for d, s in index.store.doc_states().items() if s.complete}
    assert complete
    report = index.writer.index_documents(docs, progress=False)
    assert report.unchanged == len(complete)
    assert report.added + report.resumed + report.unchanged == N_DOCS and report.updated == 0
    assert 0 < report.chunks_written < fresh_total
    assert report.chunks_written == fresh_total - sum(index.documents()[d] for d in complete)
    assert index.count() == fresh_total and len(index.documents()) == N_DOCS
    assert_consistent(index)

    again = index.writer.index_documents(docs, progress=False)
    assert (again.unchanged, again.chunks_written) == (N_DOCS, 0)
