"""The FastAPI application: ``create_app(settings)``.

Layout: routes in ``server/routes/`` (one ``APIRouter`` each), dependencies in ``server/deps.py``,
request/response models in ``server/schemas.py``, errors mapped to problem details in
``server/problems.py``, per-app state (embedder, indexes, metrics, policies) in
``server/state.py``. Heavy things (the embedder, preloaded collections) load in the lifespan,
in a worker thread; collections not preloaded open on first use and stay cached.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline

from sieve.server.admission import ShedWhenFull
from sieve.server.deadline import RequestDeadline
from sieve.server.deps import run_blocking
from sieve.server.middleware import BodyLimitMiddleware, BodyTimeoutMiddleware, MetricsMiddleware, TrustedHosts
from sieve.server.problems import install_problem_handlers
from sieve.server.routes import agent, documents, health, playground, search
from sieve.server.state import AppState

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from contextlib import AbstractAsyncContextManager

    from sieve.retriever.embeddings import Embedder
    from sieve.settings import Settings

logger = logging.getLogger(__name__)

DESCRIPTION = """Agentic retrieval with context pruning.

* `POST /v1/search`: the search agent (JSON, or Server-Sent Events with `stream: true`).
* `POST /v1/retrieve`: plain hybrid / dense / BM25 retrieval.
* `POST /search`: Context-1's stream shape; `POST /retrieve`: Search-R1's batch shape.
* Collections and documents under `/v1/collections` and `/v1/documents`.
* `/mcp`: an MCP server (streamable HTTP) with `search` and `fetch`.
* `/`: the playground, a web page to watch the agent search and to browse collections.

Errors are RFC 9457 problem details with a stable `code`. When `SIEVE_API_KEY` is set, mutating
endpoints need `Authorization: Bearer <key>`; with `SIEVE_REQUIRE_AUTH` every endpoint but `/healthz` does.
"""


def create_app(settings: Settings | None = None, *, embedder: Embedder | None = None) -> FastAPI:
    """Build the app.

    Args:
        settings: server settings (default: :func:`~sieve.settings.load_settings` from ``SIEVE_*`` variables).
        embedder: an already-loaded embedder to share (tests); loaded in the lifespan otherwise.

    Returns:
        The FastAPI app; run it with uvicorn (``sieve serve``).

    Example:
        >>> app = create_app()  # doctest: +SKIP
    """
    from sieve.settings import load_settings

    settings = settings or load_settings()
    state = AppState(settings, embedder=embedder)
    mcp_server = None
    if settings.mcp:
        from sieve.server.mcp_tools import build_mcp

        mcp_server = build_mcp(state)
    # FastAPIOffline: /docs and /redoc load Swagger UI and ReDoc from files in the fastapi-offline
    # wheel instead of a CDN, so the docs work on a machine without internet.
    app = FastAPIOffline(
        title="Sieve", version=_version(), description=DESCRIPTION, lifespan=_lifespan(state, mcp_server)
    )
    app.state.sieve = state
    install_problem_handlers(app)
    for module in (agent, search, documents, health):
        app.include_router(module.router)
    playground.install(app)  # the web page at / and its static files
    if mcp_server is not None:
        from sieve.server.mcp_tools import mcp_route

        app.router.routes.append(mcp_route(mcp_server, state))
    _add_middleware(app, state)
    return app


def _lifespan(state: AppState, mcp_server: Any) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Start-up in a worker thread (the embedder, preloaded collections), then the MCP session manager."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        settings = state.settings
        await run_blocking(state.startup, timeout=max(settings.request_timeout_s, 300.0))
        async with contextlib.AsyncExitStack() as stack:
            if mcp_server is not None:
                await stack.enter_async_context(mcp_server.session_manager.run())
            logger.info("Sieve ready: collections %s preloaded", settings.preload or "none")
            yield

    return lifespan


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sieve")
    except PackageNotFoundError:
        return "0.0.0"


def _add_middleware(app: FastAPI, state: AppState) -> None:
    """The middleware stack around the routes, added innermost first.

    Metrics see every request (400 invalid_host, 408, 413 included), a wrong Host is refused before
    CORS or any route runs, and the body limits wrap the routes. Overload shedding sits inside the
    body limits, so the body it drains unread is bounded too. Innermost: the request's deadline
    starts when the routes first see it, and covers its queue wait.
    """
    settings = state.settings
    app.add_middleware(RequestDeadline, timeout_s=settings.request_timeout_s)
    app.add_middleware(
        ShedWhenFull,
        routes={
            "/v1/search": state.episodes,
            "/search": state.episodes,
            "/v1/retrieve": state.retrievals,
            "/retrieve": state.retrievals,
        },
    )
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(BodyTimeoutMiddleware, timeout_s=settings.body_timeout_s)
    if settings.cors_origins:  # off unless configured: browsers on other origins cannot read responses
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Authorization", "Content-Type"],
        )
    app.add_middleware(TrustedHosts, allowed_hosts=settings.trusted_hosts())
    app.add_middleware(MetricsMiddleware, metrics=state.metrics)


def app_from_env() -> FastAPI:
    """The app of one ``sieve serve --workers N`` worker: its settings come from the ``SIEVE_*``
    variables the parent process exported (uvicorn's workers import the app by name)."""
    return create_app()


__all__ = ["app_from_env", "create_app"]
