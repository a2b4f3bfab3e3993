"""A ``sieve index`` process beside a live server taking document writes: one writer at a time.

The everyday case of two writers on one embedded store. The server (real uvicorn) takes HTTP
document writes in a loop while a real ``sieve index`` process indexes other documents into the
same collection; the store's write lock orders them. Afterwards a process that wrote nothing reads
the store back and finds exactly what a clean one-writer index holds.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from live_server import start_server

from sieve.data import SAMPLE_DIR

CHECK = Path(__file__).parents[1] / "_store_checks.py"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
NAME = "mixed-writers"


def _records(n: int) -> list[dict]:
    with (SAMPLE_DIR / "corpus.jsonl").open() as f:
        rows = [json.loads(line) for line, _ in zip(f, range(n))]
    return [{"id": r["id"], "title": r.get("title", ""), "text": r["text"]} for r in rows]


def _post_until(url: str, batches: list[list[dict]], stop: threading.Event, codes: list[int]) -> None:
    """Write every batch at least once, and keep re-writing them (idempotent) until ``stop``."""
    with httpx.Client(base_url=url, timeout=120) as client:
        i = 0
        while i < len(batches) or not stop.is_set():
            r = client.post(f"/v1/collections/{NAME}/documents", json={"documents": batches[i % len(batches)]})
            codes.append(r.status_code)
            if r.status_code == 503:  # store_locked: the CLI held the store longer than the server waits
                time.sleep(min(float(r.headers["Retry-After"]), 0.5))
                continue
            i += 1


@pytest.mark.slow
def test_cli_writer_beside_a_live_server_taking_writes(tmp_path, embedder, caplog):
    from sieve.retriever import CorpusIndex, RetrieverConfig
    from sieve.retriever.types import Document

    records = _records(60)
    cli_half, http_half = records[:30], records[30:]
    src = tmp_path / "cli.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in cli_half))
    data = tmp_path / "data"
    caplog.set_level(logging.WARNING, logger="sieve.retriever.writelock")
    srv = start_server(embedder, data, collection=NAME, request_timeout_s=60.0)
    stop, codes = threading.Event(), []
    try:
        # The collection exists before both writers start, as on a server already in use.
        assert (
            httpx.post(
                f"{srv.url}/v1/collections/{NAME}/documents", json={"documents": http_half[:5]}, timeout=120
            ).status_code
            == 200
        )
        poster = threading.Thread(
            target=_post_until,
            args=(srv.url, [http_half[i : i + 5] for i in range(0, 30, 5)], stop, codes),
            daemon=True,
        )
        poster.start()
        cli = subprocess.run(
            [
                sys.executable,
                "-c",
                "from sieve.cli.main import main; main()",
                "index",
                str(src),
                "-c",
                NAME,
                "--data-dir",
                str(data),
                "--json",
            ],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=300,
        )
        stop.set()
        poster.join(timeout=300)
    finally:
        stop.set()
        srv.stop()
    assert cli.returncode == 0, cli.stderr[-2000:]
    assert json.loads(cli.stdout)["added"] == 30
    assert codes and set(codes) <= {200, 503}, codes
    waits = cli.stderr.count("Another writer holds the store") + sum(
        "Another writer holds the store" in r.getMessage() for r in caplog.records
    )
    assert waits >= 1, "the two writers never met: the test proved nothing"

    clean_dir = tmp_path / "clean"
    clean = CorpusIndex.open(RetrieverConfig(data_dir=clean_dir), NAME, create=True, embedder=embedder)
    clean.writer.index_documents(
        [Document(doc_id=r["id"], text=r["text"], title=r["title"]) for r in records], progress=False
    )
    check = subprocess.run(
        [sys.executable, str(CHECK), str(data), str(clean_dir), NAME],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 0, check.stdout + check.stderr[-3000:]
    assert "same as clean: " in check.stdout
