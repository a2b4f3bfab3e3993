"""Admission control: a bounded number of episodes (and retrievals) at once, a short queue, fast 503 beyond.

Every agentic request used to be accepted and run, so under load every client's latency grew
together. A :class:`Gate` admits ``limit`` jobs at once and lets at most ``queue`` more wait (each
for at most ``wait_s``); anything beyond is refused at once with ``503 overloaded`` and a
``Retry-After`` estimated from how long recent jobs held their place. Accepted requests thus see a
bounded latency, refused ones an immediate answer.

:class:`ShedWhenFull` refuses requests for a full gate before FastAPI parses and validates them,
so that under overload a refusal costs the server as little as possible.

A place is a :class:`Slot`, held until the *work* ends, not the request: a request that timed out
(504) or whose client left still holds its place until its worker thread has stopped (at the
agent's next turn boundary), so abandoned threads can never pile up beyond the limit.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from typing import TYPE_CHECKING

from sieve.server.deadline import time_left
from sieve.server.errors import Overloaded, RequestTimeout
from sieve.server.problems import PROBLEM_MEDIA_TYPE, sieve_error_body

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from sieve.server.metrics import Metrics


class Slot:
    """One admitted job's place in its gate; released exactly once, from any thread.

    States: ``held`` (admitted, no worker yet), ``running`` (a worker thread owns it and releases
    it when it returns), ``released``.
    """

    def __init__(self, gate: Gate, loop: asyncio.AbstractEventLoop) -> None:
        self._gate = gate
        self._loop = loop
        self._lock = threading.Lock()
        self._state = "held"
        self._since = time.monotonic()

    def begin(self) -> bool:
        """Called by the worker as it starts: False when the request already gave the place up."""
        with self._lock:
            if self._state != "held":
                return False
            self._state = "running"
            return True

    def release(self) -> None:
        with self._lock:
            if self._state == "released":
                return
            self._state = "released"
        self._gate._release(self._loop, time.monotonic() - self._since)

    def release_unless_running(self) -> None:
        """Give the place up if no worker took it (the request ended before its work began)."""
        with self._lock:
            if self._state != "held":
                return
            self._state = "released"
        self._gate._release(self._loop, time.monotonic() - self._since)


class Gate:
    """At most ``limit`` jobs at once and ``queue`` waiting; refuse the rest at once.

    Example:
        >>> gate = Gate("episodes", limit=2, queue=1, wait_s=5.0)  # doctest: +SKIP
        >>> slot = await gate.enter()  # raises Overloaded when full  # doctest: +SKIP
    """

    def __init__(self, name: str, *, limit: int, queue: int, wait_s: float, metrics: Metrics | None = None) -> None:
        self.name = name
        self.limit = limit
        self.queue = queue
        self.wait_s = wait_s
        self.metrics = metrics
        self._free = limit
        self._waiters: list[asyncio.Future[None]] = []  # FIFO; touched on the event loop only
        self._hold_s = 1.0  # moving average of how long a place is held, for Retry-After

    @property
    def running(self) -> int:
        return self.limit - self._free

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @property
    def full(self) -> bool:
        """No free place and no room in the queue: :meth:`enter` would refuse at once."""
        return self._free == 0 and len(self._waiters) >= self.queue

    def refusal(self) -> Overloaded:
        """The error :meth:`enter` raises when the gate is full (counted as a rejection)."""
        return self._refuse(f"{self.running} running and {self.waiting} queued (the most this server admits)")

    def retry_after_s(self) -> int:
        """Seconds until a place is likely free: the queue ahead, at the recent pace (1-60)."""
        return max(1, min(60, math.ceil(self._hold_s * (self.waiting + 1) / self.limit)))

    async def enter(self) -> Slot:
        """A place for one job: at once if free, after a short wait in the queue, else :class:`Overloaded`."""
        loop = asyncio.get_running_loop()
        if self._free > 0 and not self._waiters:
            self._free -= 1
            self._observe()
            return Slot(self, loop)
        if len(self._waiters) >= self.queue:
            raise self.refusal()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append(waiter)
        self._observe()
        wait_s = time_left(self.wait_s)  # never past the request's own deadline
        try:
            await asyncio.wait_for(asyncio.shield(waiter), wait_s)
        except asyncio.TimeoutError:
            if not waiter.done():
                self._waiters.remove(waiter)
                self._observe()
                if wait_s < self.wait_s:
                    raise RequestTimeout(
                        f"Expected the request to finish within SIEVE_REQUEST_TIMEOUT_S, got it spent "
                        f"waiting {wait_s:.2f} s for a place ({self.name}: {self.running} running); retry later"
                    ) from None
                raise self._refuse(f"no place freed up within {self.wait_s:g} s") from None
        except BaseException:  # the request was cancelled while queued: pass on a place it was given
            if waiter.done() and not waiter.cancelled():
                self._hand_over()
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            self._observe()
            raise
        return Slot(self, loop)

    def _refuse(self, why: str) -> Overloaded:
        if self.metrics is not None:
            self.metrics.rejected.labels(gate=self.name).inc()
        retry = self.retry_after_s()
        return Overloaded(
            f"Expected a free place for {self.name} within the server's limits, got {why}; "
            f"retry after {retry} s (raise SIEVE_MAX_{self.name.upper()} or the queue size to admit "
            f"more)",
            retry_after_s=retry,
        )

    def _release(self, loop: asyncio.AbstractEventLoop, held_s: float) -> None:
        def give_back() -> None:
            self._hold_s = 0.8 * self._hold_s + 0.2 * held_s
            self._hand_over()

        if _on_loop(loop):
            give_back()
        else:
            try:
                loop.call_soon_threadsafe(give_back)
            except RuntimeError:  # the loop is closed: the server is gone, and its gate with it
                pass

    def _hand_over(self) -> None:
        """A place came free: the oldest waiter takes it, or it goes back to the pool."""
        while self._waiters:
            waiter = self._waiters.pop(0)
            if not waiter.done():
                waiter.set_result(None)
                self._observe()
                return
        self._free += 1
        self._observe()

    def _observe(self) -> None:
        if self.metrics is not None:
            self.metrics.admission_running.labels(gate=self.name).set(self.running)
            self.metrics.admission_queued.labels(gate=self.name).set(self.waiting)


class ShedWhenFull:
    """ASGI: answer ``503 overloaded`` for a full gate's routes before any parsing or validation.

    Under overload most requests are refused; each refusal should cost the server next to
    nothing, so it is decided here from the path alone (the body is drained unread, keeping the
    connection usable). A request that passes may still be refused by the route's own
    :meth:`Gate.enter` when the gate fills meanwhile.

    Args:
        app: the wrapped ASGI app.
        routes: ``POST`` path -> the gate that admits it.
    """

    def __init__(self, app: ASGIApp, routes: dict[str, Gate]) -> None:
        self.app = app
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gate = self.routes.get(scope.get("path", "")) if scope["type"] == "http" else None
        if gate is None or scope.get("method") != "POST" or not gate.full:
            await self.app(scope, receive, send)
            return
        exc = gate.refusal()
        message = await receive()
        while message["type"] == "http.request" and message.get("more_body", False):
            message = await receive()
        body = json.dumps(sieve_error_body(exc)).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 503,
                "headers": [
                    (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", str(exc.retry_after_s).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


__all__ = ["Gate", "ShedWhenFull", "Slot"]
