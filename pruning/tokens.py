"""Token counting behind one protocol, so the budget means the same thing for every policy.

LLM policies count with the model's own tokenizer (:class:`HFTokenCounter`); the no-LLM
heuristic has no tokenizer of its own and uses :class:`ApproxTokenCounter` (about four
characters a token for English), which is cheap and close enough for a budget.
"""

from __future__ import annotations

import json
import math
from threading import Lock
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from sieve.core.errors import InvalidInput

if TYPE_CHECKING:
    from collections.abc import Sequence

# Role markers and separators a chat template adds around each message (ChatML: ~4 tokens).
MESSAGE_OVERHEAD = 4


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a piece of text."""

    def count(self, text: str) -> int: ...


class ApproxTokenCounter:
    """``ceil(len(text) / chars_per_token)``.

    Example:
        >>> ApproxTokenCounter().count("abcdefgh")
        2
    """

    def __init__(self, chars_per_token: float = 4.0) -> None:
        if chars_per_token <= 0:
            raise InvalidInput(f"Expected chars_per_token > 0, got {chars_per_token}")
        self.chars_per_token = chars_per_token

    def count(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token) if text else 0


class HFTokenCounter:
    """Exact counts with a Hugging Face tokenizer (no special tokens).

    Fast tokenizers raise "Already borrowed" when two threads encode at once, and tool calls
    of one turn run concurrently, so encoding is serialised by a lock.
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self._lock = Lock()

    def count(self, text: str) -> int:
        if not text:
            return 0
        with self._lock:
            return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])


def count_message(counter: TokenCounter, message: dict[str, Any]) -> int:
    """Tokens of one chat message as a template would render it (content, tool calls, overhead)."""
    n = MESSAGE_OVERHEAD + counter.count(str(message.get("content") or ""))
    for call in message.get("tool_calls") or ():
        fn = call.get("function", {})
        args = fn.get("arguments", "")
        n += counter.count(str(fn.get("name", ""))) + counter.count(args if isinstance(args, str) else json.dumps(args))
    return n


def count_messages(counter: TokenCounter, messages: Sequence[dict[str, Any]]) -> int:
    return sum(count_message(counter, m) for m in messages)


__all__ = [
    "MESSAGE_OVERHEAD",
    "ApproxTokenCounter",
    "HFTokenCounter",
    "TokenCounter",
    "count_message",
    "count_messages",
]
