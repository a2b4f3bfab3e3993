"""One writer per store: real processes write one embedded store at once, and nothing is lost.

Chroma's embedded ``PersistentClient`` is not safe for several writing processes; without the
store's write lock, two concurrent writers could leave embeddings that no longer read back. Here
two real processes index halves of a corpus into one collection, the second starting while the
first holds the lock; afterwards the store must equal a clean one-writer index.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _retriever_helpers import MULTI_DOCS, RESUME_CONFIG, synthetic_docs
from _store_checks import assert_same_as_clean

from sieve.retriever import CorpusIndex, RetrieverConfig
from sieve.core.errors import StoreLocked
from sieve.server.errors import http_status

CHILD = Path(__file__).with_name("_writer_child.py")
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}


def _spawn(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )


def _go(proc: subprocess.Popen) -> None:
    proc.stdin.write("go\n")  # type: ignore[union-attr]
    proc.stdin.flush()  # type: ignore[union-attr]


def _wait_line(proc: subprocess.Popen, prefix: str, timeout_s: float = 120) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        if not line:
            break
        if line.startswith(prefix):
            return line.strip()
    proc.kill()
    raise AssertionError(f"child printed no {prefix!r} line; exit {proc.wait()}: {proc.stderr.read()[-2000:]}")  # type: ignore[union-attr]


def _small_hnsw_batches(data: Path) -> None:
    """Create the collection so that Chroma persists its vector index every few writes (default: every
    1,000), as a large corpus does. Two unordered writers then race on the index files themselves: with
    the lock disabled, this test fails with Chroma's "Error finding id" on reading embeddings back."""
    from sieve.retriever.store import GENERATION_KEY, make_client

    client = make_client(RetrieverConfig(data_dir=data))
    client.create_collection(
        "writers",
        embedding_function=None,
        metadata={GENERATION_KEY: "empty"},
        configuration={"hnsw": {"space": "cosine", "sync_threshold": 8, "batch_size": 8}},
    )


@pytest.mark.slow
def test_two_writer_processes_leave_the_store_a_clean_index_would(tmp_path, embedder):
    data = tmp_path / "data"
    _small_hnsw_batches(data)
    first = _spawn("write", str(data), "0", "40", "120")
    second = _spawn("write", str(data), "40", "80", "120")
    _wait_line(first, "ready")
    _wait_line(second, "ready")
    _go(first)
    _wait_line(first, "batch")  # the first writer is mid-run, holding the store's lock
    _go(second)
    out1, err1 = first.communicate(timeout=180)
    out2, err2 = second.communicate(timeout=180)
    assert first.returncode == 0 and second.returncode == 0, (err1[-2000:], err2[-2000:])
    assert "done" in out1 and "done" in out2
    # The second writer said whom it waited for (the first one's pid), instead of writing alongside it.
    assert "Another writer holds the store" in err2 and f"pid {first.pid}" in err2, err2[-2000:]

    clean = CorpusIndex.open(
        RetrieverConfig(data_dir=tmp_path / "clean", **RESUME_CONFIG), "writers", create=True, embedder=embedder
    )
    clean.writer.index_documents(synthetic_docs(80), progress=False)
    # This process never opened `data` before: its client reads what is on disk.
    index = CorpusIndex.open(RetrieverConfig(data_dir=data, **RESUME_CONFIG), "writers", embedder=embedder)
    assert_same_as_clean(index, clean)


@pytest.mark.slow
def test_a_held_store_fails_writes_naming_the_holder_and_still_serves_reads(tmp_path, embedder, caplog):
    cfg = RetrieverConfig(data_dir=tmp_path / "data", chunk_tokens=32, chunk_overlap=8, write_lock_timeout_s=0.3)
    index = CorpusIndex.open(cfg, "held", create=True, embedder=embedder)
    index.writer.index_documents(MULTI_DOCS[:2], progress=False)
    holder = _spawn("hold", str(cfg.data_dir))
    try:
        _wait_line(holder, "held")
        caplog.set_level(logging.WARNING, logger="sieve.retriever.writelock")
        t0 = time.monotonic()
        with pytest.raises(StoreLocked) as info:
            index.writer.index_documents(MULTI_DOCS[2:], progress=False)
        waited = time.monotonic() - t0
        assert 0.3 <= waited < 5, waited
        msg = info.value.message
        assert f"pid {holder.pid}" in msg and "_writer_child.py hold" in msg and "writing since" in msg, msg
        assert info.value.code == "store_locked" and http_status(info.value) == 503
        assert any("waiting up to 0.3 s" in r.getMessage() for r in caplog.records)  # the visible message
        with pytest.raises(StoreLocked):
            index.writer.delete_documents(["lighthouse"])
        # Readers never wait for the lock; nothing was half-written.
        assert index.search("Obadiah Quillfeather lighthouse keeper", k=1)[0].chunk.doc_id == "lighthouse"
        assert set(index.documents()) == {"lighthouse", "orchard"}
    finally:
        os.kill(holder.pid, signal.SIGKILL)  # the OS frees a killed writer's lock
        holder.wait(30)
    report = index.writer.index_documents(MULTI_DOCS[2:], progress=False)
    assert report.added == 1 and set(index.documents()) == {"lighthouse", "orchard", "observatory"}
    assert not index.write_lock.holder_path.exists()
