"""The protocol every retrieval mode satisfies, and the shared validators."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from sieve.errors import InvalidInput

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from sieve.retriever.types import Hit, Where


@runtime_checkable
class Retriever(Protocol):
    """``search`` returns at most ``k`` hits, best first, never one whose id is in ``exclude``."""

    def search(
        self, query: str, k: int = 10, *, where: Where | None = None, exclude: Collection[str] | None = None
    ) -> list[Hit]: ...

    def batch_search(
        self, queries: Sequence[str], k: int = 10, *, where: Where | None = None
    ) -> list[list[Hit]]: ...


def validate_k(k: int, max_k: int = 200) -> int:
    """Return ``k`` if ``1 <= k <= max_k``, else raise :class:`InvalidInput`.

    Example:
        >>> validate_k(10)
        10
    """
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= max_k:
        raise InvalidInput(f"Expected k between 1 and {max_k}, got {k!r}")
    return k


def validate_query(query: str, max_chars: int = 4000) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput(f"Expected a non-empty query string, got {query!r}")
    if len(query) > max_chars:
        raise InvalidInput(f"Expected a query of at most {max_chars} characters, got {len(query)}")
    return query


__all__ = ["Retriever", "validate_k", "validate_query"]
