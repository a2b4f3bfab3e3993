"""One owner per store: a real ``sieve serve`` and real ``sieve index`` runs share one embedded store.

Chroma's embedded client keeps each collection's vector index in memory. Before the store handle
(``sieve.retriever.handle``), a running server never saw what ``sieve index`` wrote from another
process in dense search, and its next write saved its stale index over the CLI's vectors, which then
no longer read back ("Error finding id"). Everything here is real: the ``sieve`` console script as a
user runs it, uvicorn, the ONNX embedder, embedded Chroma; the final check runs in a process that
wrote nothing, so no client cache can hide damage.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from _server_process import server_process, sieve_command

from sieve.core.net import free_port
from sieve.data import SAMPLE_DIR

CHECK = Path(__file__).parents[1] / "_store_checks.py"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
NAME = "owner"
FOUND_WITHIN_S = 10.0


def _records(start: int, stop: int) -> list[dict]:
    with (SAMPLE_DIR / "corpus.jsonl").open() as f:
        rows = [json.loads(line) for line, _ in zip(f, range(stop))][start:]
    return [{"id": r["id"], "title": r.get("title", ""), "text": r["text"]} for r in rows]


def _small_hnsw_batches(data: Path) -> None:
    """The collection, made so that Chroma saves its vector index every 8 writes (default: every 1,000),
    as a large corpus does; then a write from a stale index overwrites the saved one with a few documents.
    Made in a child process: this test process must not hold the store open."""
    code = (
        "import sys; from pathlib import Path; from sieve.retriever import RetrieverConfig;"
        "from sieve.retriever.store import GENERATION_KEY, make_client;"
        "make_client(RetrieverConfig(data_dir=Path(sys.argv[1]))).create_collection(sys.argv[2], "
        "embedding_function=None, metadata={GENERATION_KEY: 'empty'}, "
        "configuration={'hnsw': {'space': 'cosine', 'sync_threshold': 8, 'batch_size': 8}})"
    )
    subprocess.run([sys.executable, "-c", code, str(data), NAME], env=ENV, check=True, timeout=120)


def _found(url: str, records: list[dict], mode: str) -> set[str]:
    """Ids of ``records`` that a search for their own text ranks in the top 3."""
    found = set()
    with httpx.Client(base_url=url, timeout=60) as client:
        for r in records:
            res = client.post(
                "/v1/retrieve",
                json={"query": f"{r['title']} {r['text']}"[:1000], "collection": NAME, "k": 3, "mode": mode},
            )
            res.raise_for_status()
            if r["id"] in {h["doc_id"] for h in res.json()["results"]}:
                found.add(r["id"])
    return found


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The scenario of issue 24, run once: server writes, CLI writes beside it, server writes again.

    Returns what each step saw; the tests below assert on it (so one slow set-up serves both)."""
    tmp = tmp_path_factory.mktemp("owner")
    data = tmp / "data"
    _small_hnsw_batches(data)
    first, by_cli, last = _records(0, 16), _records(16, 32), _records(32, 44)
    src = tmp / "cli.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in by_cli))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    out: dict = {"data": data, "records": first + by_cli + last, "by_cli": by_cli}
    cmd = [
        *sieve_command(),
        "serve",
        "--data-dir",
        str(data),
        "-c",
        NAME,
        "--port",
        str(port),
        "--no-mcp",
        "--log-level",
        "warning",
    ]
    with server_process(
        cmd, f"{url}/healthz", name="sieve serve", log_path=tmp / "serve.log", timeout_s=180, poll_s=0.2, env=ENV
    ):
        r = httpx.post(f"{url}/v1/collections/{NAME}/documents", json={"documents": first}, timeout=120)
        assert r.status_code == 200, r.text
        assert _found(url, first[:2], "dense") == {first[0]["id"], first[1]["id"]}  # its vector index is loaded
        cli = subprocess.run(
            [*sieve_command(), "index", str(src), "-c", NAME, "--data-dir", str(data), "--json"],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert cli.returncode == 0, cli.stderr[-3000:]
        out["cli_report"] = json.loads(cli.stdout)
        t0 = time.monotonic()
        while True:  # the server answers from what the CLI wrote within FOUND_WITHIN_S, no restart
            out["found"] = {mode: _found(url, by_cli, mode) for mode in ("dense", "bm25", "hybrid")}
            out["seen_after_s"] = time.monotonic() - t0
            if all(len(f) == len(by_cli) for f in out["found"].values()) or out["seen_after_s"] > FOUND_WITHIN_S:
                break
            time.sleep(1.0)
        r = httpx.post(f"{url}/v1/collections/{NAME}/documents", json={"documents": last}, timeout=120)
        out["last_write"] = (r.status_code, r.text)
    print(
        f"CLI documents found after {out['seen_after_s']:.2f} s: "  # the measurement the issue asks for (-s)
        + ", ".join(f"{mode} {len(found)}/{len(by_cli)}" for mode, found in out["found"].items())
    )
    return out


@pytest.mark.slow
def test_a_running_server_finds_what_sieve_index_wrote_in_every_mode(shared_store) -> None:
    assert shared_store["cli_report"]["added"] == 16
    want = {r["id"] for r in shared_store["by_cli"]}
    missing = {mode: sorted(want - found) for mode, found in shared_store["found"].items() if found != want}
    assert not missing, (
        f"after {shared_store['seen_after_s']:.1f} s the server still missed the CLI's documents: "
        f"{ {m: len(v) for m, v in missing.items()} } of {len(want)}"
    )


@pytest.mark.slow
def test_an_http_write_after_a_cli_write_leaves_every_vector_readable(shared_store, tmp_path, embedder) -> None:
    from sieve.retriever import CorpusIndex, RetrieverConfig
    from sieve.retriever.types import Document

    status, body = shared_store["last_write"]
    assert status == 200, body
    clean = CorpusIndex.open(RetrieverConfig(data_dir=tmp_path / "clean"), NAME, create=True, embedder=embedder)
    clean.writer.index_documents(
        [Document(doc_id=r["id"], text=r["text"], title=r["title"]) for r in shared_store["records"]], progress=False
    )
    # Every id, text and embedding of a clean one-writer index, every embedding readable, dense self-retrieval.
    check = subprocess.run(
        [sys.executable, str(CHECK), str(shared_store["data"]), str(tmp_path / "clean"), NAME],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 0, check.stdout + check.stderr[-3000:]
    assert "same as clean: " in check.stdout
