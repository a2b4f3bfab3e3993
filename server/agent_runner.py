"""Running agent episodes for HTTP requests: config from settings + request, a worker thread, event relay.

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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sieve.agent.cancel import CancelToken
from sieve.core.errors import InvalidInput
from sieve.retriever.base import validate_k
from sieve.server.deps import run_blocking
from sieve.server.errors import ClientClosedRequest

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from starlette.types import Receive

    from sieve.agent import AgentConfig, Trace
    from sieve.server.admission import Slot
    from sieve.server.state import AppState

logger = logging.getLogger(__name__)


@dataclass
class EpisodeRequest:
    """What an HTTP caller may choose about one episode (None = the server's default)."""

    query: str
    collection: str | None = None
    k: int | None = None
    budget_tokens: int | None = None
    max_turns: int | None = None
    policy: str | None = None
    filters: dict[str, Any] | None = None
    rollouts: int = 1
    group_by_doc: bool = False
    # LLM policies (None = the server's setting; a request may lower the caps, never raise them)
    reasoning_effort: str | None = None
    tool_choice: str | None = None
    max_new_tokens: int | None = None
    max_tool_calls: int | None = None
    max_wall_s: float | None = None


def _at_most(name: str, asked: float | None, cap: float) -> float:
    if asked is not None and asked > cap:
        raise InvalidInput(f"Expected {name} <= {cap} (SIEVE_{name.upper()}), got {asked}")
    return cap if asked is None else asked


def is_llm_policy(name: str) -> bool:
    """Whether the policy registered as ``name`` runs a language model (its episodes get ``SIEVE_MAX_WALL_S``)."""
    from sieve.agent.factory import POLICIES

    spec = POLICIES.get(name)
    return spec is not None and spec.requires != "none"


def episode_time_s(state: AppState, req: EpisodeRequest) -> float:
    """How long ``req``'s episode may run: an LLM policy's ``max_wall_s`` (setting or request), else the
    request timeout. The request's deadline is moved to match (:func:`~sieve.server.deadline.extend_deadline`)."""
    s = state.settings
    name = req.policy or s.policy
    if not is_llm_policy(name):
        return s.request_timeout_s
    return float(_at_most("max_wall_s", req.max_wall_s, s.max_wall_s))


def agent_config(state: AppState, req: EpisodeRequest | None = None) -> AgentConfig:
    """The episode's ``AgentConfig``: settings defaults, request overrides, capped by the settings' maxima."""
    s = state.settings
    req = req or EpisodeRequest(query="")
    k = validate_k(req.k or s.k, s.max_request_k)
    budget = req.budget_tokens or s.budget_tokens
    if budget > s.max_budget_tokens:
        raise InvalidInput(f"Expected budget_tokens <= {s.max_budget_tokens}, got {budget}")
    max_turns = req.max_turns or s.max_turns
    if max_turns > s.max_turns:
        raise InvalidInput(f"Expected max_turns <= {s.max_turns} (SIEVE_MAX_TURNS), got {max_turns}")
    llm: dict[str, Any] = {
        "max_new_tokens": int(_at_most("max_new_tokens", req.max_new_tokens, s.max_new_tokens)),
        "max_tool_calls": int(_at_most("max_tool_calls", req.max_tool_calls, s.max_tool_calls)),
    }
    if req.reasoning_effort is not None:
        llm["reasoning_effort"] = req.reasoning_effort
    if req.tool_choice is not None:
        llm["tool_choice"] = req.tool_choice
    # The agent checks its wall clock every turn: stopping there frees the worker thread that a
    # request timeout otherwise only abandons.
    return s.agent_config(k=k, budget_tokens=budget, max_turns=max_turns, max_wall_s=episode_time_s(state, req), **llm)


def policy_name(state: AppState, requested: str | None) -> str:
    """The policy to run, if this server can: LLM policies need their model configured."""
    return state.settings.require_policy(requested or state.settings.policy)


def check_filters(index: Any, where: dict[str, Any] | None) -> None:
    """Reject a malformed Chroma ``where`` up front: inside an episode it would only empty every search."""
    if where is not None:
        index.check_filter(where)  # InvalidInput for a filter the store cannot run


def run_episode(
    state: AppState, req: EpisodeRequest, on_event: Any | None = None, cancel: CancelToken | None = None
) -> Trace:
    """Blocking: one episode (or ``rollouts`` fused ones) for ``req``; records metrics."""
    from sieve.agent import SearchAgent
    from sieve.agent.factory import adopted_config

    cfg = agent_config(state, req)
    name = policy_name(state, req.policy)
    index = state.index(req.collection)
    if index.count() == 0:
        from sieve.core.errors import EmptyCorpus

        raise EmptyCorpus(f"Expected an indexed collection, got {index.name!r} with no chunks; POST documents first")
    # Policies are built once per app from the server defaults: what a request may change (k, budget,
    # turns, wall cap) reaches the policy through the episode's config, not the policy's.
    # The collection's adopted run (sieve adopt) is its learned policy unless the server names one.
    agent = SearchAgent(index, state.policy(name, adopted_config(index, agent_config(state))), cfg)
    trace = agent.run_fused(
        req.query, req.rollouts, on_event=on_event, where=req.filters, cancel=cancel, group_by_doc=req.group_by_doc
    )
    state.metrics.observe_trace(trace)
    return trace


def cancel_episode(state: AppState, cancel: CancelToken, reason: str) -> None:
    """Cancel a running episode (once) and count why."""
    if cancel.cancel(reason):
        state.metrics.agent_cancelled.labels(reason=reason).inc()


def _episode_work(
    state: AppState, req: EpisodeRequest, cancel: CancelToken, slot: Slot | None, on_event: Any | None = None
) -> Awaitable[Trace]:
    return run_blocking(
        run_episode,
        state,
        req,
        on_event,
        cancel,
        timeout=episode_time_s(state, req),
        slot=slot,
        on_timeout=lambda: cancel_episode(state, cancel, "timeout"),
    )


async def run_episode_async(
    state: AppState, req: EpisodeRequest, *, receive: Receive | None = None, slot: Slot | None = None
) -> Trace:
    """One episode off the event loop; with ``receive``, a client that disconnects cancels it."""
    cancel = CancelToken()
    work = asyncio.ensure_future(_episode_work(state, req, cancel, slot))
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
    state: AppState, req: EpisodeRequest, slot: Slot | None = None
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

    task = asyncio.ensure_future(_episode_work(state, req, cancel, slot, on_event))
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
    "EpisodeRequest",
    "agent_config",
    "cancel_episode",
    "episode_time_s",
    "is_llm_policy",
    "check_filters",
    "context1_events",
    "policy_name",
    "progress_event",
    "run_episode",
    "run_episode_async",
    "stream_episode",
]
