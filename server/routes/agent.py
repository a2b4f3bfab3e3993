"""Agentic search: ``POST /v1/search`` (JSON or SSE progress) and ``POST /search`` (Context-1's stream shape).

Each request first takes a place in the app's episode gate (``503 overloaded`` with
``Retry-After`` when the server runs all it admits and its queue is full), then runs its episode,
which a client that disconnects cancels.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from sse_starlette.sse import EventSourceResponse

from sieve.agent.factory import POLICIES
from sieve.core.errors import SieveError
from sieve.server.agent_runner import (
    build_request,
    check_filters,
    context1_events,
    episode_time_s,
    progress_event,
    run_episode_async,
    stream_episode,
)
from sieve.server.convert import completion_tokens, document_blocks, evidence_out, trace_usage
from sieve.server.deps import ReadAuth, StateDep, run_blocking
from sieve.server.problems import problem_body, sieve_error_body, vanished_collection
from sieve.server.deadline import extend_deadline
from sieve.server.schemas import CitationOut, Context1Request, Problem, SearchRequest, SearchResponse

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from starlette.types import Receive, Scope, Send

    from sieve.agent import AgentRequest, Trace
    from sieve.server.admission import Slot
    from sieve.server.state import AppState

logger = logging.getLogger(__name__)

SSE = {"text/event-stream": {"schema": {"type": "string"}}}
ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem},
    404: {"model": Problem},
    409: {"model": Problem},
    422: {"model": Problem},
    502: {"model": Problem},
    503: {"model": Problem},
    504: {"model": Problem},
}

router = APIRouter(tags=["agent"], dependencies=[ReadAuth], responses=ERRORS)


def _agent_request(state: AppState, body: SearchRequest) -> AgentRequest:
    """The body as the one request its episode runs (None fields: the server's settings)."""
    return build_request(
        state,
        body.query,
        collection=body.collection,
        policy=body.policy,
        filters=body.filters,
        rollouts=body.rollouts,
        group_by_doc=body.group_by_doc,
        k=body.k,
        budget_tokens=body.budget_tokens,
        max_turns=body.max_turns,
        reasoning_effort=body.reasoning_effort,
        tool_choice=body.tool_choice,
        max_new_tokens=body.max_new_tokens,
        max_tool_calls=body.max_tool_calls,
        max_wall_s=body.max_wall_s,
    )


def _response(trace: Trace, body: SearchRequest, collection: str) -> SearchResponse:
    return SearchResponse(
        query=body.query,
        collection=collection,
        policy=trace.policy,
        results=[evidence_out(e) for e in trace.returned],
        answer=trace.answer,
        citations=[CitationOut(**c) for c in trace.citations],
        stop_reason=trace.stop_reason,
        warnings=list(trace.warnings),
        usage=trace_usage(trace),
        trace=trace.to_dict() if body.include_trace else None,
    )


async def _admit(state: AppState, request: AgentRequest) -> tuple[str, Slot]:
    """Fail before a stream starts (as a proper HTTP problem): no place for another episode (503),
    unknown collection (404), a filter the store cannot run (422); the request itself was checked as
    it was built (422). Returns the collection and the held place."""
    # An LLM episode may take longer than SIEVE_REQUEST_TIMEOUT_S (SIEVE_MAX_WALL_S).
    extend_deadline(episode_time_s(request), state.settings.request_timeout_s)
    slot = await state.episodes.enter()

    def work() -> str:
        index = state.index(request.collection)
        check_filters(index, request.where)
        return index.name

    try:
        return await run_blocking(work, timeout=state.settings.request_timeout_s), slot
    except BaseException:
        slot.release()
        raise


class _SlotStream(EventSourceResponse):
    """An SSE response that gives its episode place back if the stream ends before the episode began
    (a client gone before the first byte); once begun, the episode's worker releases it."""

    def __init__(self, content: Any, slot: Slot) -> None:
        super().__init__(content)
        self._slot = slot

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._slot.release_unless_running()


def _error_data(exc: BaseException, state: AppState) -> dict[str, Any]:
    if isinstance(exc, SieveError):
        return sieve_error_body(exc)
    gone = vanished_collection(exc)
    if gone is not None:
        state.invalidate()
        return sieve_error_body(gone)
    logger.exception("Agent stream failed", exc_info=exc)
    return problem_body(500, f"Internal server error ({type(exc).__name__}); see the server log", "internal_error")


@router.post(
    "/v1/search",
    response_model=SearchResponse,
    summary="Agentic search (JSON, or SSE with stream=true)",
    responses={
        200: {
            "content": SSE,
            "description": "JSON result; with `stream: true` SSE events "
            "`reasoning` (an LLM's reasoning before its calls), `action`, `observation`, `usage`, then `result` "
            "(or `error`).",
        }
    },
)
async def search(body: SearchRequest, state: StateDep, request: Request) -> Any:
    """The search agent explores the collection within a token budget and returns ranked evidence."""
    agent_request = _agent_request(state, body)
    collection, slot = await _admit(state, agent_request)
    if not body.stream:
        trace = await run_episode_async(state, agent_request, receive=request.receive, slot=slot)
        return _response(trace, body, collection)

    async def events() -> AsyncIterator[dict[str, str]]:
        try:
            async for kind, item in stream_episode(state, agent_request, slot):
                if kind == "event":
                    if item.get("type") in ("reasoning", "action", "observation", "usage"):
                        yield {"event": item["type"], "data": json.dumps(progress_event(item), default=str)}
                else:
                    yield {"event": "result", "data": _response(item, body, collection).model_dump_json()}
        except Exception as exc:  # the 200 is sent: an error can only be reported as an event
            yield {"event": "error", "data": json.dumps(_error_data(exc, state))}

    return _SlotStream(events(), slot)


@router.post(
    "/search",
    summary="Context-1-compatible agentic search stream",
    responses={
        200: {
            "content": SSE,
            "description": 'Events `data: {"type": "action"|"observation"|"usage"|"done"|"error", "data": ...}`.',
        }
    },
)
async def search_context1(body: Context1Request, state: StateDep) -> EventSourceResponse:
    """The stream Chroma's services use to call Context-1 as a subagent, so an orchestrator built on Chroma
    can swap Sieve in: progress as ``action``/``observation`` events, the final ranked documents as an
    ``action`` of the ``user_text`` tool holding ``<Document id=...><Justification>...`` blocks, then
    ``usage`` and ``done``. ``model`` selects a policy when it names one, else the server's default."""
    agent_request = build_request(
        state, body.query, collection=body.collection_name, policy=body.model if body.model in POLICIES else None
    )
    _, slot = await _admit(state, agent_request)

    def frame(kind: str, data: Any) -> dict[str, str]:
        return {"data": json.dumps({"type": kind, "data": data}, default=str)}

    async def events() -> AsyncIterator[dict[str, str]]:
        try:
            async for kind, item in stream_episode(state, agent_request, slot):
                if kind == "event":
                    for ev in context1_events(item):
                        yield frame(ev["type"], ev["data"])
                    continue
                trace: Trace = item
                yield frame(
                    "action",
                    {
                        "tools": [{"name": "user_text"}],
                        "params": [{"text": document_blocks(trace.returned)}],
                        "sources": [e.chunk_id for e in trace.returned],
                    },
                )
                out = completion_tokens(trace)
                yield frame(
                    "usage",
                    {"model": trace.policy, "input_tokens": max(0, trace.tokens_total - out), "output_tokens": out},
                )
                yield frame("done", {"stop_reason": trace.stop_reason})
        except Exception as exc:
            data = _error_data(exc, state)
            yield frame("error", {"message": data["detail"], "code": data["code"]})

    return _SlotStream(events(), slot)


__all__ = ["router"]
