"""Write-behind: writes run in order in one thread, at most ``depth`` behind, and their errors reach the caller."""

from __future__ import annotations

import threading
import time

import pytest

from sieve.retriever.overlap import WriteBehind


def test_writes_run_in_order_in_one_thread_and_are_summed():
    seen: list[tuple[int, str]] = []

    def write(i: int) -> int:
        time.sleep(0.01 * (3 - i % 3))  # later writes are quicker: order must still hold
        seen.append((i, threading.current_thread().name))
        return i

    with WriteBehind(depth=2) as w:
        for i in range(6):
            w.submit(write, i)
        assert w.drain() == sum(range(6))
    assert [i for i, _ in seen] == list(range(6))
    assert len({name for _, name in seen}) == 1 and seen[0][1] != threading.current_thread().name


def test_the_caller_runs_ahead_by_at_most_depth_writes():
    release = threading.Event()
    started = []

    def slow(i: int) -> int:
        started.append(i)
        release.wait(5)
        return 1

    with WriteBehind(depth=1) as w:
        w.submit(slow, 0)  # returns at once: the write runs behind the caller
        t0 = time.perf_counter()
        threading.Timer(0.2, release.set).start()
        w.submit(slow, 1)  # waits for write 0 to finish first
        assert time.perf_counter() - t0 >= 0.15
        assert w.drain() == 2


def test_a_failed_write_is_raised_at_the_next_submit_and_later_ones_never_run():
    ran = []

    def write(i: int) -> int:
        ran.append(i)
        if i == 0:
            raise OSError("disk full")
        return 1

    with pytest.raises(OSError, match="disk full"), WriteBehind(depth=1) as w:
        w.submit(write, 0)
        w.submit(write, 1)  # raises write 0's error before queueing this one
    assert ran == [0]
    with pytest.raises(ValueError, match="depth >= 1"):
        WriteBehind(depth=0)
