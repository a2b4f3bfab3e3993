"""A pydantic string type whose allowed values are read from a registry when used, not when imported.

``Literal["a", "b"]`` freezes a registry's names at import time; :func:`one_of` checks the
registry's names at validation time and lists them as the JSON schema's ``enum`` when the schema
is generated, with the same error (``literal_error``, "Input should be 'a' or 'b'") a
``Literal`` gives. So a policy or retrieval mode registered later is accepted and documented.

Example:
    >>> from pydantic import TypeAdapter
    >>> names = {"a": 1, "b": 2}
    >>> TypeAdapter(one_of(lambda: names)).validate_python("b")
    'b'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import PydanticCustomError, core_schema


def _expected(names: list[str]) -> str:
    """Pydantic's own wording for a Literal: ``'a', 'b' or 'c'``."""
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


class _OneOf:
    """Annotation metadata: the value must be one of ``names()`` (read on every validation)."""

    def __init__(self, names: Callable[[], Iterable[str]]) -> None:
        self.names = names

    def _check(self, value: str) -> str:
        names = list(self.names())
        if value not in names:
            raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": _expected(names)})
        return value

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        out = handler(schema)
        out["enum"] = list(self.names())
        return out


def one_of(names: Callable[[], Iterable[str]]) -> Any:
    """``Annotated[str, ...]`` accepting the names ``names()`` returns at validation time."""
    return Annotated[str, _OneOf(names)]


__all__ = ["one_of"]
