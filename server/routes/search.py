"""Plain (non-agentic) retrieval: ``POST /v1/retrieve`` and the Search-R1 batch shape ``POST /retrieve``."""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter

from sieve.core.errors import EmptyCorpus, InvalidInput
from sieve.retriever.base import validate_k, validate_query
from sieve.server.convert import hit_out, search_r1_doc
from sieve.server.deps import ReadAuth, StateDep, run_blocking
from sieve.server.schemas import (
    Problem,
    RetrieveRequest,
    RetrieveResponse,
    SearchR1Request,
    SearchR1Response,
    SearchR1Scored,
    UsageOut,
)

ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem},
    404: {"model": Problem},
    409: {"model": Problem},
    422: {"model": Problem},
    503: {"model": Problem},
    504: {"model": Problem},
}

router = APIRouter(tags=["retrieval"], dependencies=[ReadAuth], responses=ERRORS)


@router.post("/v1/retrieve", response_model=RetrieveResponse, summary="Plain hybrid/dense/BM25 retrieval")
async def retrieve(body: RetrieveRequest, state: StateDep) -> RetrieveResponse:
    """One query, top-k chunks, no agent: the baseline Sieve's agent is measured against."""
    s = state.settings
    k = validate_k(body.k or s.k, s.max_request_k)

    def work() -> RetrieveResponse:
        t0 = time.perf_counter()
        index = state.index(body.collection)
        hits = index.search(body.query, k, mode=body.mode, where=body.filters, exclude=set(body.exclude))
        state.metrics.queries.labels(mode=body.mode).inc()
        return RetrieveResponse(
            query=body.query,
            collection=index.name,
            mode=body.mode,
            results=[hit_out(h) for h in hits],
            usage=UsageOut(ms=round((time.perf_counter() - t0) * 1000, 2)),
        )

    return await run_blocking(work, timeout=s.request_timeout_s, slot=await state.retrievals.enter())


@router.post("/retrieve", response_model=SearchR1Response, summary="Search-R1-compatible batch retrieval")
async def retrieve_search_r1(body: SearchR1Request, state: StateDep) -> SearchR1Response:
    """``{"queries": [...], "topk": 3, "return_scores": true}`` -> ``{"result": [[{"document": {"id", "contents"},
    "score"}]]}``, as veRL, SkyRL, ASearcher, s3 and MEM1 call their retrieval server."""
    s = state.settings
    if len(body.queries) > s.max_queries:
        raise InvalidInput(f"Expected at most {s.max_queries} queries per request, got {len(body.queries)}")
    for q in body.queries:
        validate_query(q)
    k = validate_k(body.topk or 3, s.max_request_k)

    def work() -> SearchR1Response:
        index = state.index(body.collection)
        if index.count() == 0:
            raise EmptyCorpus(
                f"Expected an indexed collection, got {index.name!r} with no chunks; POST documents first"
            )
        batches = index.batch_search(body.queries, k)
        state.metrics.queries.labels(mode="hybrid").inc(len(body.queries))
        if body.return_scores:
            return SearchR1Response(
                result=[
                    [SearchR1Scored(document=search_r1_doc(h.chunk), score=float(h.score)) for h in hits]
                    for hits in batches
                ]
            )
        return SearchR1Response(result=[[search_r1_doc(h.chunk) for h in hits] for hits in batches])

    return await run_blocking(work, timeout=s.request_timeout_s, slot=await state.retrievals.enter())


__all__ = ["router"]
