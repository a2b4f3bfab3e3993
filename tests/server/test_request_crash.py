"""No request body ends ``sieve serve`` (issue 42): the filters that killed it answer 422 and it answers the next.

A ``$and``/``$or`` of 9,000 or more conditions made Chroma's Rust layer overflow its stack: the
process died with SIGSEGV, no log line. That kills whatever process runs the request, so this test
runs the real ``sieve serve`` console script in its own process (a thread in pytest would take
the test run down with it) on a loopback port, and reads its log afterwards.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import httpx
import pytest
from _server_process import server_process, sieve_command

from sieve._net import free_port
from sieve.retriever.filters import FILTER_LIMITS

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

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
    """A real ``sieve serve`` over a four-document collection; yields its URL and its log file."""
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
