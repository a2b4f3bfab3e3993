"""LlamaIndex retriever: ``SieveRetriever(base_url=...)`` is a ``BaseRetriever`` returning ``NodeWithScore``.

Example:
    >>> from sieve.adapters.llamaindex import SieveRetriever  # doctest: +SKIP
    >>> nodes = SieveRetriever(base_url="http://127.0.0.1:8000", k=5).retrieve("Who ...?")  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

try:
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("sieve.adapters.llamaindex needs llama-index-core: pip install 'sieve[llamaindex]'") from exc

from sieve.core.defaults import DEFAULT_K
from sieve.adapters._common import fetch_results, make_source, result_metadata


class SieveRetriever(BaseRetriever):
    """Sieve as a LlamaIndex retriever, over HTTP (``base_url`` or ``client``) or in-process (``sieve``).

    Each ``NodeWithScore`` holds a ``TextNode`` whose ``id_`` is the chunk id, with ``doc_id``,
    ``score``, ``rank``, ``title``, ``source`` and ``justification`` in its metadata.

    Args:
        base_url: server URL; or pass ``client`` (a ``SieveClient``) or ``sieve`` (a ``sieve.Sieve``).
        collection: collection to search (default: the server's).
        k: results per query.
        mode: ``"agent"`` or a registered retrieval mode (:func:`sieve.adapters.result_modes`).
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        client: Any = None,
        sieve: Any = None,
        collection: str | None = None,
        k: int = DEFAULT_K,
        mode: str = "agent",
        budget_tokens: int | None = None,
        policy: str | None = None,
        filters: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._source = make_source(base_url, api_key, client, sieve)
        self._opts: dict[str, Any] = {
            "collection": collection,
            "k": k,
            "mode": mode,
            "budget_tokens": budget_tokens,
            "policy": policy,
            "filters": filters,
        }

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        results = fetch_results(self._source, query_bundle.query_str, **self._opts)
        return [
            NodeWithScore(node=TextNode(id_=r.id, text=r.text, metadata=result_metadata(r)), score=r.score)
            for r in results
        ]


__all__ = ["SieveRetriever"]
