"""The admission gate on its own (asyncio, no server): bounds, queue, timeouts, hand-over, cancellation."""

from __future__ import annotations

import asyncio
import threading

import pytest

from sieve.server.admission import Gate
from sieve.server.errors import Overloaded, http_status


def test_gate_admits_queues_refuses_and_hands_places_over() -> None:
    async def main() -> None:
        gate = Gate("episodes", limit=2, queue=1, wait_s=5.0)
        a, b = await gate.enter(), await gate.enter()
        assert (gate.running, gate.waiting) == (2, 0)
        queued = asyncio.ensure_future(gate.enter())
        await asyncio.sleep(0)
        assert gate.waiting == 1
        with pytest.raises(Overloaded) as info:  # the queue is full: refused at once
            await gate.enter()
        assert http_status(info.value) == 503 and info.value.retry_after_s >= 1
        # A worker thread releases its place; the oldest waiter gets it, nothing is counted twice.
        threading.Thread(target=a.release).start()
        c = await asyncio.wait_for(queued, 5)
        a.release()  # idempotent
        assert (gate.running, gate.waiting) == (2, 0)
        for slot in (b, c):
            slot.release()
        assert (gate.running, gate.waiting) == (0, 0)

    asyncio.run(main())


def test_a_queued_request_times_out_or_is_cancelled_without_leaking_a_place() -> None:
    async def main() -> None:
        gate = Gate("retrievals", limit=1, queue=2, wait_s=0.2)
        held = await gate.enter()
        with pytest.raises(Overloaded, match="within 0.2 s"):
            await gate.enter()
        waiter = asyncio.ensure_future(gate.enter())
        await asyncio.sleep(0)
        waiter.cancel()  # the client left while queued
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert gate.waiting == 0
        held.release()
        again = await gate.enter()  # the place is free again
        assert gate.running == 1
        again.release_unless_running()  # given up before any worker began it
        assert gate.running == 0
        started = await gate.enter()
        assert started.begin() and not started.begin()
        started.release_unless_running()  # a running worker keeps its place...
        assert gate.running == 1
        started.release()  # ...until it returns
        assert gate.running == 0

    asyncio.run(main())
