"""Model backends behind one protocol: OpenAI-compatible HTTP and in-process transformers."""

from agent.backends.base import ChatBackend, ChatResult, ParsedToolCall
from agent.backends.parsing import parse_arguments, parse_tool_calls

__all__ = ["ChatBackend", "ChatResult", "ParsedToolCall", "parse_arguments", "parse_tool_calls"]
