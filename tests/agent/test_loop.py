"""Loop mechanics: budget, caps, events, traces, fused rollouts (scripted FAKE model unless noted)."""

from __future__ import annotations

import json
import re

from _agent_fakes import AlwaysSearch, ScriptedBackend, TimeoutBackend, call, text_turn, turn

from sieve.agent import AgentConfig, SearchAgent, Trace, make_policy
from sieve.pruning.budget import HARD_NOTICE, SOFT_NOTICE


def _notices(request):
    return [m["content"] for m in request["messages"] if m["content"].startswith("[Token usage:")]


def test_usage_line_every_turn_and_only_latest_in_view(run_script):
    trace, backend, _ = run_script([turn(call("search", query="Lindbergh", k=1))] * 3)
    stated = []
    for req in backend.requests:
        notices = _notices(req)
        assert len(notices) == 1  # older notices leave the view
        used = re.fullmatch(r"\[Token usage: ([\d,]+)/8,192\]", notices[0])
        assert used, notices[0]
        stated.append(int(used.group(1).replace(",", "")))
    # The notice a turn ends with states the context it ends with: it replaces the previous notice,
    # of the same length here, so the count equals the turn's recorded context_tokens.
    assert len(stated) == len(trace.turns) == 4  # the script's 3 searches, then the fake's closing finish
    assert stated[1:] == [t.context_tokens for t in trace.turns[:-1]]
    assert 0 < stated[0] < stated[1] < stated[2] < stated[3]  # each search showed a new chunk


def test_soft_and_hard_limits(run_script):
    # A 1,024-token budget: soft at 512, hard at 921 (0.9).
    script = (
        [turn(call("search", query="Charles Lindbergh Spirit of St. Louis", k=10))]
        + [turn(call("search", query=f"Lindbergh {i}", k=10)) for i in range(4)]
        + [
            turn(call("prune", ids=[f"c{i}" for i in range(1, 40)])),
            turn(call("search", query="Paris", k=1)),
            turn(call("finish", ids=["c1"])),
        ]
    )
    trace, backend, events = run_script(script, budget_tokens=1024)
    states = [e["state"] for e in events if e["type"] == "usage"]
    assert "soft" in states and "hard" in states
    notices = [n for r in backend.requests for n in _notices(r)]
    assert any(SOFT_NOTICE in n for n in notices) and any(HARD_NOTICE in n for n in notices)
    rejected = [c for c in trace.tool_calls if c.error and "past the hard context limit" in c.error]
    assert rejected and all(c.name == "search" and not c.malformed for c in rejected)
    prune = next(c for c in trace.tool_calls if c.name == "prune")
    assert prune.error is None  # prune is always allowed
    after_prune = trace.tool_calls[trace.tool_calls.index(prune) + 1]
    assert after_prune.error is None and after_prune.result_chunk_ids  # budget freed: search works again
    assert trace.peak_context_tokens <= 1024 + 200  # per-call packing never overshoots the hard limit much
    assert trace.stop_reason == "finished"


def test_hard_caps_end_cleanly(run_script, sample_index):
    trace, _, _ = run_script(AlwaysSearch(), max_turns=3)
    assert trace.stop_reason == "max_turns" and len(trace.turns) == 3
    assert trace.returned  # fallback: chunks in view, most relevant first
    trace, _, _ = run_script(AlwaysSearch(), max_tool_calls=2)
    assert trace.stop_reason == "max_tool_calls" and len(trace.tool_calls) == 2
    trace, _, _ = run_script(AlwaysSearch(), max_total_tokens=1000)
    assert trace.stop_reason == "max_tokens"
    trace, _, _ = run_script(AlwaysSearch(), max_wall_s=1e-6)
    assert trace.stop_reason == "timeout" and not trace.turns
    many = turn(*[call("search", query=f"Lindbergh {i}", k=1) for i in range(5)])
    trace, _, _ = run_script([many], max_calls_per_turn=2)
    errors = [c.error for c in trace.turns[0].tool_calls]
    assert errors[:2] == [None, None] and all("at most 2 tool calls" in e for e in errors[2:])


def test_backend_timeout_and_plain_text_answer(run_script):
    trace, _, events = run_script(TimeoutBackend())
    assert trace.stop_reason == "backend_error" and "timeout" in trace.meta["error"]
    assert events[-1]["type"] == "done"
    trace, _, _ = run_script([turn(call("search", query="Lindbergh", k=2)), RuntimeError("model crashed")])
    assert trace.stop_reason == "backend_error" and len(trace.meta["policy_returned"]) == 2
    assert "model crashed" in trace.warnings[0]
    # Text with no tool call after a search is an answer (evidence was seen); with none seen it is not.
    trace, _, _ = run_script([turn(call("search", query="Lindbergh", k=2)), text_turn("I think it is Paris.")])
    assert trace.stop_reason == "no_tool_call" and trace.answer == "I think it is Paris." and not trace.warnings
    trace, _, _ = run_script([text_turn("I think the answer is Paris.")])
    assert trace.stop_reason == "no_tool_call" and trace.answer is None and "wrote no tool call" in trace.warnings[0]


def test_events_and_trace_roundtrip(run_script):
    trace, _, events = run_script(
        [turn(call("search", query="Lindbergh", k=2), call("grep", pattern="Paris")), turn(call("finish", ids=["c1"]))],
        record_prompts=True,
    )
    kinds = [e["type"] for e in events]
    assert kinds[:3] == ["action", "observation", "usage"] and kinds[-1] == "done"
    assert events[0]["tools"] == ["search", "grep"] and events[0]["params"][0]["query"] == "Lindbergh"
    assert trace.turns[1].prompt_messages[-1]["content"].startswith("[Token usage:")
    assert trace.turns[0].prompt_messages[0]["role"] == "system"
    full = trace.meta["trajectory"]
    assert sum(m["content"].startswith("[Token usage:") for m in full) == 3  # every notice kept unpruned
    data = json.loads(trace.to_json())
    again = Trace.from_dict(data)
    assert again.returned_chunk_ids == trace.returned_chunk_ids and again.n_searches == 2
    assert again.tool_calls[0].result_chunk_ids == trace.tool_calls[0].result_chunk_ids


def test_broken_event_callback_does_not_break_the_episode(sample_index):
    config = AgentConfig()
    agent = SearchAgent(
        sample_index,
        make_policy("openai", config, backend=ScriptedBackend([turn(call("search", query="Lindbergh", k=1))])),
        config,
    )

    def bad(event):
        raise ValueError("printer broke")

    assert agent.run("Lindbergh", on_event=bad).stop_reason == "finished"


def test_fused_rollouts_vary_temperature_and_fuse_by_rrf(sample_index):
    class Varied:
        """FAKE model (scripted): rollout-dependent query, then finishes with the first two shown."""

        def __init__(self):
            self.temps = []

        def chat(self, messages, tools, **kw):
            self.temps.append(kw["temperature"])
            if any(m["role"] == "tool" for m in messages):
                return turn(call("finish", ids=["c2", "c1"]))
            q = "Lindbergh" if kw["temperature"] == 0 else "Spirit of St. Louis"
            return turn(call("search", query=q, k=2))

    config = AgentConfig()
    backend = Varied()
    agent = SearchAgent(sample_index, make_policy("openai", config, backend=backend), config)
    fused = agent.run_fused("Lindbergh aircraft", rollouts=3)
    assert sorted(set(backend.temps)) == [0.0, 0.7]
    assert len(fused.meta["rollouts"]) == 3 and fused.policy == "openaix3"
    scores = [e.score for e in fused.returned]
    assert scores == sorted(scores, reverse=True) and len(fused.returned) >= 2
    assert set(fused.returned_chunk_ids) <= set(fused.seen_chunk_ids)
    assert len(fused.turns) == 6


def test_cancel_token_stops_the_episode_at_the_next_turn_boundary(sample_index):
    from sieve.agent import CancelToken

    config = AgentConfig(max_turns=10)
    agent = SearchAgent(sample_index, make_policy("openai", config, backend=AlwaysSearch()), config)
    token = CancelToken()
    events: list[dict] = []

    def on_event(event: dict) -> None:  # the "client" leaves after the second turn's results
        events.append(event)
        if event["type"] == "observation" and event["turn"] == 1:
            token.cancel("disconnect")

    trace = agent.run("Charles Lindbergh aircraft city population", on_event=on_event, cancel=token)
    assert trace.stop_reason == "cancelled" and trace.meta["cancel_reason"] == "disconnect"
    assert len(trace.turns) == 2  # turn 2 finished; no turn 3 began
    assert trace.returned and events[-1] == {**events[-1], "type": "done", "stop_reason": "cancelled"}
    already = CancelToken()
    already.cancel()
    fused = agent.run_fused("Charles Lindbergh aircraft", rollouts=2, cancel=already)
    assert [r["stop_reason"] for r in fused.meta["rollouts"]] == ["cancelled", "cancelled"] and not fused.turns


def test_a_question_with_no_word_of_the_collection_is_flagged(sample_index):
    """Real index, heuristic policy: the closing ranking's scores mean nothing without a matching word."""
    from sieve.agent.loop import NO_MATCHING_WORDS

    config = AgentConfig(k=3)
    agent = SearchAgent(sample_index, make_policy("heuristic", config), config)
    for question in ("the of and", "zqxjv wvkplm"):  # only stop words; words no chunk holds
        trace = agent.run(question)
        assert trace.warnings == [NO_MATCHING_WORDS], trace.warnings
        assert len(trace.returned) == 3  # still an answer, ranked by meaning
    assert agent.run("Where was Charles Lindbergh born?").warnings == []
