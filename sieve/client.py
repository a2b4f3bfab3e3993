"""``SieveClient``: a typed Python client (httpx) for every endpoint of ``sieve serve``.

Results come back as small frozen dataclasses; errors as the same ``SieveError`` subclasses the
library raises (``UnknownCollection``, ``InvalidInput``, ``Unauthorized``...), rebuilt from the
server's problem details, with ``status`` and the full ``problem`` attached.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from sieve.core.defaults import DEFAULT_MODE
from sieve.core import errors as _library_errors
from sieve.core.errors import SieveError
from sieve.results import Result
from sieve.server import errors as _http_errors

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from types import TracebackType

    from sieve.retriever.types import Document


@dataclass(frozen=True)
class SearchResult:
    """The answer of ``/v1/search`` (agentic) or ``/v1/retrieve`` (plain; ``policy`` is empty there)."""

    query: str
    collection: str
    results: list[Result]
    usage: dict[str, Any]
    policy: str = ""
    mode: str = ""
    answer: str | None = None
    stop_reason: str = ""
    warnings: list[str] = field(default_factory=list)
    trace: dict[str, Any] | None = None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SearchResult:
        return cls(
            query=d["query"],
            collection=d["collection"],
            results=[Result.from_json(r) for r in d["results"]],
            usage=dict(d.get("usage") or {}),
            policy=d.get("policy", ""),
            mode=d.get("mode", ""),
            answer=d.get("answer"),
            stop_reason=d.get("stop_reason", ""),
            warnings=list(d.get("warnings") or []),
            trace=d.get("trace"),
        )


@dataclass(frozen=True)
class StreamEvent:
    """One Server-Sent Event: ``event`` is the SSE event name ("message" when none was sent)."""

    event: str
    data: Any


def _error_classes() -> dict[str, type[SieveError]]:
    classes: dict[str, type[SieveError]] = {}
    for module in (_library_errors, _http_errors):  # what the library raises, and what only HTTP can
        for name in module.__all__:
            cls = getattr(module, name)
            if isinstance(cls, type) and issubclass(cls, SieveError):
                classes[cls.code] = cls
    return classes


def raise_for_problem(response: httpx.Response) -> None:
    """Raise the ``SieveError`` subclass named by a problem response's ``code`` (``SieveError`` if unknown)."""
    if response.status_code < 400:
        return
    try:
        problem = response.json()
    except ValueError:
        problem = {"detail": response.text[:500], "code": "http_error"}
    if not isinstance(problem, dict):
        problem = {"detail": str(problem)[:500], "code": "http_error"}
    code = str(problem.get("code", "http_error"))
    detail = str(problem.get("detail") or problem.get("title") or f"HTTP {response.status_code}")
    exc = _error_classes().get(code, SieveError)(detail)
    exc.status = response.status_code  # type: ignore[attr-defined]  # what the server answered
    exc.code = code
    exc.problem = problem  # type: ignore[attr-defined]
    raise exc


def _doc_json(doc: Document | dict[str, Any]) -> dict[str, Any]:
    if isinstance(doc, dict):
        return doc
    return {
        "id": doc.doc_id,
        "text": doc.text,
        "title": doc.title,
        "source": doc.source,
        "metadata": dict(doc.metadata),
    }


def _checked_filters(filters: dict[str, Any] | None) -> dict[str, Any] | None:
    """The server's bounds on a filter, checked before sending (the same InvalidInput, without a round trip)."""
    from sieve.retriever.filters import validate_where

    return None if filters is None else validate_where(filters)


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def iter_sse(lines: Iterable[str]) -> Iterator[StreamEvent]:
    """Parse Server-Sent Events from text lines (``data:`` lines joined, JSON-decoded when possible).

    Example:
        >>> [e.data for e in iter_sse(['event: usage', 'data: {"n": 1}', '', ': ping', ''])]
        [{'n': 1}]
    """
    event, data = "message", list[str]()
    for line in lines:
        if not line:
            if data:
                yield _sse_event(event, data)
            event, data = "message", []
            continue
        if line.startswith(":"):
            continue  # comment / keep-alive ping
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    if data:
        yield _sse_event(event, data)


def _sse_event(event: str, data: list[str]) -> StreamEvent:
    text = "\n".join(data)
    try:
        return StreamEvent(event, json.loads(text))
    except ValueError:
        return StreamEvent(event, text)


class SieveClient:
    """Client for a Sieve server.

    Args:
        base_url: e.g. ``http://127.0.0.1:8000``.
        api_key: sent as ``Authorization: Bearer KEY`` when given.
        timeout: seconds per request (streams: between events; the server pings every 15 s).
        transport: an httpx transport (tests, or an in-process ASGI app).

    Example:
        >>> client = SieveClient("http://127.0.0.1:8000")  # doctest: +SKIP
        >>> [r.id for r in client.search("Who founded ...?").results]  # doctest: +SKIP
    """

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        api_key: str | None = None,
        *,
        timeout: float = 120.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout, transport=transport)

    # -- plumbing ----------------------------------------------------------------------------------
    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> SieveClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._http.request(method, path, **kwargs)
        raise_for_problem(response)
        return response.json()

    def _stream(self, path: str, body: dict[str, Any]) -> Iterator[StreamEvent]:
        with self._http.stream("POST", path, json=body, headers={"Accept": "text/event-stream"}) as response:
            if response.status_code >= 400:
                response.read()
                raise_for_problem(response)
            yield from iter_sse(response.iter_lines())

    @property
    def mcp_url(self) -> str:
        """The MCP (streamable HTTP) endpoint, for ``mcp.Client`` or an MCP host."""
        return f"{self.base_url}/mcp"

    # -- search ------------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        collection: str | None = None,
        k: int | None = None,
        budget_tokens: int | None = None,
        max_turns: int | None = None,
        policy: str | None = None,
        filters: dict[str, Any] | None = None,
        rollouts: int = 1,
        include_trace: bool = False,
        group_by_doc: bool = False,
    ) -> SearchResult:
        """Agentic search (``POST /v1/search``): the k best chunks (``group_by_doc``: each document's best only)."""
        body = _drop_none(
            {
                "query": query,
                "collection": collection,
                "k": k,
                "budget_tokens": budget_tokens,
                "max_turns": max_turns,
                "policy": policy,
                "filters": _checked_filters(filters),
                "rollouts": rollouts,
                "include_trace": include_trace,
                "group_by_doc": group_by_doc,
            }
        )
        return SearchResult.from_json(self._json("POST", "/v1/search", json=body))

    def search_stream(
        self,
        query: str,
        *,
        collection: str | None = None,
        k: int | None = None,
        budget_tokens: int | None = None,
        max_turns: int | None = None,
        policy: str | None = None,
        filters: dict[str, Any] | None = None,
        rollouts: int = 1,
    ) -> Iterator[StreamEvent]:
        """Agentic search as it happens: ``action``/``observation``/``usage`` events, then ``result``.

        The final ``result`` event's data is a ``SearchResult`` (already parsed); an ``error``
        event is raised as the matching ``SieveError``.
        """
        body = _drop_none(
            {
                "query": query,
                "collection": collection,
                "k": k,
                "budget_tokens": budget_tokens,
                "max_turns": max_turns,
                "policy": policy,
                "filters": _checked_filters(filters),
                "rollouts": rollouts,
                "stream": True,
            }
        )
        for ev in self._stream("/v1/search", body):
            if ev.event == "result":
                yield StreamEvent("result", SearchResult.from_json(ev.data))
            elif ev.event == "error":
                data = ev.data if isinstance(ev.data, dict) else {"detail": str(ev.data)}
                exc = _error_classes().get(str(data.get("code")), SieveError)(str(data.get("detail", "")))
                exc.problem = data  # type: ignore[attr-defined]
                raise exc
            else:
                yield ev

    def context1_search(
        self, query: str, *, model: str | None = None, collection_name: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """Context-1's stream (``POST /search``): yields ``{"type": ..., "data": ...}`` dicts as sent."""
        body = _drop_none({"query": query, "model": model, "collection_name": collection_name})
        for ev in self._stream("/search", body):
            if isinstance(ev.data, dict):
                yield ev.data

    def retrieve(
        self,
        query: str,
        *,
        collection: str | None = None,
        k: int | None = None,
        mode: str = DEFAULT_MODE,
        filters: dict[str, Any] | None = None,
        exclude: list[str] | None = None,
    ) -> SearchResult:
        """Plain retrieval (``POST /v1/retrieve``): one query, top-k chunks, no agent."""
        body = _drop_none(
            {
                "query": query,
                "collection": collection,
                "k": k,
                "mode": mode,
                "filters": _checked_filters(filters),
                "exclude": exclude,
            }
        )
        return SearchResult.from_json(self._json("POST", "/v1/retrieve", json=body))

    def retrieve_batch(
        self, queries: list[str], *, topk: int = 3, return_scores: bool = True, collection: str | None = None
    ) -> list[list[dict[str, Any]]]:
        """Search-R1's batch shape (``POST /retrieve``): the ``result`` list, one list per query."""
        body = _drop_none({"queries": queries, "topk": topk, "return_scores": return_scores, "collection": collection})
        return self._json("POST", "/retrieve", json=body)["result"]

    # -- documents ---------------------------------------------------------------------------------
    def upsert(self, collection: str, documents: Iterable[Document | dict[str, Any]]) -> dict[str, Any]:
        """Add or update documents (idempotent by content hash); creates the collection if needed."""
        return self._json(
            "POST",
            f"/v1/collections/{_seg(collection)}/documents",
            json={"documents": [_doc_json(d) for d in documents]},
        )

    def delete_document(self, collection: str, doc_id: str) -> int:
        return int(self._json("DELETE", f"/v1/collections/{_seg(collection)}/documents/{_seg(doc_id)}")["deleted"])

    def delete_collection(self, collection: str) -> int:
        return int(self._json("DELETE", f"/v1/collections/{_seg(collection)}")["deleted"])

    def collections(self) -> dict[str, int]:
        """Collection name -> number of chunks."""
        return {c["name"]: int(c["chunks"]) for c in self._json("GET", "/v1/collections")["collections"]}

    def document(self, doc_id: str, *, collection: str | None = None) -> dict[str, Any]:
        """A whole document (text stitched from its chunks, plus the chunks); a chunk id gives its document."""
        params = {"collection": collection} if collection else None
        return self._json("GET", f"/v1/documents/{_seg(doc_id)}", params=params)

    # -- operations --------------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        return self._json("GET", "/healthz")

    def metrics(self) -> str:
        response = self._http.get("/metrics")
        raise_for_problem(response)
        return response.text


def _seg(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")


__all__ = ["Result", "SearchResult", "SieveClient", "StreamEvent", "iter_sse", "raise_for_problem"]
