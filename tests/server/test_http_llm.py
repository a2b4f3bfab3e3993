"""`sieve serve` with an OpenAI-compatible endpoint configured: the LLM route over real HTTP on both sides.

The model server is the SCRIPTED (fake) one of ``tests/_openai_server.py``; the Sieve server is the real
app under uvicorn. Checked: reasoning carried and streamed, a prune visible in the next request, the
answer's citations resolved, the request's LLM settings reaching the model, and an LLM episode
allowed ``SIEVE_MAX_WALL_S`` rather than ``SIEVE_REQUEST_TIMEOUT_S``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from _openai_server import FakeOpenAI, completion
from live_server import TINY, TINY_DOCS, LiveServer, assert_problem, start_server

from sieve.client import iter_sse

if TYPE_CHECKING:
    from collections.abc import Iterator

REQUEST_TIMEOUT_S = 1.5


@pytest.fixture(scope="module")
def llm_server(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[tuple[FakeOpenAI, LiveServer]]:
    from sieve.retriever.types import Document

    fake = FakeOpenAI()
    srv = start_server(
        embedder,
        tmp_path_factory.mktemp("llm-route"),
        collection=TINY,
        openai_base_url=fake.url,
        openai_model="gpt-oss-20b",
        request_timeout_s=REQUEST_TIMEOUT_S,
        max_wall_s=30.0,
        max_new_tokens=256,
    )
    srv.state.index(TINY, create=True).writer.index_documents(
        [Document(doc_id=d["id"], text=d["text"], title=d["title"]) for d in TINY_DOCS], progress=False
    )
    yield fake, srv
    srv.stop()
    fake.close()


def _script(fake: FakeOpenAI, *, slow_s: float = 0.0) -> None:
    fake.requests.clear()
    fake.script = [
        (
            200,
            completion(
                None,
                [("functions.search", {"query": "capital of France", "k": 2})],
                reasoning=("reasoning_content", "Search the capital."),
            ),
            slow_s,
        ),
        (
            200,
            completion(None, [("functions.prune", {"ids": ["c2"]})], reasoning=("reasoning_content", "c2 is off.")),
            0,
        ),
        (200, completion(None, [("functions.read", {"id": "c1"})]), 0),
        (200, completion(None, [("finish", {"ids": ["c1"], "answer": "Paris [c1]."})]), 0),
    ]


BODY = {
    "query": "What is the capital of France?",
    "policy": "openai",
    "k": 3,
    "reasoning_effort": "high",
    "max_new_tokens": 100,
}


def _check_model_requests(fake: FakeOpenAI) -> None:
    assert len(fake.requests) == 4
    first = fake.requests[0]["body"]
    assert first["reasoning_effort"] == "high" and first["max_tokens"] == 100
    second = fake.requests[1]["body"]["messages"]
    assert [m for m in second if m["role"] == "assistant"][-1]["reasoning_content"] == "Search the capital."
    assert "[c2] (pruned)" in json.dumps(fake.requests[2]["body"]["messages"])


def test_json_episode_with_reasoning_prune_and_citations(llm_server) -> None:
    fake, srv = llm_server
    _script(fake)
    r = httpx.post(f"{srv.url}/v1/search", json={**BODY, "include_trace": True}, timeout=60)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["stop_reason"] == "finished" and body["answer"] == "Paris [c1]."
    trace = body["trace"]
    assert [c["name"] for t in trace["turns"] for c in t["tool_calls"]] == ["search", "prune", "read", "finish"]
    c1 = trace["turns"][0]["tool_calls"][0]["result_chunk_ids"][0]
    assert body["citations"] == [{"handle": "c1", "chunk_id": c1, "doc_id": c1.split("#")[0], "title": "Paris"}]
    assert trace["turns"][0]["reasoning"] == "Search the capital."
    assert trace["meta"]["token_count"].startswith("o200k_harmony")
    _check_model_requests(fake)


def test_sse_episode_streams_reasoning_and_ends_with_citations(llm_server) -> None:
    fake, srv = llm_server
    _script(fake)
    with httpx.stream("POST", f"{srv.url}/v1/search", json={**BODY, "stream": True}, timeout=60) as r:
        assert r.status_code == 200
        events = list(iter_sse(r.iter_lines()))
    kinds = [e.event for e in events]
    assert kinds[0] == "reasoning" and kinds[-1] == "result" and kinds.count("action") == 4
    assert [e.data["text"] for e in events if e.event == "reasoning"] == ["Search the capital.", "c2 is off."]
    result = events[-1].data
    assert result["answer"] == "Paris [c1]." and result["citations"][0]["handle"] == "c1"
    _check_model_requests(fake)


def test_an_llm_episode_gets_max_wall_s_not_the_request_timeout(llm_server) -> None:
    fake, srv = llm_server
    _script(fake, slow_s=REQUEST_TIMEOUT_S + 1.0)  # the first model call alone outlasts the request timeout
    r = httpx.post(f"{srv.url}/v1/search", json=BODY, timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["stop_reason"] == "finished"


def test_request_settings_are_capped_and_documented(llm_server) -> None:
    fake, srv = llm_server
    assert_problem(
        httpx.post(f"{srv.url}/v1/search", json={**BODY, "max_new_tokens": 10_000}, timeout=30), 422, "invalid_input"
    )
    assert_problem(
        httpx.post(f"{srv.url}/v1/search", json={**BODY, "max_wall_s": 31}, timeout=30), 422, "invalid_input"
    )
    spec = httpx.get(f"{srv.url}/openapi.json", timeout=30).json()["components"]["schemas"]
    fields = spec["SearchRequest"]["properties"]
    for name in ("reasoning_effort", "tool_choice", "max_new_tokens", "max_tool_calls", "max_wall_s"):
        assert fields[name]["description"], name
    assert "citations" in spec["SearchResponse"]["properties"]
