"""Liveness and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST

from sieve.server.deps import ReadAuth, StateDep
from sieve.server.schemas import HealthResponse, Problem

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthResponse, summary="Liveness (never needs the API key)")
async def healthz(state: StateDep) -> HealthResponse:
    # Open even under SIEVE_REQUIRE_AUTH so orchestrator probes work; it reveals no corpus content.
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("sieve")
    except PackageNotFoundError:
        v = "unknown"
    return HealthResponse(status="ok", version=v, collections_loaded=state.loaded_collections,
                          embedder_loaded=state.embedder_loaded)


@router.get("/metrics", response_class=Response, dependencies=[ReadAuth], responses={401: {"model": Problem}},
            summary="Prometheus text format")
async def metrics(state: StateDep) -> Response:
    return Response(state.metrics.render(), media_type=CONTENT_TYPE_LATEST)


__all__ = ["router"]
