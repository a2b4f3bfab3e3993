"""A lenient tool-call parser for models that write their calls as text.

Small models emit tool calls in many shapes: ``<tool_call>{...}</tool_call>`` (Qwen, Hermes),
bare JSON objects or lists (Qwen2.5-Coder), fenced code blocks, ``{"function": ...}`` wrappers,
``"parameters"`` instead of ``"arguments"``, arguments given as a JSON string, or Python-ish
``search(query="...")``. This module accepts all of them and never raises: what cannot be read
comes back as a :class:`ParsedToolCall` with ``error`` set, so the loop can tell the model.
"""

from __future__ import annotations

import ast
import json
import re
from typing import TYPE_CHECKING, Any

from sieve.agent.backends.base import ParsedToolCall
from sieve.agent.tool_specs import known_tool_names

if TYPE_CHECKING:
    from collections.abc import Collection

_TAG_RE = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCE_RE = re.compile(r"```(?:json|tool_call|python)?\s*(.*?)```", re.DOTALL)
_FUNC_RE = re.compile(r"\b([a-z_][a-z0-9_]*)\s*\((.*?)\)\s*(?:$|\n)", re.DOTALL | re.IGNORECASE)


def _json_objects(text: str) -> list[tuple[Any, str]]:
    """Every top-level JSON value (object or list) embedded in ``text``, with its source span."""
    decoder = json.JSONDecoder()
    out: list[tuple[Any, str]] = []
    i = 0
    while i < len(text):
        if text[i] in "{[":
            try:
                value, end = decoder.raw_decode(text, i)
            except json.JSONDecodeError:
                i += 1
                continue
            out.append((value, text[i:end]))
            i = end
        else:
            i += 1
    return out


def _from_value(value: Any, raw: str) -> list[ParsedToolCall]:
    """Tool calls from one decoded JSON value; [] when it does not look like a call."""
    if isinstance(value, list):
        return [c for v in value for c in _from_value(v, raw)]
    if not isinstance(value, dict):
        return []
    if "function" in value and isinstance(value["function"], dict):  # OpenAI wrapper
        inner = dict(value["function"])
        inner.setdefault("id", value.get("id"))
        value = inner
    name = value.get("name") or value.get("tool") or value.get("tool_name")
    if not isinstance(name, str) or not name:
        return []
    args: Any = value.get("arguments", value.get("parameters", value.get("args", value.get("input", {}))))
    call_id = str(value.get("id") or "")
    return [_with_args(name, args, call_id, raw)]


def _with_args(name: str, args: Any, call_id: str, raw: str) -> ParsedToolCall:
    if isinstance(args, str):
        parsed = parse_arguments(args)
        if parsed is None:
            return ParsedToolCall(
                name=name,
                arguments=None,
                call_id=call_id,
                raw=args,
                error=f"Expected the arguments of {name} as a JSON object, got {args[:200]!r}",
            )
        args = parsed
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return ParsedToolCall(
            name=name,
            arguments=None,
            call_id=call_id,
            raw=raw,
            error=f"Expected the arguments of {name} as a JSON object, got {type(args).__name__}",
        )
    return ParsedToolCall(name=name, arguments=args, call_id=call_id, raw=raw)


def parse_arguments(text: str) -> dict[str, Any] | None:
    """Arguments from a JSON string; tolerates single quotes / Python literals. None if unreadable.

    Example:
        >>> parse_arguments('{"query": "x"}')
        {'query': 'x'}
        >>> parse_arguments("{'query': 'x'}")
        {'query': 'x'}
    """
    text = (text or "").strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    return value if isinstance(value, dict) else None


def _python_calls(text: str, known: Collection[str] | None) -> list[ParsedToolCall]:
    """``search(query="x", k=3)`` style calls, only for known tool names (else prose matches)."""
    out = []
    for m in _FUNC_RE.finditer(text):
        name, body = m.group(1), m.group(2)
        if known is None or name not in known:
            continue
        try:
            call = ast.parse(f"f({body})", mode="eval").body
            if not isinstance(call, ast.Call):
                continue
            args = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg}
            if call.args and not args:
                args = {"_positional": [ast.literal_eval(a) for a in call.args]}
            out.append(ParsedToolCall(name=name, arguments=args, raw=m.group(0).strip()))
        except (ValueError, SyntaxError, TypeError):
            out.append(
                ParsedToolCall(
                    name=name,
                    arguments=None,
                    raw=m.group(0).strip(),
                    error=f"Expected JSON arguments for {name}, got {body[:200]!r}",
                )
            )
    return out


def parse_tool_calls(text: str, known_tools: Collection[str] | None = None) -> list[ParsedToolCall]:
    """All tool calls written in ``text``, in order; never raises.

    A ``<tool_call>`` block whose JSON is broken yields a call with ``error`` set (the model
    clearly meant a call); free text with no call-shaped content yields ``[]``.

    Example:
        >>> [c.name for c in parse_tool_calls('<tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>')]
        ['search']
        >>> parse_tool_calls('{"name": "grep", "arguments": {"pattern": "abc"}}')[0].arguments
        {'pattern': 'abc'}
    """
    if not text or not text.strip():
        return []
    calls: list[ParsedToolCall] = []
    tagged = _TAG_RE.findall(text)
    if tagged:
        for block in tagged:
            found = [c for v, raw in _json_objects(block) for c in _from_value(v, raw)]
            if not found:
                literal = parse_arguments(block)  # a Python-literal dict: {'name': 'search', ...}
                found = _from_value(literal, block) if literal else []
            if found:
                calls.extend(found)
            else:
                name_m = re.search(r'"name"\s*:\s*"([^"]+)"', block)
                calls.append(
                    ParsedToolCall(
                        name=name_m.group(1) if name_m else "",
                        arguments=None,
                        raw=block[:2000],
                        error=f"Expected a JSON tool call inside <tool_call>, got {block[:200]!r}",
                    )
                )
        return calls
    for block in _FENCE_RE.findall(text) or [text]:
        calls.extend(c for v, raw in _json_objects(block) for c in _from_value(v, raw))
    if not calls:
        calls = _python_calls(text, known_tools)
    return calls


def calls_in_text(text: str) -> tuple[list[ParsedToolCall], str]:
    """The tool calls a model wrote as text (for servers without a tool parser, and small models), and the text left.

    The text left is ``""`` when calls were found: they travel as structured tool calls and must
    not be shown a second time as the assistant's words.

    Example:
        >>> calls, rest = calls_in_text('<tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>')
        >>> [c.name for c in calls], rest
        (['search'], '')
        >>> calls_in_text("Paris.")
        ([], 'Paris.')
    """
    # Every name a model may call a tool by (read from the registry at the call, so a tool
    # registered later is recognised too): what ``name(...)``-style text calls are matched against.
    calls = parse_tool_calls(text, known_tool_names())
    return calls, ("" if calls else text)


__all__ = ["calls_in_text", "parse_arguments", "parse_tool_calls"]
