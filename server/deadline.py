"""One deadline per request: ``SIEVE_REQUEST_TIMEOUT_S`` counted from its arrival, queue time included.

Before (issue 42), each step had its own clock: a request could wait ``SIEVE_QUEUE_WAIT_S`` for
an admission place and then still get the whole timeout for its work, so a ``504`` arrived
seconds after the limit it names. :class:`RequestDeadline` stamps the deadline when the request
arrives (a context variable, seen by everything the request's task runs); the admission queue
and :func:`~sieve.server.deps.run_blocking` wait at most for what is left of it, so the answer
(result or ``504``) comes by the deadline plus the event loop's reaction time.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

_DEADLINE: ContextVar[float | None] = ContextVar("sieve_request_deadline", default=None)


def time_left(limit_s: float) -> float:
    """Seconds this step may take: ``limit_s``, or less when the request's deadline comes sooner (>= 0).

    Outside a request (start-up work) there is no deadline and ``limit_s`` stands.

    Example:
        >>> time_left(5.0)
        5.0
    """
    deadline = _DEADLINE.get()
    if deadline is None:
        return limit_s
    return max(0.0, min(limit_s, deadline - time.monotonic()))


def extend_deadline(limit_s: float, timeout_s: float) -> None:
    """Give the current request ``limit_s`` from its arrival instead of its ``timeout_s`` (the one
    :class:`RequestDeadline` gave it), when that is longer: an LLM episode's own time limit,
    ``SIEVE_MAX_WALL_S``, may exceed ``SIEVE_REQUEST_TIMEOUT_S``. Call it from the route, before any
    waiting, so that it covers the queue wait too."""
    deadline = _DEADLINE.get()
    if deadline is not None and limit_s > timeout_s:
        _DEADLINE.set(deadline + (limit_s - timeout_s))


class RequestDeadline:
    """ASGI: give each HTTP request its deadline, ``timeout_s`` after it arrives."""

    def __init__(self, app: ASGIApp, timeout_s: float) -> None:
        self.app = app
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = _DEADLINE.set(time.monotonic() + self.timeout_s)
        try:
            await self.app(scope, receive, send)
        finally:
            _DEADLINE.reset(token)


__all__ = ["RequestDeadline", "extend_deadline", "time_left"]
