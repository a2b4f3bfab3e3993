"""Model backends behind one protocol: OpenAI-compatible HTTP and in-process transformers."""

from sieve.agent.backends.base import ChatBackend, ChatResult, ParsedToolCall
from sieve.agent.backends.local import LocalBackend
from sieve.agent.backends.models import smollm2_path
from sieve.agent.backends.openai import OpenAIBackend
from sieve.agent.backends.parsing import parse_arguments, parse_tool_calls

__all__ = [
    "ChatBackend",
    "ChatResult",
    "LocalBackend",
    "OpenAIBackend",
    "ParsedToolCall",
    "parse_arguments",
    "parse_tool_calls",
    "smollm2_path",
]
