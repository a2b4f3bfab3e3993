"""Model backends behind one protocol: OpenAI-compatible HTTP and in-process transformers."""

from agent.backends.base import ChatBackend, ChatResult, ParsedToolCall
from agent.backends.local import LocalBackend
from agent.backends.models import smollm2_path
from agent.backends.openai import OpenAIBackend
from agent.backends.parsing import parse_arguments, parse_tool_calls

__all__ = ["ChatBackend", "ChatResult", "LocalBackend", "OpenAIBackend", "ParsedToolCall", "parse_arguments",
           "parse_tool_calls", "smollm2_path"]
