"""Agentic search over loopback HTTP: JSON, SSE progress, the Context-1 stream, limits and timeouts."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from live_server import TINY, assert_problem

from sieve.client import iter_sse
from sieve.core.defaults import DEFAULT_POLICY

QUESTION = "What was the 2020 population of the city that Charles Lindbergh's transatlantic aircraft was named after?"
# chroma-core/chroma rust/foundation-api: how Chroma parses Context-1's final answer.
DOCUMENT_BLOCK = re.compile(
    r"""(?is)<Document\s+id=["']?([^"'>\s]+)["']?\s*>\s*<Justification>\s*(.*?)\s*</Justification>\s*</Document>"""
)


def sse(response: httpx.Response) -> list:
    assert response.status_code == 200, response.read()
    assert response.headers["content-type"].startswith("text/event-stream")
    return list(iter_sse(response.iter_lines()))


def test_search_returns_ranked_evidence_and_usage(http: httpx.Client) -> None:
    r = http.post("/v1/search", json={"query": QUESTION, "k": 8})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["collection"] == "sample" and body["policy"] == DEFAULT_POLICY and body["trace"] is None
    results = body["results"]
    assert 1 <= len(results) <= 8
    assert [x["rank"] for x in results] == list(range(1, len(results) + 1))
    assert all(x["id"].startswith(x["doc_id"] + "#") and x["text"] for x in results)
    scores = [x["score"] for x in results]  # the floor's fused score: positive, never rising with rank
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0 and body["warnings"] == []
    # The bridge entity of the demo question: Lindbergh's aircraft was the Spirit of St. Louis.
    assert "wiki-charles-lindbergh" in [x["doc_id"] for x in results]
    u = body["usage"]
    assert u["turns"] >= 1 and u["tool_calls"] >= u["searches"] >= 1 and u["tokens"] > 0 and u["ms"] > 0


def test_search_with_the_learned_policy(http: httpx.Client) -> None:
    """The shipped learned-policy checkpoint, chosen per request, through the real server."""
    r = http.post("/v1/search", json={"query": QUESTION, "k": 8, "policy": "learned", "include_trace": True})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["policy"] == "learned" and 1 <= len(body["results"]) <= 8
    docs = [x["doc_id"] for x in body["results"]]
    assert "wiki-charles-lindbergh" in docs and "wiki-st-louis" in docs
    decisions = [d for t in body["trace"]["turns"] for d in t["meta"]["decisions"]]
    assert decisions[-1]["kind"] == "rank" and all("logp" in d for d in decisions)
    assert body["usage"]["searches"] >= 2


def test_search_with_trace_and_fused_rollouts(http: httpx.Client) -> None:
    body = http.post("/v1/search", json={"query": QUESTION, "k": 5, "rollouts": 2, "include_trace": True}).json()
    trace = body["trace"]
    assert trace["question"] == QUESTION and len(trace["meta"]["rollouts"]) == 2
    assert [e["chunk_id"] for e in trace["returned"]] == [x["id"] for x in body["results"]]
    assert set(trace["seen_chunk_ids"]) >= {x["id"] for x in body["results"]}
    assert body["policy"] == f"{DEFAULT_POLICY}x2"


def test_search_stream_sends_progress_then_result(http: httpx.Client) -> None:
    with http.stream("POST", "/v1/search", json={"query": QUESTION, "k": 5, "stream": True}) as r:
        events = sse(r)
    kinds = [e.event for e in events]
    assert kinds[-1] == "result" and kinds.count("result") == 1 and "error" not in kinds
    assert kinds[0] == "action" and "observation" in kinds and "usage" in kinds
    actions = [e.data for e in events if e.event == "action"]
    assert all(len(a["tools"]) == len(a["params"]) for a in actions)
    assert "search" in actions[0]["tools"]
    obs = [e.data for e in events if e.event == "observation"]
    assert all("content" not in res for o in obs for res in o["results"])  # sizes, not chunk text
    assert any(res["tokens"] > 0 and res["chunk_ids"] for o in obs for res in o["results"])
    final = events[-1].data
    # The streamed result is the same episode as a plain call (the default policy serves greedily: deterministic).
    plain = http.post("/v1/search", json={"query": QUESTION, "k": 5}).json()
    assert [x["id"] for x in final["results"]] == [x["id"] for x in plain["results"]]
    assert final["usage"]["turns"] == len([e for e in events if e.event == "usage"])


def test_context1_stream_shape(http: httpx.Client) -> None:
    body = {"query": QUESTION, "model": "scout", "collection_name": "sample", "chroma_api_key": "ignored"}
    with http.stream("POST", "/search", json=body, headers={"Accept": "text/event-stream"}) as r:
        events = sse(r)
    frames = [e.data for e in events]
    assert all(e.event == "message" and set(f) == {"type", "data"} for e, f in zip(events, frames))
    types = [f["type"] for f in frames]
    assert types[-2:] == ["usage", "done"] and "error" not in types
    assert types[0] == "action" and "observation" in types
    for f in frames:
        if f["type"] == "action":
            assert len(f["data"]["tools"]) == len(f["data"]["params"])
            assert all(isinstance(t, dict) and "name" in t for t in f["data"]["tools"])
    answer = frames[-3]
    assert answer["type"] == "action" and answer["data"]["tools"] == [{"name": "user_text"}]
    blocks = DOCUMENT_BLOCK.findall(answer["data"]["params"][0]["text"])
    plain = http.post("/v1/search", json={"query": QUESTION}).json()
    assert [cid for cid, _ in blocks] == [x["id"] for x in plain["results"]]
    assert all(just for _, just in blocks)
    usage = frames[-2]["data"]
    assert usage["model"] == DEFAULT_POLICY and usage["input_tokens"] > 0 and usage["output_tokens"] >= 0


def test_context1_unknown_collection_fails_before_streaming(http: httpx.Client) -> None:
    r = http.post("/search", json={"query": "x", "collection_name": "no-such"})
    assert_problem(r, 404, "unknown_collection")


@pytest.mark.parametrize(
    "payload,code,status",
    [
        ({"query": "x", "collection": "no-such"}, "unknown_collection", 404),
        ({"query": "x", "budget_tokens": 10_000_000}, "invalid_input", 422),
        ({"query": "x", "budget_tokens": 100}, "invalid_input", 422),
        ({"query": "x", "max_turns": 999}, "invalid_input", 422),
        ({"query": "x", "policy": "openai"}, "invalid_input", 422),  # no OpenAI endpoint configured here
        ({"query": "x", "policy": "local"}, "invalid_input", 422),  # the bundled model is opt-in
        ({"query": "x", "filters": {"$bogus": 1}}, "invalid_input", 422),
        ({"query": "x", "rollouts": 9}, "invalid_input", 422),
        ({"query": "x", "stream": True, "collection": "no-such"}, "unknown_collection", 404),
    ],
)
def test_search_limits_are_problems(http: httpx.Client, payload: dict, code: str, status: int) -> None:
    assert_problem(http.post("/v1/search", json=payload), status, code)


def test_search_filters_restrict_the_evidence(http: httpx.Client) -> None:
    body = http.post(
        "/v1/search", json={"query": "capital city", "collection": TINY, "filters": {"country": "Germany"}}
    ).json()
    assert {x["doc_id"] for x in body["results"]} == {"berlin"}


def test_agent_metrics_recorded(http: httpx.Client) -> None:
    http.post("/v1/search", json={"query": QUESTION, "k": 3})
    text = http.get("/metrics").text
    runs = re.search(
        rf'^sieve_agent_runs_total\{{policy="{DEFAULT_POLICY}",stop_reason="\w+"\}} ([0-9.]+)$', text, re.M
    )
    assert runs and float(runs.group(1)) >= 1
    assert re.search(r"^sieve_agent_turns_count ([0-9.]+)$", text, re.M)
    tokens = re.search(r"^sieve_agent_tokens_sum ([0-9.e+]+)$", text, re.M)
    assert tokens and float(tokens.group(1)) > 0
    assert 'sieve_agent_tool_calls_total{tool="search"}' in text


def test_request_timeout_is_504(timeouts) -> None:
    with httpx.Client(base_url=timeouts.url) as c:
        body = assert_problem(c.post("/v1/retrieve", json={"query": "capital of France", "k": 2}), 504, "timeout")
        assert "0.0001" in body["detail"]
        assert_problem(c.post("/v1/search", json={"query": "capital of France"}), 504, "timeout")
        # Cheap endpoints that do no blocking work are unaffected.
        assert c.get("/healthz").status_code == 200


def test_stream_reports_timeout_as_error_event(timeouts) -> None:
    # The pre-check (which opens the collection) is itself subject to the deadline, so it may time
    # out before the stream starts; either way the client learns of the timeout, never a hang.
    with (
        httpx.Client(base_url=timeouts.url) as c,
        c.stream("POST", "/v1/search", json={"query": "capital of France", "stream": True}) as r,
    ):
        if r.status_code == 504:
            assert json.loads(r.read())["code"] == "timeout"
            return
        events = list(iter_sse(r.iter_lines()))
    assert events[-1].event == "error" and events[-1].data["code"] == "timeout"


def test_a_collection_that_adopted_a_run_is_served_with_its_policy(http: httpx.Client, live, tmp_path) -> None:
    """`sieve adopt` records a run on a collection: the server's searches on it use the run's policy, with no
    setting changed; the other collections keep the server's policy."""
    import shutil

    from sieve.agent.policies.learned.policy import default_checkpoint
    from sieve.core.runs import RunArtifact

    run = RunArtifact(tmp_path / "run", policy=tmp_path / "run" / "policy", embedder=None)
    shutil.copytree(default_checkpoint(), run.policy)
    run.save()
    index = live.state.index(TINY)
    with index.write_lock.hold():
        index.store.record_run(str(run.folder))
    try:
        for collection in (TINY, None):
            r = http.post("/v1/search", json={"query": "hybrid retrieval", "k": 3, "collection": collection})
            assert r.status_code == 200, r.text
        keys = set(live.state._policies)
        assert f"learned|{run.folder}" in keys and "learned|" in keys, keys
    finally:
        with index.write_lock.hold():
            index.store.record_run(None)
