"""Issue 24, items 4 and 5: document writes under admission control, and never a timeout that writes later.

Real uvicorn, real sockets, a real process holding the store's write lock (as a long ``sieve index``
would). Before, each queued write held a worker thread while it waited for the lock, so 48 of them
starved every read; and a write answered ``504`` went on writing, holding the lock, after its caller
was told it had failed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from live_server import TINY, TINY_DOCS, assert_problem, start_server

from sieve.data import SAMPLE_DIR

if TYPE_CHECKING:
    from collections.abc import Iterator

    from live_server import LiveServer

HOLDER = Path(__file__).parents[1] / "retriever" / "_writer_child.py"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}


def _serve(tmp_path_factory: pytest.TempPathFactory, embedder: Any, **settings: Any) -> LiveServer:
    srv = start_server(embedder, tmp_path_factory.mktemp("write-admission"), collection=TINY, **settings)
    r = httpx.post(f"{srv.url}/v1/collections/{TINY}/documents", json={"documents": TINY_DOCS}, timeout=120)
    assert r.status_code == 200, r.text
    return srv


def _total(srv: LiveServer) -> int:
    r = httpx.get(f"{srv.url}/v1/collections/{TINY}/documents", timeout=30)
    assert r.status_code == 200, r.text
    return int(r.json()["total"])


@pytest.fixture()
def held_store(tmp_path_factory, embedder) -> Iterator[tuple[LiveServer, subprocess.Popen]]:
    """A server whose store's write lock another process holds (writes wait up to 10 s for it)."""
    srv = _serve(tmp_path_factory, embedder, request_timeout_s=20.0)
    holder = subprocess.Popen(
        [sys.executable, str(HOLDER), "hold", str(srv.state.settings.data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        assert holder.stdout.readline().strip() == "held", holder.stderr.read()[-2000:]  # type: ignore[union-attr]
        yield srv, holder
    finally:
        if holder.poll() is None:
            os.kill(holder.pid, signal.SIGKILL)
        holder.wait(30)
        srv.stop()


@pytest.mark.slow
def test_reads_answer_at_once_while_48_writes_wait_for_the_store(held_store) -> None:
    srv, holder = held_store

    def write(i: int) -> int:
        doc = {"id": f"queued-{i}", "text": f"Queued document number {i} about lighthouses."}
        return httpx.post(
            f"{srv.url}/v1/collections/{TINY}/documents", json={"documents": [doc]}, timeout=60
        ).status_code

    with ThreadPoolExecutor(48) as pool:
        writes = [pool.submit(write, i) for i in range(48)]
        time.sleep(1.5)  # every write has arrived: running (waiting for the lock), queued or refused
        timings = {}
        for name, call in {
            "retrieve": lambda: httpx.post(
                f"{srv.url}/v1/retrieve", timeout=30, json={"query": "capital of France", "collection": TINY, "k": 1}
            ),
            "list": lambda: httpx.get(f"{srv.url}/v1/collections/{TINY}/documents", timeout=30),
            "document": lambda: httpx.get(f"{srv.url}/v1/documents/paris", params={"collection": TINY}, timeout=30),
        }.items():
            t0 = time.monotonic()
            r = call()
            timings[name] = time.monotonic() - t0
            assert r.status_code == 200, (name, r.text)
        os.kill(holder.pid, signal.SIGKILL)  # the store is free again: the admitted writes go through
        codes = [w.result() for w in writes]
    assert max(timings.values()) < 1.0, timings
    assert set(codes) <= {200, 503} and 200 in codes and 503 in codes, sorted(codes)
    # The writes refused at once said so without a thread: overloaded, with a Retry-After.
    r = httpx.get(f"{srv.url}/metrics", timeout=30)
    assert 'sieve_admission_rejected_total{gate="writes"}' in r.text


@pytest.mark.slow
def test_a_write_that_times_out_leaves_the_collection_as_it_was(tmp_path_factory, embedder) -> None:
    srv = _serve(tmp_path_factory, embedder, request_timeout_s=2.0)
    try:
        with (SAMPLE_DIR / "corpus.jsonl").open() as f:
            big = [{"id": r["id"], "title": r.get("title", ""), "text": r["text"]} for r in map(json.loads, f)]
        t0 = time.monotonic()
        r = httpx.post(f"{srv.url}/v1/collections/{TINY}/documents", json={"documents": big}, timeout=120)
        answered_s = time.monotonic() - t0
        body = assert_problem(r, 504, "timeout")
        assert answered_s < 2.0 + 8.0, answered_s  # the deadline, plus at most one embedding batch
        assert _total(srv) == len(TINY_DOCS)
        # The store is free at once (before, the abandoned write kept its lock: the next write got 503) ...
        r = httpx.delete(f"{srv.url}/v1/collections/{TINY}/documents/rome", timeout=30)
        assert r.status_code == 200 and r.json()["deleted"] == 1, r.text
        time.sleep(3.0)
        # ... and nothing lands later.
        assert _total(srv) == len(TINY_DOCS) - 1
        assert "cancelled before writing anything" in body["detail"]
    finally:
        srv.stop()
