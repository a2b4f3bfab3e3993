"""Running agent episodes for HTTP requests: one resolved request, a worker thread, event relay.

Every agentic route (``/v1/search``, Context-1's ``/search``, the MCP ``search`` tool) turns its
caller's choices into one :class:`~sieve.agent.request.AgentRequest` with :func:`build_request`
(settings defaults, the caller's values, the settings' maxima, the policy checked), before any
place is taken, so a bad value is a 422 and never an error event; :func:`run_episode` then runs
that request as it is.

An episode runs in the thread pool (it embeds, queries Chroma and maybe calls a model); its
``on_event`` callback fires in that thread (or in ``run_fused``'s rollout threads), so events
are handed to the event loop with ``call_soon_threadsafe`` and streamed from an ``asyncio.Queue``.

Every episode carries a :class:`~sieve.agent.cancel.CancelToken`. A client that disconnects (a
dropped SSE stream, or a JSON caller that hangs up) or a request past its time limit cancels it:
the episode stops at its next turn boundary, an LLM call in flight is aborted, and the cancel is
counted in ``sieve_agent_cancelled_total``. Nobody's CPU is spent on answers nobody will read.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sieve.agent.cancel import CancelToken
from sieve.agent.request import AgentRequest
from sieve.server.deps import run_blocking
from sieve.server.errors import ClientClosedRequest
from sieve.server.limits import episode_config

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from starlette.types import Receive

    from sieve.agent import Trace
    from sieve.server.admission import Slot
    from sieve.server.state import AppState

logger = logging.getLogger(__name__)


def build_request(
    state: AppState,
    query: str,
    *,
    collection: str | None = None,
    policy: str | None = None,
    filters: dict[str, Any] | None = None,
    rollouts: int = 1,
    group_by_doc: bool = False,
    **asked: Any,
) -> AgentRequest:
    """The one :class:`~sieve.agent.request.AgentRequest` an HTTP caller's choices make (None: the server's
    setting), resolved and checked here, before any place is taken: the config (``asked``, i.e. ``k``,
    budget, turns and the LLM caps, go to :func:`~sieve.server.limits.episode_config`), ``k`` against
    ``SIEVE_MAX_REQUEST_K``, then the policy, which this server must be able to run.

    Raises:
        InvalidInput: a value past the server's maxima, or a policy it cannot run (422).
    """
    s = state.settings
    name = policy or s.policy
    config = replace(episode_config(s, name, **asked), rollouts=rollouts, group_by_doc=group_by_doc)
    request = AgentRequest(query, name, config, state.collection_name(collection), where=filters, max_k=s.max_request_k)
    s.require_policy(name)  # LLM policies need their model configured
    return request


def episode_time_s(request: AgentRequest) -> float:
    """How long ``request``'s episode may run: its config's ``max_wall_s`` (an LLM policy's, else the request
    timeout). The request's deadline is moved to match (:func:`~sieve.server.deadline.extend_deadline`)."""
    return request.config.max_wall_s


def check_filters(index: Any, where: dict[str, Any] | None) -> None:
    """Reject a malformed Chroma ``where`` up front: inside an episode it would only empty every search."""
    if where is not None:
        index.check_filter(where)  # InvalidInput for a filter the store cannot run


def run_episode(
    state: AppState, request: AgentRequest, on_event: Any | None = None, cancel: CancelToken | None = None
) -> Trace:
    """Blocking: ``request``'s episode (or its fused rollouts), run as it was built; records metrics."""
    from sieve.agent.factory import adopted_config
    from sieve.agent.loop import run_request

    index = state.index(request.collection)
    if index.count() == 0:
        from sieve.core.errors import EmptyCorpus

        raise EmptyCorpus(f"Expected an indexed collection, got {index.name!r} with no chunks; POST documents first")
    # Policies are built once per app from the server's defaults: what a request may change (k, budget,
    # turns, wall cap) reaches the policy through the episode's config, not the policy's.
    # The collection's adopted run (sieve adopt) is its learned policy unless the server names one.
    policy = state.policy(request.policy, adopted_config(index, state.agent_defaults))
    trace = run_request(index, request, policy=policy, on_event=on_event, cancel=cancel)
    state.metrics.observe_trace(trace)
    return trace


def cancel_episode(state: AppState, cancel: CancelToken, reason: str) -> None:
    """Cancel a running episode (once) and count why."""
    if cancel.cancel(reason):
        state.metrics.agent_cancelled.labels(reason=reason).inc()


def _episode_work(
    state: AppState, request: AgentRequest, cancel: CancelToken, slot: Slot | None, on_event: Any | None = None
) -> Awaitable[Trace]:
    return run_blocking(
        run_episode,
        state,
        request,
        on_event,
        cancel,
        timeout=episode_time_s(request),
        slot=slot,
        on_timeout=lambda: cancel_episode(state, cancel, "timeout"),
    )


async def run_episode_async(
    state: AppState, request: AgentRequest, *, receive: Receive | None = None, slot: Slot | None = None
) -> Trace:
    """One episode off the event loop; with ``receive``, a client that disconnects cancels it."""
    cancel = CancelToken()
    work = asyncio.ensure_future(_episode_work(state, request, cancel, slot))
    try:
        if receive is None:
            return await work
        return await _unless_disconnected(work, receive, lambda: cancel_episode(state, cancel, "disconnect"))
    finally:
        _give_up(work, slot)


def _give_up(work: asyncio.Future[Trace], slot: Slot | None) -> None:
    """Stop waiting for ``work``; a place its worker never took goes back (a task cancelled before
    its first step never runs its own clean-up)."""
    if not work.done():
        work.cancel()
        if slot is not None:
            slot.release_unless_running()


async def _unless_disconnected(
    work: asyncio.Future[Trace], receive: Receive, on_disconnect: Callable[[], None]
) -> Trace:
    # The request body has been read, so the next ASGI message can only be the disconnect.
    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(disconnected())
    try:
        done, _ = await asyncio.wait({work, watcher}, return_when=asyncio.FIRST_COMPLETED)
        if work in done:
            return work.result()
        on_disconnect()
        raise ClientClosedRequest("Expected the client to wait for its answer, got a disconnect; episode cancelled")
    finally:
        watcher.cancel()


async def stream_episode(
    state: AppState, request: AgentRequest, slot: Slot | None = None
) -> AsyncIterator[tuple[str, Any]]:
    """Yield ``("event", dict)`` for each agent event as it happens, then ``("trace", Trace)``.

    Errors raised by the episode (``SieveError``, timeouts) propagate from this iterator after
    the events already produced, so the caller can still end the stream with an error event.
    Closing the iterator early (the client disconnected) cancels the episode.
    """
    loop = asyncio.get_running_loop()
    cancel = CancelToken()
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    def on_event(event: dict[str, Any]) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, event)
        except RuntimeError:  # the loop closed (server shutting down): nobody is listening
            pass

    task = asyncio.ensure_future(_episode_work(state, request, cancel, slot, on_event))
    try:
        while True:
            getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
            if getter in done:
                yield "event", getter.result()
                continue
            getter.cancel()
            break
        # Events scheduled just before the episode returned are still queued: flush them in order.
        await asyncio.sleep(0)
        while not queue.empty():
            yield "event", queue.get_nowait()
        yield "trace", task.result()
    finally:
        if not task.done():  # the client went away: stop the episode at its next turn
            cancel_episode(state, cancel, "disconnect")
            _give_up(task, slot)


def progress_event(event: dict[str, Any]) -> dict[str, Any]:
    """An agent event as sent on ``/v1/search`` streams: tool names/params, result sizes, no chunk text.

    A result that showed no chunks (a prune, a finish, an empty search, an error) carries a short
    ``summary`` of what the tool told the model instead, e.g. which handles a prune freed.
    """
    if event.get("type") == "observation":
        return {**event, "results": [_result_out(r) for r in event.get("results", [])]}
    return dict(event)


def _result_out(result: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in result.items() if k != "content"}
    if not result.get("handles"):
        text = " ".join(str(result.get("content") or "").split())
        out["summary"] = text if len(text) <= 300 else text[:299] + "…"
    return out


def context1_events(event: dict[str, Any]) -> list[dict[str, Any]]:
    """Map one agent event to Context-1 stream events (``{"type", "data"}``); the end is handled by the route.

    Context-1 ``action`` data carries position-aligned ``tools`` (``{"name"}`` objects) and ``params``;
    ``observation`` data carries the ``sources`` (chunk ids) the step surfaced.
    """
    kind = event.get("type")
    if kind == "action":
        tools = [{"name": str(t)} if not isinstance(t, dict) else t for t in event.get("tools", [])]
        return [
            {
                "type": "action",
                "data": {
                    "tools": tools,
                    "params": list(event.get("params", [])),
                    "sources": [],
                    "turn": event.get("turn"),
                },
            }
        ]
    if kind == "observation":
        sources = [cid for r in event.get("results", []) for cid in r.get("chunk_ids", [])]
        sizes = [
            {
                "tool": r.get("tool"),
                "chunks": len(r.get("chunk_ids", [])),
                "tokens": r.get("tokens", 0),
                "error": r.get("error"),
            }
            for r in event.get("results", [])
        ]
        return [{"type": "observation", "data": {"sources": sources, "results": sizes, "turn": event.get("turn")}}]
    return []  # per-turn usage and the agent's own done are folded into the final usage/done events


__all__ = [
    "build_request",
    "cancel_episode",
    "check_filters",
    "context1_events",
    "episode_time_s",
    "progress_event",
    "run_episode",
    "run_episode_async",
    "stream_episode",
]
