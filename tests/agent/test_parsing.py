"""The lenient tool-call parser and argument validation (pure functions)."""

from __future__ import annotations

import pytest

from sieve.agent.backends.parsing import parse_arguments, parse_tool_calls
from sieve.agent.tool_specs import tool_specs, validate_arguments

KNOWN = {"search", "grep", "read", "prune", "finish"}


@pytest.mark.parametrize(
    "text, name, args",
    [
        ('<tool_call>{"name": "search", "arguments": {"query": "a b"}}</tool_call>', "search", {"query": "a b"}),
        (
            '<tool_call>\n{"name": "grep", "arguments": "{\\"pattern\\": \\"abc\\"}"}\n</tool_call>',
            "grep",
            {"pattern": "abc"},
        ),
        ('Sure!\n```json\n{"name": "read", "parameters": {"id": "c3"}}\n```', "read", {"id": "c3"}),
        ('{"type": "function", "function": {"name": "prune", "arguments": {"ids": ["c1"]}}}', "prune", {"ids": ["c1"]}),
        ("I will call search(query='Lindbergh', k=3)\n", "search", {"query": "Lindbergh", "k": 3}),
        ('[{"name": "finish", "arguments": {"ids": ["c2"]}}]', "finish", {"ids": ["c2"]}),
        ("<tool_call>{'name': 'search', 'arguments': {'query': 'x'}}</tool_call>", "search", {"query": "x"}),
        ("<tool_call>{name: search}</tool_call>", None, None),
    ],
)
def test_shapes(text, name, args):
    calls = parse_tool_calls(text, KNOWN)
    if name is None:  # unreadable inside tags: the model meant a call, so it is reported broken
        assert len(calls) == 1 and calls[0].error
        return
    assert [(c.name, c.arguments) for c in calls] == [(name, args)]
    assert calls[0].error is None


def test_multiple_calls_and_garbage():
    text = (
        '<tool_call>{"name": "search", "arguments": {"query": "a"}}</tool_call>'
        '<tool_call>{"name": "search", "arguments": {"query": "b"}}</tool_call>'
    )
    assert [c.arguments["query"] for c in parse_tool_calls(text)] == ["a", "b"]
    assert parse_tool_calls("The capital of France is Paris.") == []
    assert parse_tool_calls("") == []
    broken = parse_tool_calls('<tool_call>{"name": "search", "arguments": {"query": </tool_call>')
    assert broken[0].name == "search" and broken[0].arguments is None and "Expected" in broken[0].error
    bad_args = parse_tool_calls('{"name": "search", "arguments": "not json at all"}')
    assert bad_args[0].arguments is None and bad_args[0].error
    assert parse_tool_calls("then I call search(query=)", KNOWN)[0].error


def test_parse_arguments():
    assert parse_arguments("") == {}
    assert parse_arguments('{"k": 2}') == {"k": 2}
    assert parse_arguments("[1, 2]") is None and parse_arguments("{oops") is None


def test_validate_arguments():
    assert validate_arguments("search", {"q": "x", "top_k": "4", "extra": 1}) == {"query": "x", "k": 4}
    assert validate_arguments("prune", {"id": "c1"}) == {"ids": ["c1"]}
    assert validate_arguments("finish", {"ids": "c1, c2"}) == {"ids": ["c1", "c2"]}
    assert validate_arguments("search", {"_positional": ["hello"]}) == {"query": "hello"}
    with pytest.raises(ValueError, match="Expected argument"):
        validate_arguments("search", {"k": 3})
    with pytest.raises(ValueError, match="integer"):
        validate_arguments("grep", {"pattern": "abc", "k": True})
    with pytest.raises(ValueError, match="JSON object"):
        validate_arguments("search", {"query": "x", "filters": "source=a"})


def test_specs_are_openai_tools():
    specs = tool_specs()
    assert [s["function"]["name"] for s in specs] == ["search", "grep", "read", "prune", "finish"]
    for s in specs:
        assert s["type"] == "function" and s["function"]["parameters"]["type"] == "object"
        assert set(s["function"]["parameters"]["required"]) <= set(s["function"]["parameters"]["properties"])
