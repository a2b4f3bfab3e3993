"""LocalBackend: prompt folding (pure) and the real SmolLM2-135M end to end on CPU (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.backends.local import fold_tools
from agent.tool_specs import tool_specs


def test_fold_tools_for_templates_without_tool_support():
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "search", "arguments": '{"query": "x"}'}}]},
            {"role": "tool", "tool_call_id": "a", "name": "search", "content": "[c1] id=d#0"}]
    out = fold_tools(msgs, tool_specs())
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert '"name": "search"' in out[0]["content"] and out[0]["content"].startswith("sys")
    assert out[2]["content"] == '<tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>'
    assert "[c1] id=d#0" in out[3]["content"] and all(isinstance(m["content"], str) for m in out)


@pytest.fixture(scope="session")
def smollm2_dir(request) -> Path:
    """SmolLM2 converted once into pytest's cache (persists across runs; ~40 s the first time)."""
    pytest.importorskip("gguf")
    from agent.backends.models import smollm2_path

    try:
        return smollm2_path(Path(request.config.cache.mkdir("sieve-models")))
    except Exception as exc:  # the wheel is a test dependency; say so rather than error
        pytest.skip(f"SmolLM2 wheel unavailable: {exc}")


@pytest.mark.slow
def test_real_smollm2_episode_ends_cleanly(smollm2_dir, sample_index):
    from agent import AgentConfig, SearchAgent, Trace, make_policy

    config = AgentConfig(local_model=smollm2_dir, max_turns=2, max_new_tokens=40, budget_tokens=4096,
                         record_prompts=True)
    policy = make_policy("local", config)
    trace = SearchAgent(sample_index, policy, config).run("Which city was the Spirit of St. Louis named after?")
    # Whatever the untrained model wrote, the episode ended on a defined reason with a valid trace.
    assert trace.stop_reason in ("finished", "no_tool_call", "max_turns", "max_tool_calls")
    assert 1 <= len(trace.turns) <= 2 and all(isinstance(t.completion, str) for t in trace.turns)
    assert trace.turns[0].prompt_messages[0]["role"] == "system"
    assert trace.tokens_total > 0 and trace.policy == "local"
    again = Trace.from_dict(json.loads(trace.to_json()))
    assert again.stop_reason == trace.stop_reason and len(again.turns) == len(trace.turns)
    # The budget counted with the model's own tokenizer.
    assert policy.token_counter().count("Hello world") == len(policy.backend.tokenizer("Hello world")["input_ids"])
