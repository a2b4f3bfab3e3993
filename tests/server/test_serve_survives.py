"""``sieve serve`` survives what killed or broke it (issue 42): oversized filters, a damaged lock folder.

The filters that killed it answer 422 and it answers the next request; a damaged token or lock file
is read past or answered ``503 store_unavailable`` naming it, and ``sieve collections --check
--repair`` puts it right while the server runs.

A ``$and``/``$or`` of 9,000 or more conditions made Chroma's Rust layer overflow its stack: the
process died with SIGSEGV, no log line. That kills whatever process runs the request, so this test
runs the real ``sieve serve`` console script in its own process (a thread in pytest would take
the test run down with it) on a loopback port, and reads its log afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from _server_process import server_process, sieve_command

from sieve.core.net import free_port
from sieve.retriever.config import RetrieverConfig
from sieve.retriever.filters import FILTER_LIMITS
from sieve.retriever.handle import lock_folder_paths

if TYPE_CHECKING:
    from collections.abc import Iterator

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
NAME = "crash"
DOCS = [
    {"id": f"d{i}", "title": f"t{i}", "text": f"Document {i} is about {topic} and nothing else."}
    for i, topic in enumerate(["rivers", "mountains", "lakes", "deserts"])
]


def _conditions(n: int, op: str) -> dict:
    return {op: [{"title": {"$ne": f"t{i}"}} for i in range(n)]}


def _nested(depth: int) -> str:
    # As text: json.dumps, like any recursive encoder, stops near Python's recursion limit.
    return '{"$and": [' * depth + '{"title": "t0"}' + ', {"title": {"$ne": "x"}}]}' * depth


def _with_filters(body: dict, where: dict | str) -> bytes:
    text = where if isinstance(where, str) else json.dumps(where)
    return (json.dumps(body)[:-1] + ', "filters": ' + text + "}").encode()


# The cases: 1,000 (SQLite's 500), 9,000 and 20,000 (SIGSEGV), a 100,000-value $in
# ("too many SQL variables"), and nesting 5,000 deep, which a count of conditions alone would miss.
OVERSIZED: dict[str, dict | str] = {
    "and-1000": _conditions(1000, "$and"),
    "and-9000": _conditions(9000, "$and"),
    "or-20000": _conditions(20_000, "$or"),
    "in-100000": {"title": {"$in": [f"t{i}" for i in range(100_000)]}},
    "nested-20": json.loads(_nested(20)),
    "nested-5000": _nested(5000),
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A real ``sieve serve`` over a four-document collection; yields its URL and its log file (in the data folder's parent)."""
    tmp = tmp_path_factory.mktemp("crash")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp / "serve.log"
    cmd = [*sieve_command(), "serve", "--data-dir", str(tmp / "data"), "-c", NAME, "--port", str(port), "--no-mcp"]
    with server_process(cmd, f"{url}/healthz", name="sieve serve", log_path=log, timeout_s=180, poll_s=0.2, env=ENV):
        r = httpx.post(f"{url}/v1/collections/{NAME}/documents", json={"documents": DOCS}, timeout=120)
        assert r.status_code == 200, r.text
        yield url, log


def test_oversized_filters_answer_422_naming_the_limit_and_the_server_answers_on(served) -> None:
    url, log = served
    with httpx.Client(base_url=url, timeout=60) as client:
        for case, where in OVERSIZED.items():
            for path, body in [
                *(("/v1/retrieve", {"query": "rivers", "mode": mode}) for mode in ("bm25", "dense", "hybrid")),
                ("/v1/search", {"query": "rivers", "policy": "heuristic"}),
            ]:
                r = client.post(path, content=_with_filters(body, where), headers={"content-type": "application/json"})
                problem = r.json()
                if case == "nested-5000":  # too deep for the JSON parser itself: 400, saying so
                    assert r.status_code == 400 and "nested at most" in problem["detail"], problem
                    continue
                assert r.status_code == 422, (case, path, r.status_code, r.text[:300])
                assert problem["code"] == "invalid_input"
                assert "filters" in problem["detail"] and FILTER_LIMITS.describe() in problem["detail"], problem
        # The process lived through all of it and still filters correctly.
        r = client.post("/v1/retrieve", json={"query": "rivers", "mode": "hybrid", "filters": _conditions(3, "$and")})
        assert r.status_code == 200, r.text
        assert {h["doc_id"] for h in r.json()["results"]} == {"d3"}
        assert client.get("/healthz").status_code == 200
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]


def test_a_lone_surrogate_anywhere_in_a_body_is_422_not_a_500(served) -> None:
    """Issue 42's fuzz run: JSON may escape a lone surrogate, which Python keeps and the tokenizer cannot encode."""
    url, log = served
    bodies = {
        "/retrieve": {"queries": ["rivers", "\ud800"]},
        "/v1/retrieve": {"query": "rivers \udfff", "mode": "hybrid"},
        "/v1/search": {"query": "rivers", "filters": {"title": "\ud800"}},
        f"/v1/collections/{NAME}/documents": {"documents": [{"id": "s", "text": "ok", "metadata": {"\ud800": 1}}]},
    }
    with httpx.Client(base_url=url, timeout=60) as client:
        for path, body in bodies.items():
            r = client.post(path, content=json.dumps(body).encode(), headers={"content-type": "application/json"})
            assert r.status_code == 422 and "lone surrogate" in r.json()["detail"], (path, r.text[:300])
    assert "Traceback" not in log.read_text()


def _sieve(data: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*sieve_command(), *args, "--data-dir", str(data), "--json"],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _write(client: httpx.Client, doc_id: str) -> httpx.Response:
    doc = {"id": doc_id, "title": doc_id, "text": f"The {doc_id} document mentions glaciers."}
    return client.post(f"/v1/collections/{NAME}/documents", json={"documents": [doc]})


def test_a_damaged_token_or_lock_is_read_past_or_named_and_repaired_while_serving(served) -> None:
    url, log = served
    data = log.parent / "data"
    paths = lock_folder_paths(RetrieverConfig(data_dir=data))
    with httpx.Client(base_url=url, timeout=60) as client:
        # Bytes that are not UTF-8 (a damaged or hand-edited folder): reads and writes go on; the write replaces it.
        paths["token"].write_bytes(b"\xff\xfe\x00\x80garbage")
        assert client.post("/v1/retrieve", json={"query": "rivers", "mode": "bm25"}).status_code == 200
        assert _write(client, "after-bytes").status_code == 200
        assert paths["token"].read_bytes().isascii()

        for role in ("token", "lock"):  # a directory of someone's files: named, never deleted
            path = paths[role]
            path.unlink()
            path.mkdir()
            (path / "keep.txt").write_text("not Sieve's")
            assert client.post("/v1/retrieve", json={"query": "rivers", "mode": "hybrid"}).status_code == 200
            r = _write(client, f"blocked-{role}")
            assert r.status_code == 503 and r.json()["code"] == "store_unavailable", r.text
            assert str(path) in r.json()["detail"] and "--check --repair" in r.json()["detail"]
            if role == "token":  # a CLI write: exit 2, the problem as JSON, naming the path
                src = log.parent / "more.jsonl"
                src.write_text(json.dumps({"id": "cli", "title": "cli", "text": "From the command line."}) + "\n")
                cli = _sieve(data, "index", str(src), "-c", NAME)
                problem = json.loads(cli.stdout or "{}")
                assert cli.returncode == 2 and problem.get("code") == "store_unavailable", (
                    cli.stdout + cli.stderr[-2000:]
                )
                assert str(path) in problem["detail"]
            cli = _sieve(data, "collections")  # listing reads: it works
            assert cli.returncode == 0 and json.loads(cli.stdout)[0]["name"] == NAME, cli.stdout + cli.stderr[-2000:]
            check = _sieve(data, "collections", "--check")
            assert check.returncode == 1 and json.loads(check.stdout)["damaged"] == 1, check.stdout
            repair = _sieve(data, "collections", "--check", "--repair")
            assert repair.returncode == 0 and json.loads(repair.stdout)["damaged"] == 0, repair.stdout
            assert _write(client, f"after-{role}").status_code == 200
        found = client.post("/v1/retrieve", json={"query": "glaciers", "mode": "bm25", "k": 10}).json()["results"]
        assert {"after-bytes", "after-token", "after-lock"} <= {h["doc_id"] for h in found}
    assert "Traceback" not in log.read_text()


KILLED = "killed"
CHECK_STORE = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from _store_checks import all_ids
from sieve.retriever import CorpusIndex, RetrieverConfig
index = CorpusIndex.open(RetrieverConfig(data_dir=Path(sys.argv[1])), sys.argv[2])
ids = all_ids(index)
vectors = {}
for i in range(0, len(ids), 200):
    vectors.update(index.get_vectors(ids[i : i + 200]))
incomplete = [d for d, s in index.store.doc_states().items() if not s.complete]
print(len(ids), len(ids) - len(vectors), len(incomplete), int(set(index.bm25_index().ids) == set(ids)))
"""


@pytest.mark.slow
def test_a_writer_killed_mid_write_beside_the_server_leaves_it_serving_and_a_rerun_completes(served) -> None:
    """The probe that found issue 42 held this; kept as a test: ``kill -9`` of ``sieve index`` mid-write."""
    import signal
    import time

    from sieve.data import SAMPLE_DIR

    url, log = served
    data = log.parent / "data"
    with (SAMPLE_DIR / "corpus.jsonl").open() as f:
        rows = [json.loads(line) for line, _ in zip(f, range(80))]
    src = log.parent / "killed.jsonl"
    src.write_text("".join(json.dumps({"id": r["id"], "title": r["title"], "text": r["text"]}) + "\n" for r in rows))
    index_cmd = [*sieve_command(), "index", str(src), "-c", KILLED, "--data-dir", str(data), "--json"]
    lock = lock_folder_paths(RetrieverConfig(data_dir=data))["lock"]
    holder = lock.with_name(lock.name + ".holder.json")  # written by the writer while it holds the lock
    writer = subprocess.Popen(index_cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not holder.exists() and writer.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(2.0)  # into the run: embedding and writing batches
    assert writer.poll() is None, "the writer finished before it could be killed: give it more documents"
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(30)
    with httpx.Client(base_url=url, timeout=60) as client:
        for mode in ("bm25", "dense", "hybrid"):  # serving on, whatever the killed run left
            r = client.post("/v1/retrieve", json={"query": rows[0]["title"], "collection": KILLED, "mode": mode})
            assert r.status_code in (200, 404, 409), r.text  # 404/409: killed before any chunk was written
        rerun = subprocess.run(index_cmd, env=ENV, capture_output=True, text=True, timeout=300)
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr[-2000:]
        check = subprocess.run(
            [sys.executable, "-c", CHECK_STORE, str(data), KILLED, str(Path(__file__).parents[1])],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert check.returncode == 0, check.stderr[-3000:]
        chunks, unreadable, incomplete, bm25_agrees = map(int, check.stdout.split())
        assert chunks >= len(rows) and (unreadable, incomplete, bm25_agrees) == (0, 0, 1), check.stdout
        for mode in ("bm25", "dense"):  # the server sees the whole collection, in both modes
            for r in rows[:3]:
                res = client.post(
                    "/v1/retrieve",
                    json={"query": f"{r['title']} {r['text']}"[:1000], "collection": KILLED, "mode": mode, "k": 3},
                )
                assert r["id"] in {h["doc_id"] for h in res.json()["results"]}, (mode, r["id"], res.text[:300])
    assert "Traceback" not in log.read_text()
