"""JSON schemas of the agent's tools, in the OpenAI tool-calling format, and their validation.

Validation is deliberately small and forgiving where a model's intent is unambiguous (an integer
written as ``"5"``, ``chunk_ids`` for ``ids``, one id for a list) and strict otherwise, with
errors worded "Expected X, got Y" so a model can correct itself on the next turn.
"""

from __future__ import annotations

from typing import Any

TOOL_NAMES = ("search", "grep", "read", "prune", "finish")

_SPECS: dict[str, dict[str, Any]] = {
    "search": {
        "description": ("Hybrid (keyword + semantic) search of the corpus. Returns new chunks only: chunks already "
                        "shown in this episode are never repeated. Each chunk is shown with a short handle like c17."),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for; name entities explicitly."},
                "k": {"type": "integer", "description": "Most chunks to show (default and maximum 10; more is capped)."},
                "filters": {"type": "object", "description": "Optional metadata filter on chunk fields; omit it "
                                                             "unless the question names a source."},
            },
            "required": ["query"],
        },
    },
    "grep": {
        "description": "Regex search over chunk text (Rust regex syntax, no look-around, at least 3 characters).",
        "parameters": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression, e.g. 'Lindbergh|Spirit of St'."},
                "k": {"type": "integer", "description": "Most chunks to show (default and maximum 5; more is capped)."},
            },
            "required": ["pattern"],
        },
    },
    "read": {
        "description": ("Read around a chunk (its neighbours) or a whole document. Pass a handle (c17), a chunk id "
                        "or a document id; chunks already shown are left out."),
        "parameters": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": "Handle, chunk id or document id."},
                "window": {"type": "integer", "description": "Neighbours each side of a chunk (default 1)."},
            },
            "required": ["id"],
        },
    },
    "prune": {
        "description": ("Remove chunks from your context to free budget. Their text leaves the context; they are "
                        "never shown again. Prune chunks that do not help answer the question."),
        "parameters": {
            "type": "object",
            "properties": {
                "ids": {"type": "array", "items": {"type": "string"}, "description": "Handles to prune, e.g. [\"c3\"]."},
                "reason": {"type": "string", "description": "Optional: why."},
            },
            "required": ["ids"],
        },
    },
    "finish": {
        "description": "End the search and return the evidence: the handles of the chunks that answer the question, best first.",
        "parameters": {
            "type": "object",
            "properties": {
                "ids": {"type": "array", "items": {"type": "string"}, "description": "Handles, most useful first."},
                "answer": {"type": "string", "description": "Optional short answer to the question."},
            },
            "required": ["ids"],
        },
    },
}

# Names models commonly use for a parameter (Context-1's own tool names included).
_ALIASES = {
    "search": {"q": "query", "text": "query", "top_k": "k", "filter": "filters", "where": "filters"},
    "grep": {"regex": "pattern", "query": "pattern", "top_k": "k"},
    "read": {"chunk_id": "id", "doc_id": "id", "chunk_or_doc_id": "id", "ref": "id", "handle": "id"},
    "prune": {"chunk_ids": "ids", "handles": "ids", "id": "ids"},
    "finish": {"chunk_ids": "ids", "handles": "ids", "evidence": "ids", "id": "ids"},
}
TOOL_ALIASES = {"search_corpus": "search", "grep_corpus": "grep", "read_document": "read",
                "prune_chunks": "prune", "answer": "finish", "final_answer": "finish"}


def tool_specs(names: tuple[str, ...] = TOOL_NAMES) -> list[dict[str, Any]]:
    """The tools in OpenAI format: ``[{"type": "function", "function": {name, description, parameters}}]``."""
    return [{"type": "function", "function": {"name": n, **_SPECS[n]}} for n in names]


def canonical_tool(name: str) -> str:
    name = (name or "").strip()
    return TOOL_ALIASES.get(name, name)


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
    if tool not in _SPECS:
        raise ValueError(f"Expected a tool in {list(TOOL_NAMES)}, got {tool!r}")
    params = _SPECS[tool]["parameters"]
    props: dict[str, Any] = params["properties"]
    args = dict(args)
    if "_positional" in args:  # search("x") written Python-style
        pos = args.pop("_positional")
        for key, value in zip(params["required"], pos):
            args.setdefault(key, value)
    clean: dict[str, Any] = {}
    for key, value in args.items():
        key = _ALIASES.get(tool, {}).get(key, key)
        if key not in props:
            continue  # extra keys are ignored: small models add them often, and they change nothing
        if value is None:
            continue
        clean[key] = _coerce(tool, key, value, props[key])
    missing = [r for r in params["required"] if r not in clean]
    if missing:
        raise ValueError(f"Expected argument(s) {missing} for {tool}, got {sorted(args)}")
    return clean


__all__ = ["TOOL_ALIASES", "TOOL_NAMES", "canonical_tool", "tool_specs", "validate_arguments"]
