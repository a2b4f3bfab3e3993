"""Integration: ``sieve serve --workers 2`` (real uvicorn worker processes) over a real ``chroma run`` server.

Each worker holds its own BM25 cache; a write through one must be searchable through the other
on the very next request that worker answers, keyword search included (the BM25 side).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import httpx
import pytest

from _server_process import chroma_server, server_process

from sieve.core.net import free_port

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow

COLLECTION = "multi-worker"
DOCS = [
    {"id": "paris", "title": "Paris", "text": "Paris is the capital and largest city of France, on the Seine."},
    {"id": "berlin", "title": "Berlin", "text": "Berlin is the capital of Germany and its most populous city."},
    {"id": "rome", "title": "Rome", "text": "Rome is the capital city of Italy, founded, legend says, in 753 BC."},
]
NEW_DOC = {
    "id": "orchard",
    "title": "The orchard",
    "text": "The orchard on the hill grows Zephyrine apples, pressed into cider each autumn.",
}


def _search(url: str, query: str, mode: str) -> tuple[str, list[str]]:
    # A fresh connection per request, so the kernel may hand it to either worker.
    with httpx.Client(base_url=url, timeout=120) as client:
        r = client.post("/v1/retrieve", json={"query": query, "collection": COLLECTION, "k": 5, "mode": mode})
    assert r.status_code == 200, r.text
    return r.headers["x-sieve-worker"], [h["doc_id"] for h in r.json()["results"]]


def _until_other_worker(url: str, writer: str, query: str, mode: str, tries: int = 200) -> list[list[str]]:
    """Results of every request up to and including the first one a worker other than ``writer`` answers."""
    seen = []
    for _ in range(tries):
        worker, docs = _search(url, query, mode)
        seen.append(docs)
        if worker != writer:
            return seen
    pytest.fail(f"{tries} requests, all answered by worker {writer}")


def test_a_write_through_one_worker_is_searchable_through_the_other(tmp_path: Path):
    with chroma_server(tmp_path / "chroma") as chroma_url:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        cmd = [
            sys.executable,
            "-c",
            "from sieve.cli.main import main; main()",
            "serve",
            "--workers",
            "2",
            "--port",
            str(port),
            "--chroma-url",
            chroma_url,
            "--data-dir",
            str(tmp_path / "data"),
            "-c",
            COLLECTION,
            "--log-level",
            "warning",
            "--no-mcp",
        ]
        with server_process(
            cmd,
            f"{url}/healthz",
            name="sieve serve --workers 2",
            log_path=tmp_path / "serve.log",
            timeout_s=300,
            poll_s=0.5,
            request_timeout_s=5,
        ):
            r = httpx.post(f"{url}/v1/collections/{COLLECTION}/documents", json={"documents": DOCS}, timeout=120)
            assert r.status_code == 200 and r.json()["added"] == 3, r.text
            # Both workers load this collection and its BM25 before the write they must notice.
            workers = set()
            for _ in range(200):
                worker, docs = _search(url, "Zephyrine cider", "bm25")
                assert docs == []
                workers.add(worker)
                if len(workers) == 2:
                    break
            assert len(workers) == 2, "one worker answered every request"

            r = httpx.post(f"{url}/v1/collections/{COLLECTION}/documents", json={"documents": [NEW_DOC]}, timeout=120)
            assert r.status_code == 200 and r.json()["added"] == 1, r.text
            writer = r.headers["x-sieve-worker"]
            for mode in ("bm25", "hybrid"):
                answers = _until_other_worker(url, writer, "Zephyrine cider", mode)
                assert all(docs[:1] == ["orchard"] for docs in answers), (mode, answers)

            r = httpx.delete(f"{url}/v1/collections/{COLLECTION}/documents/orchard", timeout=120)
            assert r.status_code == 200, r.text
            answers = _until_other_worker(url, r.headers["x-sieve-worker"], "Zephyrine cider", "bm25")
            assert all("orchard" not in docs for docs in answers), answers


def test_several_workers_need_a_chroma_server(tmp_path: Path):
    from typer.testing import CliRunner

    from sieve.cli.main import app

    res = CliRunner().invoke(app, ["serve", "--workers", "2", "--data-dir", str(tmp_path)])
    assert res.exit_code == 2 and "Expected --chroma-url with --workers 2" in res.output
    # Issue 42: the message once said the embedded store admits one process, yet two `sieve serve`
    # share it correctly (tests/server/test_store_owner.py); it now says why workers need the server.
    assert "one process may open" not in res.output and "reload" in res.output


def test_serve_refuses_a_policy_path_that_cannot_load(tmp_path: Path):
    """A missing or corrupt checkpoint is a start-up error, not a 404 or 500 on every search."""
    from typer.testing import CliRunner

    from sieve.agent.policies.learned import default_checkpoint
    from sieve.cli.main import app

    broken = tmp_path / "ckpt"
    broken.mkdir()
    (broken / "config.json").write_text((default_checkpoint() / "config.json").read_text())
    (broken / "model.safetensors").write_bytes(b"garbage")
    for folder, problem in ((tmp_path / "missing", "checkpoint folder"), (broken, "unreadable file")):
        res = CliRunner().invoke(app, ["serve", "--policy-path", str(folder), "--data-dir", str(tmp_path)])
        assert res.exit_code == 2 and problem in res.output, res.output
