"""The MCP endpoint (streamable HTTP, at ``/mcp``): ``search`` and ``fetch`` in the deep-research shape.

OpenAI's deep-research connectors require exactly two tools: ``search(query)`` returning
``{"results": [{id, title, text, url}]}`` and ``fetch(id)`` returning ``{id, title, text, url,
metadata}``. Both run over the server's default collection; ``search`` runs the search agent (or
plain hybrid retrieval with ``SIEVE_MCP_SEARCH=hybrid``). Built on the ``mcp`` SDK (optional
extra ``sieve[mcp]``); without it the endpoint is not mounted and a warning is logged.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from sieve.agent.cancel import CancelToken
from sieve.core.errors import SieveError
from sieve.server.agent_runner import build_request, cancel_episode, run_episode
from sieve.server.convert import document_out, evidence_out, hit_out
from sieve.server.deps import check_key, run_blocking
from sieve.server.errors import http_status
from sieve.server.problems import sieve_error_body
from sieve.server.schemas import EvidenceOut, McpDocument, McpSearchResult, McpSearchResults

if TYPE_CHECKING:
    from starlette.routing import Route
    from starlette.types import ASGIApp, Receive, Scope, Send

    from sieve.server.state import AppState

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Sieve searches a document collection with an agent that issues several hybrid searches, prunes "
    "what is irrelevant and returns ranked evidence. Call `search` with a natural-language question, "
    "then `fetch` an id from the results to read the whole document."
)


def doc_url(state: AppState, doc_id: str, source: str, collection: str) -> str:
    """The document's own URL when its source is one, else this server's document endpoint."""
    if source.startswith(("http://", "https://")):
        return source
    s = state.settings
    base = (s.public_url or f"http://{s.host}:{s.port}").rstrip("/")
    return f"{base}/v1/documents/{quote(doc_id, safe='')}?collection={quote(collection, safe='')}"


def _search(state: AppState, query: str, cancel: CancelToken) -> McpSearchResults:
    collection = state.collection_name(None)
    if state.settings.mcp_search == "hybrid":
        index = state.index(collection)
        items: list[EvidenceOut] = [hit_out(h) for h in index.search(query, state.settings.k)]
    else:
        trace = run_episode(state, build_request(state, query, collection=collection), cancel=cancel)
        items = [evidence_out(e) for e in trace.returned]
    return McpSearchResults(
        results=[
            McpSearchResult(
                id=e.id, title=e.title or e.doc_id, text=e.text, url=doc_url(state, e.doc_id, e.source, collection)
            )
            for e in items
        ]
    )


def _fetch(state: AppState, ref: str) -> McpDocument:
    index = state.index(None)
    doc = document_out(index.read(ref), index.name)
    return McpDocument(
        id=ref,
        title=doc.title or doc.id,
        text=doc.text,
        url=doc_url(state, doc.id, doc.source, index.name),
        metadata={
            **doc.metadata,
            "doc_id": doc.id,
            "source": doc.source,
            "collection": index.name,
            "chunks": len(doc.chunks),
        },
    )


def build_mcp(state: AppState) -> Any:
    """An ``MCPServer`` with the two tools bound to ``state``; ``None`` when the SDK is missing."""
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError:
        logger.warning("MCP endpoint disabled: install the extra with `pip install 'sieve[mcp]'`")
        return None

    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("sieve", instructions=INSTRUCTIONS, log_level="WARNING")
    timeout = state.settings.request_timeout_s

    # A SieveError is the caller's doing (unknown id, empty query): its message goes back to the
    # model as a tool error; anything else stays a crash the SDK logs and hides.
    @server.tool(description="Search the collection for evidence relevant to a natural-language query.")
    async def search(query: str) -> McpSearchResults:
        cancel = CancelToken()
        gate = state.retrievals if state.settings.mcp_search == "hybrid" else state.episodes
        try:
            return await run_blocking(
                _search,
                state,
                query,
                cancel,
                timeout=timeout,
                slot=await gate.enter(),
                on_timeout=lambda: cancel_episode(state, cancel, "timeout"),
            )
        except SieveError as exc:
            raise ToolError(f"[{exc.code}] {exc.message}") from exc

    @server.tool(description="Fetch the full text of a document (or of the document holding a chunk) by id.")
    async def fetch(id: str) -> McpDocument:  # noqa: A002 - the connector spec names the argument `id`
        try:
            return await run_blocking(_fetch, state, id, timeout=timeout)
        except SieveError as exc:
            raise ToolError(f"[{exc.code}] {exc.message}") from exc

    return server


class _RequireKey:
    """ASGI wrapper: the MCP endpoint needs the API key when ``SIEVE_REQUIRE_AUTH`` is set."""

    def __init__(self, app: ASGIApp, state: AppState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        s = self.state.settings
        if scope["type"] == "http" and s.require_auth and s.server_api_key:
            header = dict(scope.get("headers", ())).get(b"authorization", b"").decode("latin-1")
            scheme, _, token = header.partition(" ")
            try:
                check_key(s.server_api_key, token.strip() if scheme.lower() == "bearer" else None)
            except SieveError as exc:
                from fastapi.responses import JSONResponse

                response = JSONResponse(
                    sieve_error_body(exc),
                    status_code=http_status(exc),
                    headers={"WWW-Authenticate": 'Bearer realm="sieve"'},
                    media_type="application/problem+json",
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _mcp_security(state: AppState) -> Any:
    """The SDK's own DNS-rebinding check (loopback names on a loopback bind) unless SIEVE_ALLOWED_HOSTS
    names the hosts: then the app's TrustedHosts decides for /mcp as for every route (the SDK knows
    no ``*.example.com`` patterns, and would refuse a proxied name on a loopback bind)."""
    if state.settings.allowed_hosts is None:
        return None
    from mcp.server.transport_security import TransportSecuritySettings

    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def mcp_route(server: Any, state: AppState) -> Route:
    """The ``/mcp`` route. Stateless streamable HTTP: any replica can answer any request."""
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
    from starlette.routing import Route

    server.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        host=state.settings.host,
        transport_security=_mcp_security(state),
    )
    # (builds server.session_manager)
    return Route(
        "/mcp",
        endpoint=_RequireKey(StreamableHTTPASGIApp(server.session_manager), state),
        methods=["GET", "POST", "DELETE"],
    )


__all__ = ["INSTRUCTIONS", "build_mcp", "doc_url", "mcp_route"]
