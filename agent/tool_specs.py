"""The agent's tools by name: one registry (:data:`TOOLS`) of :class:`AgentTool` objects, and argument validation.

An agent tool is one object: its JSON schema (OpenAI tool-calling format), its line in the system
prompt, its ``prepare``/``commit`` behaviour, the names models use for it and its parameters, and
whether it may still run past the hard context limit. The tool list the model is sent, the
prompt's tool list, the parser's known names, the budget's exemptions and :class:`Toolbox`'s
dispatch all read :data:`TOOLS`, so adding a tool is one :func:`register_tool` call.

Validation is deliberately small and forgiving where a model's intent is unambiguous (an integer
written as ``"5"``, ``chunk_ids`` for ``ids``, one id for a list) and strict otherwise, with
errors worded "Expected X, got Y" so a model can correct itself on the next turn.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sieve.agent import builtin_tools as _b
from sieve.agent.config import AgentConfig

if TYPE_CHECKING:
    from sieve.agent.builtin_tools import PreparedCall, ToolHost, ToolOutcome


@dataclass(frozen=True)
class AgentTool:
    """One tool: schema, prompt line, behaviour, aliases, and whether it runs past the hard budget limit.

    Args:
        name: what the model calls it.
        description: the schema's description (what the model is told the tool does).
        parameters: JSON schema of the arguments (``type: object``, ``properties``, ``required``).
        prompt: the tool's line in the system prompt's tool list, e.g. ``"grep(pattern): regex ..."``.
        prepare: ``(toolbox, call)``: concurrent work (retrieval); reads the context only.
        commit: ``(toolbox, call, outcome, turn)``: sequential; shows chunks, writes ``outcome.content``.
        arg_aliases: other names models use for a parameter (``{"q": "query"}``).
        call_aliases: other names models use for the tool (``("search_corpus",)``).
        over_budget: still accepted past the hard context limit (freeing context, concluding).
        searches: a query over the corpus: counted as a search by the trace, the eval's ``searches``
            column and the training penalty against a single search (:func:`search_tools`).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    prompt: str
    prepare: Callable[[ToolHost, PreparedCall], None]
    commit: Callable[[ToolHost, PreparedCall, ToolOutcome, int], None]
    arg_aliases: Mapping[str, str] = field(default_factory=dict)
    call_aliases: tuple[str, ...] = ()
    over_budget: bool = False
    searches: bool = False

    def spec(self, config: AgentConfig | None = None) -> dict[str, Any]:
        """The tool in OpenAI format: ``{"type": "function", "function": {name, description, parameters}}``,
        its ``{field}`` placeholders filled from ``config`` (default: ``AgentConfig()``)."""
        values = _config_values(config)
        function = {"name": self.name, "description": self.description, "parameters": self.parameters}
        return {"type": "function", "function": _fill(function, values)}


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _config_values(config: AgentConfig | None) -> dict[str, Any]:
    config = config or AgentConfig()
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}


def _fill(value: Any, values: Mapping[str, Any]) -> Any:
    """``value`` with every ``{name}`` of a config field replaced by its value, in strings at any depth.

    The numbers a model is told ("at most {grep_k} chunks") are the configured ones; other braces stay.
    """
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), value)
    if isinstance(value, dict):
        return {k: _fill(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, values) for v in value]
    return value


TOOLS: dict[str, AgentTool] = {}


def register_tool(tool: AgentTool) -> AgentTool:
    """Add ``tool`` to :data:`TOOLS` (replacing one of that name) and return it."""
    TOOLS[tool.name] = tool
    return tool


register_tool(
    AgentTool(
        name="search",
        description=(
            "Hybrid (keyword + semantic) search of the corpus. Returns new chunks only: chunks already "
            "shown in this episode are never repeated. Each chunk is shown with a short handle like c17."
        ),
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for; name entities explicitly."},
                "k": {
                    "type": "integer",
                    "description": "Most chunks to show (default and maximum {search_k}; more is capped).",
                },
                "filters": {
                    "type": "object",
                    "description": "Optional metadata filter on chunk fields; omit it "
                    "unless the question names a source.",
                },
            },
            "required": ["query"],
        },
        prompt="search(query): hybrid keyword + semantic search; only chunks you have not seen are returned.",
        prepare=_b.prepare_search,
        commit=_b.commit_search,
        arg_aliases={"q": "query", "text": "query", "top_k": "k", "filter": "filters", "where": "filters"},
        call_aliases=("search_corpus",),
        searches=True,
    )
)
register_tool(
    AgentTool(
        name="grep",
        description="Regex search over chunk text (Rust regex syntax, no look-around, at least 3 characters).",
        parameters={
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression, e.g. 'Lindbergh|Spirit of St'."},
                "k": {
                    "type": "integer",
                    "description": "Most chunks to show (default and maximum {grep_k}; more is capped).",
                },
            },
            "required": ["pattern"],
        },
        prompt="grep(pattern): regex over chunk text, up to {grep_k} chunks.",
        prepare=_b.prepare_grep,
        commit=_b.commit_grep,
        arg_aliases={"regex": "pattern", "query": "pattern", "top_k": "k"},
        call_aliases=("grep_corpus",),
        searches=True,
    )
)
register_tool(
    AgentTool(
        name="read",
        description=(
            "Read around a chunk (its neighbours) or a whole document. Pass a handle (c17), a chunk id "
            "or a document id; chunks already shown are left out."
        ),
        parameters={
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "Handle, chunk id or document id."},
                "window": {
                    "type": "integer",
                    "description": "Neighbours each side of a chunk (default {read_window}).",
                },
            },
            "required": ["id"],
        },
        prompt="read(id, window): neighbouring chunks of a chunk, or a whole document.",
        prepare=_b.prepare_read,
        commit=_b.commit_read,
        arg_aliases={"chunk_id": "id", "doc_id": "id", "chunk_or_doc_id": "id", "ref": "id", "handle": "id"},
        call_aliases=("read_document",),
    )
)
register_tool(
    AgentTool(
        name="prune",
        description=(
            "Remove chunks from your context to free budget. Their text leaves the context; they are "
            "never shown again. Prune chunks that do not help answer the question."
        ),
        parameters={
            "type": "object",
            "properties": {
                "ids": {"type": "array", "items": {"type": "string"}, "description": 'Handles to prune, e.g. ["c3"].'},
                "reason": {"type": "string", "description": "Optional: why."},
            },
            "required": ["ids"],
        },
        prompt="prune(ids): drop chunks that do not help from your context to free budget.",
        prepare=_b.prepare_prune,
        commit=_b.commit_prune,
        arg_aliases={"chunk_ids": "ids", "handles": "ids", "id": "ids"},
        call_aliases=("prune_chunks",),
        over_budget=True,
    )
)
register_tool(
    AgentTool(
        name="finish",
        description="End the search and return the evidence: the handles of the chunks that answer the question, best first.",
        parameters={
            "type": "object",
            "properties": {
                "ids": {"type": "array", "items": {"type": "string"}, "description": "Handles, most useful first."},
                "answer": {"type": "string", "description": "Optional short answer to the question."},
            },
            "required": ["ids"],
        },
        prompt="finish(ids, answer): return the evidence chunks, best first, and end.",
        prepare=_b.prepare_finish,
        commit=_b.commit_finish,
        arg_aliases={"chunk_ids": "ids", "handles": "ids", "evidence": "ids", "id": "ids"},
        call_aliases=("answer", "final_answer"),
        over_budget=True,
    )
)

# The built-in tools, in the order the model is shown them (a registered tool joins at the end).
TOOL_NAMES = tuple(TOOLS)


def tool_names() -> tuple[str, ...]:
    """Every registered tool's name, in registry order."""
    return tuple(TOOLS)


def tool_specs(names: tuple[str, ...] | None = None, config: AgentConfig | None = None) -> list[dict[str, Any]]:
    """The tools in OpenAI format: ``[{"type": "function", "function": {name, description, parameters}}]``
    (every registered tool, or those named), described with ``config``'s numbers."""
    return [TOOLS[n].spec(config) for n in (tool_names() if names is None else names)]


def call_aliases() -> dict[str, str]:
    """Other names models call the tools by (Context-1's own tool names included) -> the tool's name."""
    return {alias: t.name for t in TOOLS.values() for alias in t.call_aliases}


def known_tool_names() -> frozenset[str]:
    """Every name a tool call may use: the tools' own and their aliases (for the text parsers)."""
    return frozenset(TOOLS) | frozenset(call_aliases())


def search_tools() -> frozenset[str]:
    """The tools that query the corpus (``searches=True``): what every count of an episode's searches counts."""
    return frozenset(t.name for t in TOOLS.values() if t.searches)


def over_budget_tools() -> tuple[str, ...]:
    """The tools still accepted past the hard context limit, in registry order."""
    return tuple(t.name for t in TOOLS.values() if t.over_budget)


def prompt_tool_list(config: AgentConfig | None = None) -> str:
    """The system prompt's tool list: one ``- name(args): what it does`` line per registered tool."""
    values = _config_values(config)
    return "\n".join(f"- {_fill(t.prompt, values)}" for t in TOOLS.values())


def canonical_tool(name: str) -> str:
    """The registered name a model's tool name stands for (an alias resolved, harmony's ``functions.``
    namespace dropped; unknown names unchanged).

    Example:
        >>> canonical_tool("functions.search"), canonical_tool("search_corpus")
        ('search', 'search')
    """
    name = (name or "").strip().removeprefix("functions.")
    return call_aliases().get(name, name)


def _coerce(tool: str, key: str, value: Any, schema: dict[str, Any]) -> Any:
    kind = schema["type"]
    if kind == "string":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        if not isinstance(value, str):
            raise ValueError(f"Expected {tool}.{key} to be a string, got {type(value).__name__}")
        return value
    if kind == "integer":
        if isinstance(value, bool):
            raise ValueError(f"Expected {tool}.{key} to be an integer, got {value!r}")
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value.strip())
        if not isinstance(value, int):
            raise ValueError(f"Expected {tool}.{key} to be an integer, got {value!r}")
        return value
    if kind == "array":
        if isinstance(value, str):
            value = [v.strip() for v in value.replace(",", " ").split() if v.strip()]
        if not isinstance(value, list):
            raise ValueError(f"Expected {tool}.{key} to be a list of strings, got {type(value).__name__}")
        return [str(v) for v in value]
    if kind == "object":
        if not isinstance(value, dict):
            raise ValueError(f"Expected {tool}.{key} to be a JSON object, got {type(value).__name__}")
        return value
    return value


def validate_arguments(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Arguments checked against ``tool``'s schema, aliases resolved; raises ``ValueError``.

    Example:
        >>> validate_arguments("grep", {"regex": "abc", "k": "3"})
        {'pattern': 'abc', 'k': 3}
    """
    if tool not in TOOLS:
        raise ValueError(f"Expected a tool in {list(TOOLS)}, got {tool!r}")
    params = TOOLS[tool].parameters
    props: dict[str, Any] = params["properties"]
    args = dict(args)
    if "_positional" in args:  # search("x") written Python-style
        pos = args.pop("_positional")
        for key, value in zip(params["required"], pos):
            args.setdefault(key, value)
    clean: dict[str, Any] = {}
    for key, value in args.items():
        key = TOOLS[tool].arg_aliases.get(key, key)
        if key not in props:
            continue  # extra keys are ignored: small models add them often, and they change nothing
        if value is None:
            continue
        clean[key] = _coerce(tool, key, value, props[key])
    missing = [r for r in params["required"] if r not in clean]
    if missing:
        raise ValueError(f"Expected argument(s) {missing} for {tool}, got {sorted(args)}")
    return clean


__all__ = [
    "TOOLS",
    "TOOL_NAMES",
    "AgentTool",
    "call_aliases",
    "canonical_tool",
    "known_tool_names",
    "over_budget_tools",
    "prompt_tool_list",
    "register_tool",
    "tool_names",
    "tool_specs",
    "validate_arguments",
]
