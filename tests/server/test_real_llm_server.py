"""The ``openai`` policy against a REAL inference server: ``transformers serve`` on loopback, CPU.

The server is transformers' own OpenAI-compatible one (chat template, ``generate``, its parser turning
``<think>`` and ``<tool_call>`` text into ``reasoning_content`` and ``tool_calls``); the model is a tiny
Llama TRAINED TO FOLLOW A TOOL SCRIPT (``tests/_scripted_agent.py``: search, prune c2, read c1, finish
citing [c1]), built once and cached beside the converted SmolLM2. Its answers are not meant to be good;
what is checked is that the protocol, the budget, prune and the stream hold through both
``sieve search --policy openai`` (a subprocess) and ``sieve serve`` (uvicorn, JSON and SSE).

Between Sieve and the model server sits a transparent recording proxy, so "a prune visible in the
next request" is read from the requests Sieve actually sent.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from _scripted_agent import ANSWER, QUESTIONS, REASONING, SCRIPT, scripted_agent_model
from _server_process import server_process, sieve_command
from live_server import TINY, TINY_DOCS, LiveServer, start_server

from sieve.client import iter_sse
from sieve.core.net import free_port

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.slow

TOOLS = [name for name, _, _ in SCRIPT]  # search, prune, read, finish
TURN_EVENTS = ["action", "observation", "usage"]  # a turn's events on the stream, after any reasoning
USAGE = re.compile(r"\[Token usage: ([\d,]+)/([\d,]+)\]")


class RecordingProxy:
    """Forwards ``POST /v1/...`` to the model server unchanged and records each request and reply body."""

    def __init__(self, upstream: str) -> None:
        self.exchanges: list[tuple[dict[str, Any], dict[str, Any]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                reply = httpx.post(
                    upstream + self.path, content=body, headers={"Content-Type": "application/json"}, timeout=120
                )
                if reply.status_code == 200:
                    outer.exchanges.append((json.loads(body), reply.json()))
                self.send_response(reply.status_code)
                self.send_header("Content-Type", reply.headers.get("content-type", "application/json"))
                self.send_header("Content-Length", str(len(reply.content)))
                self.end_headers()
                self.wfile.write(reply.content)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _documents() -> list[Any]:
    from sieve.retriever.types import Document

    return [Document(doc_id=d["id"], text=d["text"], title=d["title"]) for d in TINY_DOCS]


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> tuple[Path, Any]:
    """A data folder holding the three tiny documents: the CLI's, and where the training episodes ran."""
    from sieve.retriever import CorpusIndex, RetrieverConfig

    data = tmp_path_factory.mktemp("real-llm-data")
    index = CorpusIndex.open(RetrieverConfig(data_dir=data), TINY, create=True, embedder=embedder)
    index.writer.index_documents(_documents(), progress=False)
    return data, index


@pytest.fixture(scope="module")
def agent_model(tiny_data: tuple[Path, Any], smollm2_dir: Path, model_cache_dir: Path) -> Path:
    return scripted_agent_model(tiny_data[1], smollm2_dir, model_cache_dir)


@pytest.fixture(scope="module")
def model_server(agent_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RecordingProxy]:
    """``transformers serve MODEL`` on a loopback port (CPU), behind a recording proxy."""
    if importlib.util.find_spec("openai") is None:  # transformers' [serving] extra: a test dependency
        pytest.fail("Expected the `openai` package (transformers serve needs it), got none: install the test extras")
    port = free_port()
    cmd = [sys.executable, "-m", "transformers.cli.transformers", "serve", str(agent_model)]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--device", "cpu", "--log-level", "warning"]
    # No update check against PyPI, nothing from the hub.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_UPDATE_CHECK": "1"}
    with server_process(
        cmd,
        f"http://127.0.0.1:{port}/health",
        name="transformers serve",
        log_path=tmp_path_factory.mktemp("transformers-serve") / "server.log",
        timeout_s=180,
        poll_s=0.5,
        env=env,
    ):
        proxy = RecordingProxy(f"http://127.0.0.1:{port}")
        yield proxy
        proxy.close()


@pytest.fixture(scope="module")
def sieve_server(
    model_server: RecordingProxy, agent_model: Path, tmp_path_factory: pytest.TempPathFactory, embedder: Any
) -> Iterator[LiveServer]:
    srv = start_server(
        embedder,
        tmp_path_factory.mktemp("real-llm-serve"),
        collection=TINY,
        openai_base_url=model_server.url,
        openai_model=str(agent_model),
        max_wall_s=120.0,
    )
    srv.state.index(TINY, create=True).writer.index_documents(_documents(), progress=False)
    yield srv
    srv.stop()


def _usage(request: dict[str, Any]) -> tuple[int, int]:
    """The ``[Token usage: N/B]`` line Sieve ends each request with: the view's tokens and the budget."""
    found = USAGE.search(request["messages"][-1]["content"])
    assert found, request["messages"][-1]
    return int(found[1].replace(",", "")), int(found[2].replace(",", ""))


def _check_model_traffic(proxy: RecordingProxy) -> str:
    """What went over the wire to the model server in one episode; returns the chunk id handle c1 named.

    The server's replies carry the calls it parsed (structured ``tool_calls``, ``reasoning_content``);
    Sieve's requests carry the reasoning back, the prune (c2's text gone from the next request), and
    the budget line, every turn within the budget.
    """
    assert len(proxy.exchanges) == len(SCRIPT), [r["choices"][0]["message"] for _, r in proxy.exchanges]
    requests = [request for request, _ in proxy.exchanges]
    replies = [reply["choices"][0] for _, reply in proxy.exchanges]
    assert all(r["message"].get("tool_calls") for r in replies), [r["message"] for r in replies]
    assert [c["function"]["name"] for r in replies for c in r["message"]["tool_calls"]] == TOOLS
    assert {r["finish_reason"] for r in replies} == {"tool_calls"}
    assert [r["message"].get("reasoning_content") for r in replies[:2]] == list(REASONING)
    sent_back = [m for m in requests[1]["messages"] if m["role"] == "assistant"][-1]
    assert sent_back.get("reasoning_content") == REASONING[0], sent_back
    before, after = (next(m for m in r["messages"] if m["role"] == "tool")["content"] for r in requests[1:3])
    c1 = re.search(r"\[c1\] id=(\S+) \|", before)
    c2 = re.search(r"\[c2\] id=\S+ \| [^\n]+\n([^\n]+)", before)
    assert c1 and c2, before
    assert "[c2] (pruned)" in after and c2[1] not in json.dumps(requests[2]["messages"]), after
    assert "Pruned 1 chunk (c2)" in requests[2]["messages"][-2]["content"]
    usage = [_usage(r) for r in requests]
    assert all(0 < used <= budget for used, budget in usage), usage
    return c1[1]


def test_cli_episode_through_the_real_server(
    model_server: RecordingProxy, agent_model: Path, tiny_data: tuple[Path, Any]
) -> None:
    model_server.exchanges.clear()
    env = {
        **os.environ,
        "SIEVE_DATA_DIR": str(tiny_data[0]),
        "SIEVE_OPENAI_BASE_URL": model_server.url,
        "SIEVE_OPENAI_MODEL": str(agent_model),
    }
    cmd = [*sieve_command(), "search", QUESTIONS[0], "-c", TINY, "--policy", "openai", "-k", "3"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    c1 = _check_model_traffic(model_server)
    assert "finished: 4 turns, 4 tool calls (1 search, 1 prune, 0 malformed)" in r.stderr, r.stderr
    assert f"answer: {ANSWER}" in r.stdout, r.stdout
    assert re.search(rf"^\s*\[c1\] {re.escape(c1)} \(\w+\)$", r.stdout, re.M), r.stdout


def test_serve_json_episode_through_the_real_server(
    sieve_server: LiveServer, model_server: RecordingProxy, agent_model: Path
) -> None:
    model_server.exchanges.clear()
    body = {"query": QUESTIONS[1], "policy": "openai", "k": 3, "include_trace": True}
    r = httpx.post(f"{sieve_server.url}/v1/search", json=body, timeout=300)
    assert r.status_code == 200, r.text
    out = r.json()
    trace = out["trace"]
    assert out["stop_reason"] == "finished" and out["answer"] == ANSWER
    assert [c["name"] for t in trace["turns"] for c in t["tool_calls"]] == TOOLS
    c1 = _check_model_traffic(model_server)
    assert trace["turns"][0]["tool_calls"][0]["result_chunk_ids"][0] == c1 and out["results"][0]["id"] == c1
    title = next(d["title"] for d in TINY_DOCS if d["id"] == c1.split("#")[0])
    assert out["citations"] == [{"handle": "c1", "chunk_id": c1, "doc_id": c1.split("#")[0], "title": title}]
    assert [t["reasoning"] for t in trace["turns"]] == [*REASONING, "", ""]
    # The budget counts in the served model's own tokens (its tokenizer.json is on this machine).
    assert trace["meta"]["token_count"] == f"the model's tokenizer ({agent_model / 'tokenizer.json'})"
    assert 0 < trace["peak_context_tokens"] <= trace["budget_tokens"]
    # Each request's usage line is what the trace recorded for the view after the turn before.
    sent = [_usage(request)[0] for request, _ in model_server.exchanges[1:]]
    assert sent == [t["context_tokens"] for t in trace["turns"][:-1]]


def test_serve_sse_episode_through_the_real_server(sieve_server: LiveServer, model_server: RecordingProxy) -> None:
    model_server.exchanges.clear()
    body = {"query": QUESTIONS[2], "policy": "openai", "k": 3, "stream": True}
    with httpx.stream("POST", f"{sieve_server.url}/v1/search", json=body, timeout=300) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = list(iter_sse(r.iter_lines()))
    c1 = _check_model_traffic(model_server)
    # Per turn: the model's reasoning (when it wrote some), the call, its result, the budget; then the result.
    expected = [kind for _, _, reasoning in SCRIPT for kind in (["reasoning"] if reasoning else []) + TURN_EVENTS]
    assert [e.event for e in events] == [*expected, "result"]
    assert [e.data["text"] for e in events if e.event == "reasoning"] == list(REASONING)
    assert [e.data["tools"] for e in events if e.event == "action"] == [[name] for name in TOOLS]
    observed = [e.data["results"][0] for e in events if e.event == "observation"]
    assert observed[0]["handles"] == ["c1", "c2"] and observed[0]["chunk_ids"][0] == c1
    assert observed[1]["summary"].startswith("Pruned 1 chunk (c2)")
    usage = [e.data for e in events if e.event == "usage"]
    assert all(0 < u["context_tokens"] <= u["budget"] and u["state"] == "ok" for u in usage), usage
    result = events[-1].data
    assert result["stop_reason"] == "finished" and result["answer"] == ANSWER
    assert [(c["handle"], c["chunk_id"]) for c in result["citations"]] == [("c1", c1)]
