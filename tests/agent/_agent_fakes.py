"""Agent test helpers. ``ScriptedBackend`` is a FAKE chat model: it replays scripted turns.

It stands in for an LLM in unit tests of the loop (which must behave the same whatever a model
writes); the real models are exercised in ``test_local_backend.py`` and ``test_openai_backend.py``.
"""

from __future__ import annotations

import json
from typing import Any
from collections.abc import Callable


from sieve.agent.backends.base import ChatResult, ParsedToolCall
from sieve.core.errors import BackendError


def call(name: str, **arguments: Any) -> ParsedToolCall:
    return ParsedToolCall(name=name, arguments=arguments)


def turn(*calls: ParsedToolCall, text: str = "") -> ChatResult:
    return ChatResult(text=text, tool_calls=list(calls), prompt_tokens=0, completion_tokens=5)


def text_turn(text: str) -> ChatResult:
    """A turn whose tool calls (if any) are written as text, for the lenient parser."""
    return ChatResult(text=text, tool_calls=[], completion_tokens=len(text) // 4)


class ScriptedBackend:
    """FAKE model (scripted): returns the given turns in order; a callable entry sees the messages.

    After the script runs out it keeps calling ``finish`` with nothing, so loops always end.
    Records every request (messages, tools) for assertions.
    """

    def __init__(self, script: list[ChatResult | Callable[[list[dict]], ChatResult] | Exception]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []

    def chat(self, messages, tools, *, tool_choice="auto", max_tokens=512, temperature=0.0) -> ChatResult:
        self.requests.append({"messages": json.loads(json.dumps(messages)), "tools": tools, "temperature": temperature})
        if not self.script:
            return turn(call("finish", ids=[]))
        item = self.script.pop(0)
        if isinstance(item, Exception):
            raise item
        return item(messages) if callable(item) else item


class AlwaysSearch:
    """FAKE model (scripted): searches a new query every turn, never finishes."""

    def __init__(self) -> None:
        self.n = 0

    def chat(self, messages, tools, **kw) -> ChatResult:
        self.n += 1
        return turn(call("search", query=f"city population river {self.n}", k=1))


class TimeoutBackend:
    """FAKE model: every request fails the way OpenAIBackend fails after its retries."""

    def chat(self, messages, tools, **kw) -> ChatResult:
        raise BackendError("Expected a reply from http://fake within 0.1s, got a timeout after 3 attempts")


__all__ = ["AlwaysSearch", "ScriptedBackend", "TimeoutBackend", "call", "text_turn", "turn"]
