"""The protocol every retrieval mode satisfies, the template its classes share, and the shared validators."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from sieve.core.defaults import DEFAULT_K, MAX_K, MAX_QUERY_CHARS
from sieve.core.errors import InvalidInput
from sieve.retriever.types import Hit

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from sieve.retriever.store_api import Store
    from sieve.retriever.types import HitMode, Where


@runtime_checkable
class Retriever(Protocol):
    """``search`` returns at most ``k`` hits, best first, never one whose id is in ``exclude``."""

    def search(
        self, query: str, k: int = DEFAULT_K, *, where: Where | None = None, exclude: Collection[str] | None = None
    ) -> list[Hit]: ...

    def batch_search(
        self, queries: Sequence[str], k: int = DEFAULT_K, *, where: Where | None = None
    ) -> list[list[Hit]]: ...


class ScoredIdsRetriever:
    """Template method: a mode says how it ranks chunk ids (:meth:`scored_ids`); :meth:`search`
    validates the request, ranks, and fetches the texts of the winners alone.

    Subclasses set ``store``, ``max_k`` and ``mode``.
    """

    store: Store
    max_k: int
    mode: HitMode

    def scored_ids(
        self, query: str, k: int, *, where: Where | None = None, exclude: Collection[str] | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` best (chunk id, score) pairs, best first, ids in ``exclude`` left out."""
        raise NotImplementedError

    def search(
        self, query: str, k: int = DEFAULT_K, *, where: Where | None = None, exclude: Collection[str] | None = None
    ) -> list[Hit]:
        validate_query(query)
        validate_k(k, self.max_k)
        pairs = self.scored_ids(query, k, where=where, exclude=exclude)
        by_id = {c.chunk_id: c for c in self.store.get([cid for cid, _ in pairs])}
        kept = [(by_id[cid], s) for cid, s in pairs if cid in by_id]  # a chunk deleted meanwhile drops out
        return [Hit(chunk=c, score=s, rank=i + 1, mode=self.mode) for i, (c, s) in enumerate(kept)]

    def batch_search(
        self, queries: Sequence[str], k: int = DEFAULT_K, *, where: Where | None = None
    ) -> list[list[Hit]]:
        return [self.search(q, k, where=where) for q in queries]


def validate_k(k: int, max_k: int = MAX_K) -> int:
    """Return ``k`` if ``1 <= k <= max_k``, else raise :class:`InvalidInput`.

    Example:
        >>> validate_k(10)
        10
    """
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= max_k:
        raise InvalidInput(f"Expected k between 1 and {max_k}, got {k!r}")
    return k


def validate_query(query: str, max_chars: int = MAX_QUERY_CHARS) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput(f"Expected a non-empty query string, got {query!r}")
    if len(query) > max_chars:
        raise InvalidInput(f"Expected a query of at most {max_chars} characters, got {len(query)}")
    return validate_text(query, "the query")


def validate_text(text: str, what: str) -> str:
    """Return ``text`` if it encodes as UTF-8, else raise :class:`InvalidInput`.

    JSON may escape a lone UTF-16 surrogate (``"\\ud800"``), which Python keeps in a ``str`` but no
    tokenizer or store can encode (the embedder raised a ``TypeError``: a 500, issue 42's fuzz run).

    Example:
        >>> validate_text("naïve", "query")
        'naïve'
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            f"Expected {what} to be Unicode text, got a lone surrogate {text[exc.start]!r} at character {exc.start}"
        ) from None
    return text


__all__ = ["Retriever", "ScoredIdsRetriever", "validate_k", "validate_query", "validate_text"]
