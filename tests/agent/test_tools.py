"""Every tool through the loop, driven by a scripted FAKE model (see _agent_fakes.py)."""

from __future__ import annotations

import threading

from _agent_fakes import ScriptedBackend, call, text_turn, turn

from sieve.agent import AgentConfig, SearchAgent, make_policy


def _calls(trace):
    return trace.tool_calls


def test_search_shows_handles_and_never_repeats_a_chunk(run_script):
    trace, backend, _ = run_script(
        [
            turn(call("search", query="Spirit of St. Louis aircraft", k=3)),
            turn(call("search", query="Spirit of St. Louis aircraft", k=3)),
            turn(call("finish", ids=["c1", "c4"], answer="x")),
        ]
    )
    first, second, fin = _calls(trace)
    assert len(first.result_chunk_ids) == 3 and len(second.result_chunk_ids) == 3
    assert not set(first.result_chunk_ids) & set(second.result_chunk_ids)
    # The model saw handles c1..c3 in the first tool message, with ids and titles.
    tool_msg = next(m for m in backend.requests[1]["messages"] if m["role"] == "tool")
    assert "[c1] id=" in tool_msg["content"] and "[c3]" in tool_msg["content"]
    assert trace.returned_chunk_ids == [first.result_chunk_ids[0], second.result_chunk_ids[0]]
    assert trace.answer == "x" and trace.stop_reason == "finished"
    assert trace.seen_chunk_ids == first.result_chunk_ids + second.result_chunk_ids


def test_parallel_calls_run_concurrently_and_do_not_overlap(sample_index):
    barrier = threading.Barrier(2, timeout=10)
    real_search = sample_index.search
    calls = []

    class Probe:
        """Wraps the index: both tool searches must be inside search() at once to pass the barrier."""

        def __getattr__(self, name):
            return getattr(sample_index, name)

        def search(self, *a, **kw):
            calls.append(a)
            if len(calls) <= 2:  # the turn's two searches; the harness's closing search runs alone
                barrier.wait()
            return real_search(*a, **kw)

    config = AgentConfig()
    backend = ScriptedBackend([turn(call("search", query="Lindbergh"), call("search", query="Lindbergh"))])
    trace = SearchAgent(Probe(), make_policy("openai", config, backend=backend), config).run("Lindbergh flight")
    a, b = trace.turns[0].tool_calls
    assert a.error is None and b.error is None
    assert a.result_chunk_ids and b.result_chunk_ids
    assert not set(a.result_chunk_ids) & set(b.result_chunk_ids)


def test_grep_matches_and_bad_regex_is_a_tool_error(run_script):
    trace, backend, _ = run_script(
        [
            turn(call("grep", pattern="Lindbergh", k=9)),  # k above the cap of 5
            turn(call("grep", pattern="Lindbergh", k=0)),
            turn(
                call("grep", pattern="Lindbergh"),
                call("grep", pattern="(unclosed"),
                call("grep", pattern="(?=x)abc"),
                call("grep", pattern="ab"),
            ),
            turn(call("finish", ids=[])),
        ]
    )
    over_k, zero, ok, unclosed, lookahead, short, _ = _calls(trace)
    assert zero.malformed and "between 1 and 5" in zero.error
    assert over_k.error is None and 1 <= len(over_k.result_chunk_ids) <= 5  # capped, not rejected
    assert over_k.arguments["k"] == 5
    assert len(ok.result_chunk_ids) <= 5 and not set(ok.result_chunk_ids) & set(over_k.result_chunk_ids)
    for c in (unclosed, lookahead, short):
        assert c.malformed and c.error and not c.result_chunk_ids
    texts = [m["content"] for m in backend.requests[3]["messages"] if m["role"] == "tool"]
    assert any("Lindbergh" in t for t in texts) and "(k capped at 5)" in texts[0]
    assert sum(t.startswith("Error:") for t in texts) == 4  # k=0 and the three bad patterns
    assert trace.stop_reason == "finished" and trace.returned == []


def test_read_neighbours_whole_document_and_unknown_id(make_index):
    from sieve.retriever import Document

    index = make_index("reads", chunk_tokens=24, chunk_overlap=0)
    long_text = " ".join(f"Sentence {i} tells of the harbour town Lowmoor and its lighthouse." for i in range(12))
    index.writer.index_documents(
        [
            Document("town", long_text, title="Lowmoor"),
            Document("other", "An unrelated note on baking bread.", title="Bread"),
        ],
        progress=False,
    )
    n = index.documents()["town"]
    assert n >= 4
    config = AgentConfig()
    backend = ScriptedBackend(
        [
            turn(call("read", id="town#1", window=1)),
            turn(call("read", id="town")),
            turn(call("read", id="c1", window=0)),  # a handle; already shown
            turn(call("read", id="no-such-doc")),
            turn(call("finish", ids=["c1"])),
        ]
    )
    trace = SearchAgent(index, make_policy("openai", config, backend=backend), config).run("Lowmoor lighthouse")
    window, whole, again, missing, _ = _calls(trace)
    assert sorted(window.result_chunk_ids) == ["town#0", "town#1", "town#2"]
    assert set(whole.result_chunk_ids) == {f"town#{i}" for i in range(3, n)}  # the rest, not repeats
    assert again.error is None and again.result_chunk_ids == []
    assert missing.malformed and "no-such-doc" in missing.error


def test_prune_frees_budget_hides_text_and_chunks_never_return(run_script):
    trace, backend, _ = run_script(
        [
            turn(call("search", query="Charles Lindbergh", k=4)),
            turn(call("prune", ids=["c1", "c2", "zz9"], reason="off topic")),
            turn(call("prune", ids=["c1"])),
            turn(call("prune", ids=["nope"])),
            turn(call("search", query="Charles Lindbergh", k=4)),
            turn(call("finish", ids=["c3"])),
        ]
    )
    search1, prune1, again, bad, search2, _ = _calls(trace)
    t = trace.turns
    assert t[1].context_tokens < t[0].context_tokens  # pruning freed budget
    assert prune1.error is None and "unknown ids ignored" in backend.requests[2]["messages"][-2]["content"]
    assert again.error is None  # already pruned: reported, not an error
    assert bad.malformed
    pruned = search1.result_chunk_ids[:2]
    assert trace.pruned_chunk_ids == pruned
    assert not set(pruned) & set(search2.result_chunk_ids)  # never shown again
    # Pruned text left the model's view; the handle placeholder stayed.
    later = backend.requests[2]["messages"]
    first_tool = next(m for m in later if m["role"] == "tool")
    assert "[c1] (pruned)" in first_tool["content"] and "[c3] id=" in first_tool["content"]
    assert set(pruned) <= set(trace.seen_chunk_ids)


def test_finish_keeps_order_dedupes_and_ignores_unknown(run_script):
    trace, _, _ = run_script(
        [
            turn(call("search", query="Lindbergh transatlantic flight", k=3)),
            turn(call("finish", ids=["c3", "c1", "c3", "bogus"], answer="Paris")),
        ]
    )
    seen = trace.seen_chunk_ids
    assert trace.returned_chunk_ids == [seen[2], seen[0]]
    assert [e.rank for e in trace.returned] == [1, 2]
    assert trace.returned[0].text and trace.returned[0].doc_id == seen[2].rsplit("#", 1)[0]


def test_a_search_filter_that_matches_nothing_is_dropped_and_said(run_script):
    lindbergh = {"source": "https://en.wikipedia.org/wiki/Charles_Lindbergh"}
    trace, backend, _ = run_script(
        [
            turn(call("search", query="Charles Lindbergh", k=3, filters=lindbergh)),
            # What Qwen2.5-Coder-0.5B wrote on every 2Wiki question behind a real vLLM server: an invented filter.
            turn(call("search", query="Spirit of St. Louis aircraft", k=3, filters={"country": "USA"})),
            turn(call("finish", ids=["c1"])),
        ]
    )
    kept, dropped, _ = _calls(trace)
    msgs = [m["content"] for m in backend.requests[2]["messages"] if m["role"] == "tool"]
    # A filter that matches keeps its meaning: only that document's chunks, and no note.
    assert kept.result_chunk_ids and all(c.startswith("wiki-charles-lindbergh#") for c in kept.result_chunk_ids)
    assert "no chunk matches" not in msgs[0]
    assert dropped.error is None and len(dropped.result_chunk_ids) == 3
    assert 'no chunk matches filters {"country": "USA"}' in msgs[1] and "3 new chunks" in msgs[1]


def test_empty_results_are_a_message_not_an_error(run_script):
    trace, backend, _ = run_script(
        [
            turn(call("grep", pattern="zzqqxxyy")),
            turn(call("finish", ids=[])),
        ]
    )
    g = _calls(trace)[0]
    assert g.error is None and g.result_chunk_ids == []
    msg = next(m for m in backend.requests[1]["messages"] if m["role"] == "tool")
    assert "no new chunks" in msg["content"]


def test_malformed_outputs_become_recoverable_tool_errors(run_script):
    trace, backend, _ = run_script(
        [
            text_turn('<tool_call>{"name": "search", "arguments": {"query": "Lindbergh"</tool_call>'),  # broken JSON
            turn(call("teleport", where="moon")),  # unknown tool
            turn(call("search", k=3)),  # missing argument
            turn(call("search", query="x" * 5000)),  # over-long argument
            turn(call("search", query="Lindbergh", k="many")),  # wrong type
            text_turn('{"name": "search", "arguments": {"query": "Spirit of St. Louis"}}'),  # bare JSON: fine
            turn(call("finish", ids=["c1"])),
        ]
    )
    calls = _calls(trace)
    assert [c.malformed for c in calls] == [True, True, True, True, True, False, False]
    assert trace.n_malformed == 5
    assert calls[5].result_chunk_ids and trace.stop_reason == "finished"
    # Each error went back to the model as a tool message it can read.
    errors = [m["content"] for m in backend.requests[-1]["messages"] if m["role"] == "tool"][:5]
    assert all(e.startswith("Error: Expected") for e in errors), errors


def test_a_registered_search_tool_counts_as_a_search_everywhere() -> None:
    """Which calls are searches is the tools' registry's word: the trace, the eval's column and the collapse
    penalty's queries all read ``searches=True``, so a new search tool is counted without an edit elsewhere."""
    import dataclasses

    from sieve.agent.tool_specs import TOOLS, register_tool, search_tools
    from sieve.agent.trace import ToolCall, Trace, Turn
    from sieve.eval.evaluator import row_metrics
    from sieve.train.rewards.penalties import query_of

    assert search_tools() == {"search", "grep"}
    register_tool(dataclasses.replace(TOOLS["search"], name="lookup", call_aliases=()))
    try:
        calls = [ToolCall("lookup", {"query": "St. Louis"}), ToolCall("read", {"id": "c1"})]
        trace = Trace(question="q", turns=[Turn(index=0, tool_calls=calls)])
        assert "lookup" in search_tools() and trace.n_searches == 1
        assert query_of(calls[0]) == "st. louis" and query_of(calls[1]) is None
        row = {"gold_ids": ["d1"], "returned_doc_ids": [], "wall_ms": 1.0, "trace": trace.to_dict()}
        assert row_metrics(row, [5])["searches"] == 1.0
    finally:
        del TOOLS["lookup"]
    assert "lookup" not in search_tools()
