"""gpt-oss's harmony format, in and out, through OpenAI's ``openai-harmony`` library.

A gpt-oss turn is a run of harmony messages: reasoning on the ``analysis`` channel, tool calls on
``commentary`` addressed ``to=functions.<tool>``, the answer on ``final``. Three shapes reach Sieve:

* structured (vLLM with ``--tool-call-parser openai``): ``tool_calls`` and ``reasoning_content``
  fields, read by :class:`~sieve.agent.backends.openai.OpenAIBackend`;
* raw, special tokens kept (a completion endpoint asked not to skip them, a training rollout):
  tokenised with the harmony encoding and parsed by ``openai-harmony``'s own streaming parser;
* special tokens stripped (a server that decodes with ``skip_special_tokens``): the delimiters are
  gone, so no token-level parser can run; :func:`parse_stripped` reads the headers that are left
  (``analysis...assistantcommentary to=functions.search json{...}``) with a small regex.

:func:`render_harmony` goes the other way: Sieve's chat messages and tool specs as the token ids
of a harmony prompt, for a raw ``/completions`` endpoint. Loading the encoding needs the
``o200k_base`` ranks, found offline by :mod:`sieve.agent.backends.harmony_vocab`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from sieve.agent.backends.base import ParsedToolCall
from sieve.agent.backends.harmony_vocab import harmony_encoding
from sieve.agent.backends.parsing import calls_in_text, parse_arguments

NAMESPACE = "functions"
_SPECIAL = ("<|channel|>", "<|message|>", "<|start|>", "<|call|>", "<|end|>", "<|return|>")
# A header whose delimiters were stripped: at the start or after "assistant", an optional
# ``to=functions.x`` (before or after the channel), the channel, an optional ``json`` content type.
_STRIPPED = re.compile(
    r"(?:^\s*|assistant)(?:\s*to=(?P<pre>[\w.\-]+?))?"
    r"(?P<channel>analysis|commentary|final)"
    r"(?:\s*to=(?P<post>[\w.\-]+))?(?:\s*(?:<\|constrain\|>)?json(?=\s*[\[{]))?"
)
_STRIPPED_HINT = re.compile(r"to=functions\.|assistant(?:analysis|commentary|final)")


@dataclass
class Reply:
    """One model turn read from text: tool calls, the text for the user, and the reasoning."""

    calls: list[ParsedToolCall] = field(default_factory=list)
    text: str = ""
    reasoning: str = ""


def has_special_tokens(text: str) -> bool:
    """Whether ``text`` holds harmony's delimiters (a reply decoded with its special tokens)."""
    return any(tok in text for tok in _SPECIAL)


def is_harmony(text: str) -> bool:
    """Whether ``text`` is a harmony reply, raw or with its special tokens stripped.

    Example:
        >>> is_harmony('analysisNeed a search.assistantcommentary to=functions.search json{"query": "x"}')
        True
        >>> is_harmony("<tool_call>{}</tool_call>")
        False
    """
    if not text:
        return False
    if has_special_tokens(text) and ("<|channel|>" in text or "<|message|>" in text):
        return True
    return bool(_STRIPPED_HINT.search(text))


def _call(recipient: str, body: str) -> ParsedToolCall:
    name = recipient.removeprefix(f"{NAMESPACE}.")
    args = parse_arguments(body)
    if args is None:  # arguments followed by stray text: the first JSON object is the call
        decoder = json.JSONDecoder()
        start = body.find("{")
        try:
            value = decoder.raw_decode(body, start)[0] if start >= 0 else None
        except json.JSONDecodeError:
            value = None
        args = value if isinstance(value, dict) else None
    err = None if args is not None else f"Expected the arguments of {name} as a JSON object, got {body[:200]!r}"
    return ParsedToolCall(name=name, arguments=args, raw=body, error=err)


def _reply(messages: list[tuple[str, str | None, str]]) -> Reply:
    """A reply from ``(channel, recipient, text)`` triples, in order."""
    out = Reply()
    reasoning, said = [], []
    for channel, recipient, text in messages:
        if recipient and recipient != "assistant":
            out.calls.append(_call(recipient, text))
        elif channel == "analysis":
            reasoning.append(text.strip())
        else:  # final, or a commentary preamble meant for the user
            said.append(text.strip())
    out.reasoning = "\n".join(r for r in reasoning if r)
    out.text = "\n".join(s for s in said if s)
    return out


def parse_tokens(tokens: list[int]) -> Reply:
    """A completion's token ids (after ``<|start|>assistant``), read by ``openai-harmony``'s parser.

    The streaming parser is used so that a completion cut short (a server that swallowed the
    ``<|call|>`` stop token, or ran out of tokens) still yields its last message.
    """
    import openai_harmony as oh

    enc = harmony_encoding()
    parser = oh.StreamableParser(enc, role=oh.Role.ASSISTANT)
    try:
        for tok in tokens:
            parser.process(tok)
    except oh.HarmonyError:
        pass  # a malformed tail: keep what was read before it
    found = [
        (str(m.channel or ""), m.recipient, "".join(getattr(c, "text", "") for c in m.content)) for m in parser.messages
    ]
    if parser.current_content:
        found.append((str(parser.current_channel or ""), parser.current_recipient, parser.current_content))
    return _reply(found)


def parse_raw(text: str) -> Reply:
    """A harmony reply decoded with its special tokens (``<|channel|>analysis<|message|>...``)."""
    text = text.strip()
    text = text.removeprefix("<|start|>assistant")  # a completion may or may not repeat its own header
    tokens = harmony_encoding().encode(text, allowed_special="all")
    return parse_tokens(tokens)


def parse_stripped(text: str) -> Reply:
    """A harmony reply whose special tokens were stripped (``skip_special_tokens=True``).

    Example:
        >>> r = parse_stripped('analysisLook it up.assistantcommentary to=functions.search json{"query": "x"}')
        >>> r.reasoning, [(c.name, c.arguments) for c in r.calls]
        ('Look it up.', [('search', {'query': 'x'})])
    """
    heads = list(_STRIPPED.finditer(text))
    found = []
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        recipient = m.group("pre") or m.group("post")
        found.append((m.group("channel"), recipient, text[m.end() : end]))
    return _reply(found)


def read_reply(text: str) -> Reply:
    """Whatever a model wrote: harmony (raw or stripped) when it is, else the lenient text parser.

    Example:
        >>> read_reply('<tool_call>{"name": "grep", "arguments": {"pattern": "abc"}}</tool_call>').calls[0].name
        'grep'
    """
    if is_harmony(text):
        return parse_raw(text) if has_special_tokens(text) else parse_stripped(text)
    calls, rest = calls_in_text(text)
    return Reply(calls=calls, text=rest)


def _effort(value: str | None) -> Any:
    import openai_harmony as oh

    return {"low": oh.ReasoningEffort.LOW, "medium": oh.ReasoningEffort.MEDIUM, "high": oh.ReasoningEffort.HIGH}.get(
        value or "medium", oh.ReasoningEffort.MEDIUM
    )


def harmony_messages(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, *, reasoning_effort: str | None = None
) -> list[Any]:
    """Sieve's chat messages as ``openai_harmony`` messages: the system prompt becomes the developer
    message with the tools as ``functions``; assistant tool calls go ``to=functions.<tool>`` on
    ``commentary`` with their reasoning before them on ``analysis``; tool results come from
    ``functions.<tool>``."""
    import openai_harmony as oh

    out = [
        oh.Message.from_role_and_content(
            oh.Role.SYSTEM, oh.SystemContent.new().with_reasoning_effort(_effort(reasoning_effort))
        )
    ]
    instructions = "\n\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
    developer = oh.DeveloperContent.new().with_instructions(instructions)
    if tools:
        developer = developer.with_function_tools(
            [
                oh.ToolDescription.new(
                    t["function"]["name"],
                    t["function"].get("description", ""),
                    parameters=t["function"].get("parameters"),
                )
                for t in tools
            ]
        )
    out.append(oh.Message.from_role_and_content(oh.Role.DEVELOPER, developer))
    for m in messages:
        role, content = m.get("role"), str(m.get("content") or "")
        if role == "user":
            out.append(oh.Message.from_role_and_content(oh.Role.USER, content))
        elif role == "assistant":
            reasoning = m.get("reasoning_content") or m.get("reasoning")
            if reasoning:
                out.append(oh.Message.from_role_and_content(oh.Role.ASSISTANT, str(reasoning)).with_channel("analysis"))
            calls = m.get("tool_calls") or []
            if content:
                channel = "commentary" if calls else "final"
                out.append(oh.Message.from_role_and_content(oh.Role.ASSISTANT, content).with_channel(channel))
            for c in calls:
                fn = c.get("function") or {}
                args = fn.get("arguments")
                body = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
                out.append(
                    oh.Message.from_role_and_content(oh.Role.ASSISTANT, body)
                    .with_channel("commentary")
                    .with_recipient(f"{NAMESPACE}.{fn.get('name', '')}")
                    .with_content_type("<|constrain|>json")
                )
        elif role == "tool":
            author = oh.Author.new(oh.Role.TOOL, f"{NAMESPACE}.{m.get('name') or 'tool'}")
            out.append(
                oh.Message.from_author_and_content(author, content)
                .with_channel("commentary")
                .with_recipient("assistant")
            )
    return out


def render_harmony(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, *, reasoning_effort: str | None = None
) -> list[int]:
    """The token ids of a harmony prompt for ``messages`` and ``tools``, ending ``<|start|>assistant``
    (what a raw completion endpoint continues)."""
    import openai_harmony as oh

    conv = oh.Conversation.from_messages(harmony_messages(messages, tools, reasoning_effort=reasoning_effort))
    return list(harmony_encoding().render_conversation_for_completion(conv, oh.Role.ASSISTANT))


def stop_token_ids() -> list[int]:
    """The tokens that end an assistant's turn (``<|return|>``, ``<|call|>``)."""
    return list(harmony_encoding().stop_tokens_for_assistant_actions())


__all__ = [
    "NAMESPACE",
    "Reply",
    "harmony_messages",
    "has_special_tokens",
    "is_harmony",
    "parse_raw",
    "parse_stripped",
    "parse_tokens",
    "read_reply",
    "render_harmony",
    "stop_token_ids",
]
