"""Metadata filters (Chroma ``where``): bounded before any store call, by one set of limits.

Why bounds at all: Chroma turns a ``$and``/``$or`` of N conditions into a chain of N nested SQL
expressions, and its Rust layer walks that chain recursively. Measured on chromadb 1.5.9:

* 999 to ~8,000 conditions: SQLite refuses the query ("Expression tree is too large (maximum
  depth 1000)");
* 9,000 or more: the Rust walk overflows the thread's stack and the *process* dies with SIGSEGV
  (no Python exception, no log line: one POST ended ``sieve serve``);
* an ``$in`` of 40,000 values: "too many SQL variables" (SQLite binds one variable per value,
  at most 32,766 per statement);
* ``$and`` nested ~100 deep: "Invalid where clause" (the Rust side's JSON recursion limit, 128),
  and ~1,000 deep a ``RecursionError`` in Chroma's Python validation.

So every filter is checked here first, without recursion (an explicit stack, stopping at the
first bound passed, so a 20,000-condition filter costs 100 steps), and each bound sits far below
the store's own failure: :data:`FILTER_LIMITS` is the one statement of the limits; the HTTP
schemas, the OpenAPI descriptions, ``docs/http.md`` and the store read them from here.
What the walk does not judge (an unknown operator, a type mismatch) is left to Chroma, whose
refusal becomes :class:`~sieve.core.errors.InvalidInput` in the store.

Example:
    >>> validate_where({"$and": [{"year": {"$gte": 2000}}, {"country": {"$in": ["France", "Italy"]}}]})["$and"][0]
    {'year': {'$gte': 2000}}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sieve.core.errors import InvalidInput
from sieve.retriever.metadata import MAX_STRING_CHARS

_LOGICAL = ("$and", "$or")


@dataclass(frozen=True)
class FilterLimits:
    """The largest filter Sieve passes to its store.

    Args:
        max_conditions: field conditions (``{"key": value}`` or ``{"key": {"$op": value}}``) in the
            whole filter. 100 is ten times what a hand-written or model-written filter holds, and
            a tenth of SQLite's expression depth of 1,000 (a crash lies past ~8,000).
        max_depth: nesting of ``$and``/``$or`` (a flat ``{"$and": [...]}`` is depth 1). 8 allows any
            boolean formula a person writes, and stays far below the ~100 where Chroma refuses.
        max_list_values: values in one ``$in``/``$nin`` list; 1,000 matches the longest metadata
            list a document may carry.
        max_total_values: list values in the whole filter, a third of SQLite's 32,766 variables
            per statement (Chroma binds one per value, plus its own).
        max_value_chars: characters of one string value: the longest metadata string stored, so
            every stored value can be matched exactly.
    """

    max_conditions: int = 100
    max_depth: int = 8
    max_list_values: int = 1000
    max_total_values: int = 10_000
    max_value_chars: int = MAX_STRING_CHARS

    def describe(self) -> str:
        """The limits in one sentence (OpenAPI descriptions, error messages).

        Example:
            >>> FilterLimits().describe().startswith("at most 100 conditions")
            True
        """
        return (
            f"at most {self.max_conditions} conditions, $and/$or nested at most {self.max_depth} deep, "
            f"{self.max_list_values} values per $in/$nin list and {self.max_total_values} in all, "
            f"string values of at most {self.max_value_chars} characters"
        )


FILTER_LIMITS = FilterLimits()


class _Walk:
    """Counts of one filter's walk; raises at the first bound passed."""

    def __init__(self, limits: FilterLimits) -> None:
        self.limits = limits
        self.conditions = 0
        self.values = 0

    def fail(self, what: str) -> InvalidInput:
        return InvalidInput(f"Expected a metadata filter within Sieve's limits ({self.limits.describe()}), got {what}")

    def condition(self, key: str, value: Any) -> None:
        self.conditions += 1
        if self.conditions > self.limits.max_conditions:
            raise self.fail(f"more than {self.limits.max_conditions} conditions")
        if isinstance(value, dict):
            for op, operand in value.items():
                self.operand(f"{key}.{op}", operand)
        else:
            self.operand(key, value)

    def operand(self, where: str, value: Any) -> None:
        if isinstance(value, list):
            if len(value) > self.limits.max_list_values:
                raise self.fail(f"{len(value)} values in the list of {where!r}")
            self.values += len(value)
            if self.values > self.limits.max_total_values:
                raise self.fail(f"more than {self.limits.max_total_values} list values in all")
            for item in value:
                self.scalar(where, item)
        else:
            self.scalar(where, value)

    def scalar(self, where: str, value: Any) -> None:
        if isinstance(value, (dict, list)):
            raise self.fail(f"a nested {type(value).__name__} as the value of {where!r} (a scalar or a list of them)")
        if isinstance(value, str) and len(value) > self.limits.max_value_chars:
            raise self.fail(f"a string of {len(value)} characters as the value of {where!r}")


def validate_where(where: Any, limits: FilterLimits = FILTER_LIMITS) -> dict[str, Any]:
    """Return ``where`` if it is a filter object within ``limits``, else raise.

    Raises:
        InvalidInput: not an object, ``$and``/``$or`` not holding a list of objects, or a bound of
            ``limits`` passed; the message names the bound and every limit.
    """
    walk = _Walk(limits)
    stack: list[tuple[Any, int]] = [(where, 0)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, dict):
            raise InvalidInput(f"Expected a metadata filter object, got {type(node).__name__}: {str(node)[:80]!r}")
        for key, value in node.items():
            if key not in _LOGICAL:
                walk.condition(str(key), value)
                continue
            if depth + 1 > limits.max_depth:
                raise walk.fail(f"$and/$or nested more than {limits.max_depth} deep")
            if not isinstance(value, list):
                raise InvalidInput(f"Expected a list of filter objects under {key!r}, got {type(value).__name__}")
            if len(value) > limits.max_conditions:
                raise walk.fail(f"{len(value)} clauses under one {key!r}")
            stack.extend((item, depth + 1) for item in value)
    return where  # type: ignore[no-any-return]


__all__ = ["FILTER_LIMITS", "FilterLimits", "validate_where"]
