"""What both adapters share: get ranked results from a server (``SieveClient``) or in-process (``Sieve``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sieve.core.choices import one_of
from sieve.core.defaults import DEFAULT_K
from sieve.results import Result
from sieve.retriever.modes import MODES

AGENT = "agent"  # the search agent; every other mode is one registered retrieval mode


def result_modes() -> tuple[str, ...]:
    """``agent``, then every retrieval mode registered now (:data:`sieve.retriever.modes.MODES`)."""
    return (AGENT, *MODES)


def result_mode_help() -> str:
    """``"agent | dense | bm25 | hybrid"``: the modes an adapter takes, for a help text."""
    return " | ".join(result_modes())


# A mode name checked against the registry when a retriever is made, not frozen at import.
if TYPE_CHECKING:
    Mode = str
else:
    Mode = one_of(result_modes)


def fetch_results(
    source: Any,
    query: str,
    *,
    mode: str = "agent",
    collection: str | None = None,
    k: int = DEFAULT_K,
    budget_tokens: int | None = None,
    policy: str | None = None,
    filters: dict[str, Any] | None = None,
) -> list[Result]:
    """Ranked results for ``query`` from a ``SieveClient`` (HTTP) or a ``sieve.Sieve`` (in-process).

    ``mode="agent"`` runs the search agent; the other modes (:func:`result_modes`) are plain single-shot
    retrieval.
    """
    from sieve.client import SieveClient

    if mode not in result_modes():
        from sieve.core.errors import InvalidInput

        raise InvalidInput(f"Expected mode in {result_modes()}, got {mode!r}")
    if isinstance(source, SieveClient):
        if mode == AGENT:
            return source.search(
                query, collection=collection, k=k, budget_tokens=budget_tokens, policy=policy, filters=filters
            ).results
        return source.retrieve(query, collection=collection, k=k, mode=mode, filters=filters).results
    # In-process: a sieve.Sieve façade bound to its collection.
    if mode == AGENT:
        overrides: dict[str, Any] = {"k": k}
        if budget_tokens:
            overrides["budget_tokens"] = budget_tokens
        if policy:
            overrides["policy"] = policy
        return [Result.from_evidence(e) for e in source.search(query, **overrides).returned]
    return [Result.from_hit(h) for h in source.retrieve(query, k, mode=mode, where=filters)]


def result_metadata(r: Result) -> dict[str, Any]:
    """Metadata every adapter attaches: ids, score, rank and provenance, then the chunk's own metadata."""
    return {
        **r.metadata,
        "id": r.id,
        "doc_id": r.doc_id,
        "score": r.score,
        "rank": r.rank,
        "title": r.title,
        "source": r.source,
        "justification": r.justification,
    }


def make_source(base_url: str | None, api_key: str | None, client: Any, sieve: Any) -> Any:
    """Exactly one of ``base_url`` / ``client`` / ``sieve``; a ``base_url`` becomes a ``SieveClient``."""
    given = [x for x in (base_url, client, sieve) if x is not None]
    if len(given) != 1:
        from sieve.core.errors import InvalidInput

        raise InvalidInput(f"Expected exactly one of base_url, client or sieve, got {len(given)}")
    if base_url is not None:
        from sieve.client import SieveClient

        return SieveClient(base_url, api_key=api_key)
    return client if client is not None else sieve


__all__ = ["AGENT", "Mode", "fetch_results", "make_source", "result_metadata", "result_mode_help", "result_modes"]
