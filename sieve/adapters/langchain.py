"""LangChain retriever: ``SieveRetriever(base_url=...)`` is a ``BaseRetriever``; call ``.invoke(query)``.

Example:
    >>> from sieve.adapters.langchain import SieveRetriever  # doctest: +SKIP
    >>> retriever = SieveRetriever(base_url="http://127.0.0.1:8000", collection="sample", k=5)  # doctest: +SKIP
    >>> [d.metadata["doc_id"] for d in retriever.invoke("Who ...?")]  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("sieve.adapters.langchain needs langchain-core: pip install 'sieve[langchain]'") from exc

from pydantic import ConfigDict, Field, PrivateAttr

from sieve.core.defaults import DEFAULT_K
from sieve.adapters._common import Mode, fetch_results, make_source, result_metadata


class SieveRetriever(BaseRetriever):
    """Sieve as a LangChain retriever, over HTTP (``base_url`` or ``client``) or in-process (``sieve``).

    Each returned ``Document`` has ``id`` = the chunk id and ``metadata`` with ``id``, ``doc_id``,
    ``score``, ``rank``, ``title``, ``source``, ``justification`` and the chunk's own metadata.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    base_url: str | None = Field(default=None, description="Server URL, e.g. http://127.0.0.1:8000.")
    api_key: str | None = Field(default=None, description="Bearer key, when the server needs one.")
    client: Any = Field(default=None, description="A sieve.client.SieveClient to use instead of base_url.")
    sieve: Any = Field(default=None, description="A sieve.Sieve for in-process use (no server).")
    collection: str | None = None
    k: int = DEFAULT_K
    mode: Mode = Field(
        default="agent",
        description="'agent' (agentic search) or a registered retrieval mode (sieve.retriever.modes.MODES).",
    )
    budget_tokens: int | None = None
    policy: str | None = None
    filters: dict[str, Any] | None = None
    _source: Any = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        # After pydantic's validation, not inside it (model_post_init): there our InvalidInput, being a
        # ValueError, would come out wrapped in a pydantic ValidationError.
        self._source = make_source(self.base_url, self.api_key, self.client, self.sieve)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        results = fetch_results(
            self._source,
            query,
            mode=self.mode,
            collection=self.collection,
            k=self.k,
            budget_tokens=self.budget_tokens,
            policy=self.policy,
            filters=self.filters,
        )
        return [Document(page_content=r.text, metadata=result_metadata(r), id=r.id) for r in results]


__all__ = ["SieveRetriever"]
