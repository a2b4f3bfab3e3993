"""The model-backend protocol: one ``chat`` call with tools, one result type."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass
class ParsedToolCall:
    """A tool call read from a model's output, well-formed or not.

    ``arguments`` is None when the arguments could not be parsed; ``error`` then says why, and
    ``raw`` keeps what the model wrote so the harness can quote it back.
    """

    name: str
    arguments: dict[str, Any] | None
    call_id: str = ""
    raw: str = ""
    error: str | None = None

    def to_openai(self) -> dict[str, Any]:
        """The ``tool_calls`` entry of an assistant message."""
        import json

        args = json.dumps(self.arguments, ensure_ascii=False) if self.arguments is not None else self.raw
        return {"id": self.call_id, "type": "function", "function": {"name": self.name or "invalid", "arguments": args}}


@dataclass
class ChatResult:
    """What the model wrote: free text, tool calls, and the token counts of the request."""

    text: str
    tool_calls: list[ParsedToolCall] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    raw: str = ""  # the completion exactly as generated (text + tool-call markup), for RL
    finish_reason: str = ""
    # The model's reasoning this turn (``reasoning_content`` / ``reasoning`` of the reply, or harmony's
    # analysis channel), and the field name the server used for it: it is sent back under that name.
    reasoning: str = ""
    reasoning_field: str = "reasoning_content"


@runtime_checkable
class ChatBackend(Protocol):
    """A chat model that can call tools (OpenAI format).

    A backend that can abort a call in flight also accepts ``cancel=`` (a
    :class:`~sieve.agent.cancel.CancelToken`) and raises :class:`~sieve.agent.cancel.Cancelled`
    when it fires; the policy passes it only for cancellable episodes.
    """

    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        tool_choice: str = "auto",
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> ChatResult: ...


__all__ = ["ChatBackend", "ChatResult", "ParsedToolCall"]
