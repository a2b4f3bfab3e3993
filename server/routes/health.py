"""Liveness and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from sieve.server.deps import BearerDep, ReadAuth, StateDep, require_read
from sieve.server.errors import Unauthorized
from sieve.server.schemas import HealthResponse, Problem

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthResponse, summary="Liveness (never needs the API key)")
async def healthz(state: StateDep, creds: BearerDep) -> HealthResponse:
    """Open even under ``SIEVE_REQUIRE_AUTH`` so that orchestrator probes work; it then names the loaded
    collections only to a caller presenting the key (one who could list them anyway)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("sieve")
    except PackageNotFoundError:
        v = "unknown"
    try:
        require_read(state, creds)
        names = state.loaded_collections
    except Unauthorized:
        names = []
    return HealthResponse(status="ok", version=v, collections_loaded=names, embedder_loaded=state.embedder_loaded)


@router.get(
    "/metrics",
    response_class=Response,
    dependencies=[ReadAuth],
    responses={401: {"model": Problem}},
    summary="Prometheus text format",
)
async def metrics(state: StateDep) -> Response:
    return Response(state.metrics.render(), media_type=CONTENT_TYPE_LATEST)


__all__ = ["router"]
