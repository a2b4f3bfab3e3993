"""gpt-oss's harmony format through ``openai-harmony``, reasoning carried between turns, citations resolved.

The harmony replies here are rendered by ``openai-harmony`` itself from the messages a gpt-oss turn
is made of (reasoning on ``analysis``, a call on ``commentary`` to ``functions.<tool>``, an answer on
``final``), then read back raw, with their special tokens stripped, or as a server's structured
``tool_calls``. The model server is the SCRIPTED (fake) one of ``_openai_server.py``: real HTTP, scripted replies.
"""

from __future__ import annotations

import hashlib
import json

import openai_harmony as oh
import pytest
from _openai_server import FakeOpenAI, completion

from sieve.agent import AgentConfig, SearchAgent, make_policy
from sieve.agent.backends.harmony import is_harmony, read_reply, render_harmony
from sieve.agent.backends.harmony_vocab import VOCAB_FILE, VOCAB_SHA256, harmony_encoding, vocab_folder
from sieve.agent.config import FloorConfig
from sieve.agent.tool_specs import tool_specs


@pytest.fixture()
def fake():
    server = FakeOpenAI()
    yield server
    server.close()


def _assistant(channel, text, recipient=None):
    m = oh.Message.from_role_and_content(oh.Role.ASSISTANT, text).with_channel(channel)
    if recipient:
        m = m.with_recipient(recipient).with_content_type("<|constrain|>json")
    return m


def _completion(messages, *, strip=False):
    """What gpt-oss writes after ``<|start|>assistant`` for ``messages``: rendered by openai-harmony."""
    enc = harmony_encoding()
    # As generated: an analysis before a final is kept (the renderer drops it from history by default).
    keep = oh.RenderConversationConfig(auto_drop_analysis=False)
    tokens = enc.render_conversation(oh.Conversation.from_messages(messages), config=keep)
    start = enc.encode("<|start|>assistant", allowed_special="all")
    assert tokens[: len(start)] == start
    tokens = tokens[len(start) :]
    if strip:  # what a server decoding with skip_special_tokens sends
        return enc.decode_utf8([t for t in tokens if not enc.is_special_token(t)])
    return enc.decode_utf8(tokens)


SEARCH_TURN = [
    _assistant("analysis", "The aircraft is the Spirit of St. Louis; search Lindbergh first."),
    _assistant("commentary", json.dumps({"query": "Charles Lindbergh", "k": 2}), "functions.search"),
]
FINAL_TURN = [_assistant("analysis", "Enough."), _assistant("final", "St. Louis [c1].")]


def test_the_vocabulary_is_found_offline_and_is_openais(tmp_path, monkeypatch):
    monkeypatch.delenv("TIKTOKEN_ENCODINGS_BASE", raising=False)
    folder = vocab_folder(tmp_path)
    assert hashlib.sha256((folder / VOCAB_FILE).read_bytes()).hexdigest() == VOCAB_SHA256


@pytest.mark.parametrize("strip", [False, True], ids=["raw", "special-tokens-stripped"])
def test_harmony_replies_become_tool_calls(strip):
    text = _completion(SEARCH_TURN, strip=strip)
    assert is_harmony(text) and ("<|channel|>" in text) != strip
    reply = read_reply(text)
    assert [(c.name, c.arguments) for c in reply.calls] == [("search", {"query": "Charles Lindbergh", "k": 2})]
    assert reply.reasoning.startswith("The aircraft is the Spirit") and reply.text == ""
    final = read_reply(_completion(FINAL_TURN, strip=strip))
    assert (final.calls, final.text, final.reasoning) == ([], "St. Louis [c1].", "Enough.")


def test_recipient_before_the_channel_and_a_missing_stop_token():
    # gpt-oss writes `<|start|>assistant to=functions.x<|channel|>commentary` as well as the other order,
    # and servers that stop on <|call|> leave it out of the text.
    raw = (
        "<|channel|>analysis<|message|>Grep it.<|end|><|start|>assistant to=functions.grep<|channel|>commentary "
        '<|constrain|>json<|message|>{"pattern": "Lindbergh"}'
    )
    for text in (
        raw,
        raw.replace("<|constrain|>", "")
        .replace("<|channel|>", "")
        .replace("<|message|>", "")
        .replace("<|end|>", "")
        .replace("<|start|>", ""),
    ):
        reply = read_reply(text)
        assert [(c.name, c.arguments) for c in reply.calls] == [("grep", {"pattern": "Lindbergh"})], text
        assert reply.reasoning == "Grep it."


def test_plain_text_replies_still_go_through_the_lenient_parser():
    assert not is_harmony("The final answer: analysis shows St. Louis.")
    assert read_reply("The final answer: St. Louis.").text == "The final answer: St. Louis."


def test_render_harmony_for_a_completion_endpoint():
    messages = [
        {"role": "system", "content": "You are a search agent."},
        {"role": "user", "content": "Question: where?"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "Search first.",
            "tool_calls": [
                {"id": "c0", "type": "function", "function": {"name": "search", "arguments": '{"query": "x"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c0", "name": "search", "content": "[c1] id=a#0 | A"},
    ]
    text = harmony_encoding().decode_utf8(render_harmony(messages, tool_specs(), reasoning_effort="low"))
    assert "Reasoning: low" in text and "namespace functions" in text and "type search" in text
    assert "You are a search agent." in text
    assert "<|channel|>analysis<|message|>Search first.<|end|>" in text
    assert 'to=functions.search<|channel|>commentary <|constrain|>json<|message|>{"query": "x"}<|call|>' in text
    assert "<|start|>functions.search to=assistant<|channel|>commentary<|message|>[c1] id=a#0 | A<|end|>" in text
    assert text.endswith("<|start|>assistant")


def _agent(sample_index, fake, **kw):
    kw.setdefault("floor", FloorConfig(enabled=False))
    config = AgentConfig(base_url=fake.url, model=kw.pop("model", "gpt-oss-20b"), timeout_s=5.0, retries=0, **kw)
    return SearchAgent(sample_index, make_policy("openai", config), config)


def test_structured_calls_reasoning_carried_and_citations(fake, sample_index):
    """vLLM with gpt-oss's tool parser: `functions.`-named calls and reasoning_content in structured fields."""
    fake.script = [
        (
            200,
            completion(
                None,
                [("functions.search", {"query": "Charles Lindbergh", "k": 2})],
                reasoning=("reasoning_content", "Find the plane first."),
            ),
            0,
        ),
        (
            200,
            completion(None, [("functions.prune", {"ids": ["c2"]})], reasoning=("reasoning_content", "c2 is noise.")),
            0,
        ),
        (200, completion(None, [("finish", {"ids": ["c1"], "answer": "St. Louis [c1] had people [c9]."})]), 0),
    ]
    events: list[dict] = []
    trace = _agent(sample_index, fake).run("Lindbergh aircraft city", on_event=events.append)
    assert trace.stop_reason == "finished" and [c.name for c in trace.tool_calls] == ["search", "prune", "finish"]
    assert not any(c.malformed for c in trace.tool_calls)
    second = fake.requests[1]["body"]["messages"]
    assistant = [m for m in second if m["role"] == "assistant"]
    assert assistant[-1]["reasoning_content"] == "Find the plane first."  # carried back to the model
    third = json.dumps(fake.requests[2]["body"]["messages"])
    assert "[c2] (pruned)" in third and "c2 is noise." in third  # the prune is visible in the next request
    assert [t.reasoning for t in trace.turns] == ["Find the plane first.", "c2 is noise.", ""]
    assert [e["text"] for e in events if e["type"] == "reasoning"] == ["Find the plane first.", "c2 is noise."]
    c1 = trace.turns[0].tool_calls[0].result_chunk_ids[0]
    assert trace.answer == "St. Louis [c1] had people [c9]."
    assert [(c["handle"], c["chunk_id"]) for c in trace.citations] == [("c1", c1)]  # c9 names no chunk seen
    assert trace.meta["token_count"].startswith("o200k_harmony")


def test_reasoning_field_named_as_the_server_names_it(fake, sample_index):
    fake.script = [
        (200, completion(None, [("search", {"query": "Lindbergh"})], reasoning=("reasoning", "Look.")), 0),
        (200, completion(None, [("finish", {"ids": ["c1"]})]), 0),
    ]
    trace = _agent(sample_index, fake, model="some-model").run("Lindbergh aircraft")
    assistant = [m for m in fake.requests[1]["body"]["messages"] if m["role"] == "assistant"][-1]
    assert assistant["reasoning"] == "Look." and "reasoning_content" not in assistant
    assert trace.meta["token_count"].startswith("estimate")


def test_harmony_text_in_content_from_a_server_without_tool_parser(fake, sample_index):
    fake.script = [
        (200, completion(_completion(SEARCH_TURN, strip=True)), 0),
        (
            200,
            completion(
                _completion(
                    [_assistant("commentary", '{"ids": ["c1"], "answer": "St. Louis [c1]"}', "functions.finish")]
                )
            ),
            0,
        ),
    ]
    trace = _agent(sample_index, fake).run("Lindbergh aircraft")
    assert trace.stop_reason == "finished" and [c.name for c in trace.tool_calls] == ["search", "finish"]
    assert trace.turns[0].reasoning.startswith("The aircraft is")
    assert trace.citations and trace.citations[0]["handle"] == "c1"


def test_harmony_completions_backend_episode(fake, sample_index):
    """`api="harmony"`: Sieve renders the prompt; a raw /completions server answers in harmony."""

    def raw(messages):
        return {
            "choices": [{"text": _completion(messages), "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20},
        }

    fake.script = [
        (200, raw(SEARCH_TURN), 0),
        (200, raw([_assistant("commentary", '{"ids": ["c2"]}', "functions.prune")]), 0),
        (200, raw([_assistant("commentary", '{"pattern": "St. Louis"}', "functions.grep")]), 0),
        (200, raw([_assistant("commentary", '{"ids": ["c1"], "answer": "[c1]"}', "functions.finish")]), 0),
    ]
    trace = _agent(sample_index, fake, api="harmony", reasoning_effort="high").run("Lindbergh aircraft")
    assert [c.name for c in trace.tool_calls] == ["search", "prune", "grep", "finish"]
    assert trace.stop_reason == "finished"
    req = fake.requests[2]
    assert req["path"] == "/v1/completions" and req["body"]["skip_special_tokens"] is False
    prompt = harmony_encoding().decode_utf8(req["body"]["prompt"])
    assert "Reasoning: high" in prompt and "[c2] (pruned)" in prompt  # the prune shows in the next prompt
    assert "to=functions.prune" in prompt and "The aircraft is the Spirit" in prompt  # reasoning carried


def test_a_turn_cut_by_length_is_retried_once_with_more_tokens(fake, sample_index):
    fake.script = [
        (200, completion("analysisLet me think at great leng", finish_reason="length"), 0),
        (200, completion(None, [("finish", {"ids": []})]), 0),
    ]
    trace = _agent(sample_index, fake, max_new_tokens=64, length_retry_tokens=1024).run("Lindbergh aircraft")
    assert [r["body"]["max_tokens"] for r in fake.requests] == [64, 1024]
    assert trace.stop_reason == "finished" and trace.turns[0].meta["length_retry"]["max_tokens"] == 1024
    fake.requests.clear()
    fake.script = [(200, completion("thinking...", finish_reason="length"), 0)] * 2
    trace = _agent(sample_index, fake, max_new_tokens=64, length_retry_tokens=1024).run("Lindbergh aircraft")
    assert trace.stop_reason == "truncated" and "ran out of tokens" in trace.warnings[0]
    assert len(fake.requests) == 2


def test_reasoning_reaches_a_local_chat_template_as_thinking():
    from sieve.agent.backends.local import _args_dict_msg

    msg = {"role": "assistant", "content": "", "reasoning_content": "Search first.", "tool_calls": []}
    assert _args_dict_msg(msg)["thinking"] == "Search first."  # gpt-oss's template reads `thinking`
    assert "thinking" not in _args_dict_msg({"role": "assistant", "content": "Paris."})
