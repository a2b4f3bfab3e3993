"""OpenAIBackend against a real HTTP server that replays SCRIPTED (fake) OpenAI responses.

The server is a stdlib ``http.server`` in a thread: real sockets, real timeouts, real status
codes; only the model's replies are scripted. The real-vLLM test lives in test_vllm.py (opt-in).
"""

from __future__ import annotations

import threading
import time

import pytest
from _openai_server import FakeOpenAI, completion

from sieve.agent import AgentConfig, SearchAgent, make_policy
from sieve.agent.backends.openai import OpenAIBackend
from sieve.agent.tool_specs import tool_specs
from sieve.core.errors import BackendError


@pytest.fixture()
def fake():
    server = FakeOpenAI()
    yield server
    server.close()


def _backend(fake, **kw):
    kw.setdefault("timeout", 2.0)
    kw.setdefault("backoff_s", 0.01)
    return OpenAIBackend(fake.url, "test-model", api_key="sk-test", **kw)


def test_native_tool_calls_and_request_shape(fake):
    fake.script = [(200, completion(None, [("search", {"query": "Lindbergh"}), ("grep", "{bad json")]), 0)]
    res = _backend(fake).chat([{"role": "user", "content": "q"}], tool_specs(), tool_choice="required")
    assert [c.name for c in res.tool_calls] == ["search", "grep"]
    assert res.tool_calls[0].arguments == {"query": "Lindbergh"} and res.tool_calls[0].call_id == "call_0"
    assert res.tool_calls[1].arguments is None and "Expected" in res.tool_calls[1].error
    assert (res.prompt_tokens, res.completion_tokens) == (11, 7)
    req = fake.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer sk-test"
    assert req["body"]["tool_choice"] == "required" and req["body"]["tools"][0]["function"]["name"] == "search"


def test_tool_calls_written_as_text_are_parsed(fake):
    fake.script = [(200, completion('{"name": "search", "arguments": {"query": "Paris"}}'), 0)]
    res = _backend(fake).chat([{"role": "user", "content": "q"}], tool_specs())
    assert [(c.name, c.arguments) for c in res.tool_calls] == [("search", {"query": "Paris"})]
    assert res.text == "" and "Paris" in res.raw


def test_retries_transient_errors_then_succeeds(fake):
    fake.script = [(503, "overloaded", 0), (200, "not json{", 0), (200, completion("ok"), 0)]
    res = _backend(fake, retries=2).chat([{"role": "user", "content": "q"}], None)
    assert res.text == "ok" and len(fake.requests) == 3


def test_timeout_is_retried_and_then_fatal(fake):
    fake.script = [(200, completion("slow"), 1.0), (200, completion("fast"), 0)]
    assert _backend(fake, timeout=0.3, retries=1).chat([{"role": "user", "content": "q"}], None).text == "fast"
    fake.script = [(200, completion("slow"), 1.0)] * 2
    with pytest.raises(BackendError, match="timeout"):
        _backend(fake, timeout=0.3, retries=1).chat([{"role": "user", "content": "q"}], None)


def test_client_errors_are_not_retried(fake):
    fake.script = [(400, {"error": "bad tools"}, 0)]
    with pytest.raises(BackendError, match="400"):
        _backend(fake, retries=3).chat([{"role": "user", "content": "q"}], None)
    assert len(fake.requests) == 1


def test_cancel_aborts_the_call_in_flight_without_retrying(fake):
    from sieve.agent import CancelToken, Cancelled

    fake.script = [(200, completion("too late"), 30.0)]  # the model would take 30 s
    token = CancelToken()

    def leave_once_the_model_has_the_request() -> None:
        while not fake.requests:
            time.sleep(0.01)
        token.cancel("disconnect")

    threading.Thread(target=leave_once_the_model_has_the_request, daemon=True).start()
    t0 = time.monotonic()
    with pytest.raises(Cancelled, match="disconnect"):
        _backend(fake, timeout=60.0, retries=2).chat([{"role": "user", "content": "q"}], None, cancel=token)
    assert time.monotonic() - t0 < 20.0  # the socket was shut down: no waiting for the 30 s reply
    assert len(fake.requests) == 1  # and no retry of a call nobody wants
    with pytest.raises(Cancelled):  # a cancelled token stops the next call before it is sent
        _backend(fake).chat([{"role": "user", "content": "q"}], None, cancel=token)
    assert len(fake.requests) == 1


def test_unreachable_server_is_a_backend_error():
    backend = OpenAIBackend("http://127.0.0.1:9/v1", "m", timeout=0.5, retries=1, backoff_s=0.01)
    with pytest.raises(BackendError, match="connection error"):
        backend.chat([{"role": "user", "content": "q"}], None)


def test_agent_loop_over_http(fake, sample_index):
    fake.script = [
        (200, completion(None, [("search", {"query": "Charles Lindbergh", "k": 2})]), 0),
        (200, completion('<tool_call>{"name": "finish", "arguments": {"ids": ["c2", "c1"]}}</tool_call>'), 0),
    ]
    config = AgentConfig(base_url=fake.url, model="test-model", timeout_s=2.0, retries=0)
    trace = SearchAgent(sample_index, make_policy("openai", config), config).run("Lindbergh aircraft")
    assert trace.stop_reason == "finished" and len(trace.meta["policy_returned"]) == 2  # the model's own finish
    assert trace.tokens_total == 2 * (11 + 7)
    second = fake.requests[1]["body"]["messages"]
    assert second[-3]["tool_calls"][0]["function"]["name"] == "search"  # assistant turn echoed back
    assert second[-2]["role"] == "tool" and second[-2]["tool_call_id"] == "call_0"
    fake.script = [(200, completion("x"), 1.0)]
    config = AgentConfig(base_url=fake.url, timeout_s=0.3, retries=0)
    trace = SearchAgent(sample_index, make_policy("openai", config), config).run("Lindbergh aircraft")
    assert trace.stop_reason == "backend_error" and "timeout" in trace.meta["error"]
