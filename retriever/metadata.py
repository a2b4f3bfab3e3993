"""Document metadata: what a Chroma collection can hold faithfully, and a clear error for the rest.

Chroma (1.5) stores a metadata value as a string, a 64-bit integer, a finite float, a bool, or a
non-empty list of one of those types (filterable with ``{"key": {"$contains": value}}``). Sieve
stores exactly those, unchanged, and rejects anything else with a message naming the key: a
nested object, an empty or mixed-type list, NaN, an integer past 64 bits. Nothing is ever
stringified behind the caller's back. ``None`` means "no value" and is left out.

Example:
    >>> validate_metadata({"year": 2020, "tags": ["a", "b"], "note": None})
    {'year': 2020, 'tags': ['a', 'b']}
"""

from __future__ import annotations

import math
from typing import Any

from sieve.core.errors import InvalidInput

# Keys Sieve writes on every chunk; a document's own metadata may not shadow them.
RESERVED_KEYS = (
    "chunk_id",
    "doc_id",
    "title",
    "source",
    "position",
    "char_start",
    "char_end",
    "n_tokens",
    "doc_hash",
    "n_chunks",
    "heading_path",
)
# The longest string value the HTTP API stores in metadata; a filter's strings share the bound
# (sieve.retriever.filters), so every stored value can be matched exactly.
MAX_STRING_CHARS = 10_000
_INT64 = (-(2**63), 2**63 - 1)
_SCALARS = (str, int, float, bool)


def _scalar_problem(value: Any) -> str | None:
    """Why ``value`` is not a storable scalar, or None when it is."""
    if isinstance(value, bool) or isinstance(value, str):
        return None
    if isinstance(value, int):
        return None if _INT64[0] <= value <= _INT64[1] else f"an integer outside 64 bits ({value})"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"a non-finite float ({value})"
    return f"a {type(value).__name__}"


def _kind(value: Any) -> type:
    return bool if isinstance(value, bool) else type(value)


def _value_problem(value: Any) -> str | None:
    if isinstance(value, list):
        if not value:
            return "an empty list"
        for item in value:
            problem = _scalar_problem(item)
            if problem is not None:
                return f"a list holding {problem}"
        kinds = sorted({_kind(v).__name__ for v in value})
        if len(kinds) > 1:
            return f"a list mixing {' and '.join(kinds)}"
        return None
    return _scalar_problem(value)


def validate_metadata(metadata: Any) -> dict[str, Any]:
    """Return ``metadata`` without ``None`` values if Chroma can hold every value as given.

    Raises:
        InvalidInput: not an object, a reserved or malformed key, or a value of another type;
            the message names the key, what it got and what is valid.
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidInput(f"Expected metadata to be an object, got {type(metadata).__name__}")
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        if not isinstance(key, str) or not key or key[0] in "$#":
            raise InvalidInput(
                f"Expected metadata keys to be non-empty strings not starting with '$' or '#', got {key!r}"
            )
        if key in RESERVED_KEYS:
            raise InvalidInput(
                f"Expected metadata keys other than Sieve's own {list(RESERVED_KEYS)}, got {key!r}; "
                f"use the record's top-level field or rename the key"
            )
        if value is None:
            continue
        problem = _value_problem(value)
        if problem is not None:
            raise InvalidInput(
                f"Expected metadata {key!r} to be a string, integer, float, bool or a non-empty "
                f"list of one of those types, got {problem}"
            )
        out[key] = list(value) if isinstance(value, list) else value
    return out


__all__ = ["MAX_STRING_CHARS", "RESERVED_KEYS", "validate_metadata"]
