"""Write-behind: store writes in one background thread while the caller embeds the next batch.

On a GPU, embedding a batch of 256 chunks takes ~0.05 s and writing it to Chroma far longer (issue
26: 40 chunks/s into the embedded store before its write path was fixed); done one after the other,
the device waits for every write. :class:`WriteBehind` runs writes in order, in one thread (one
writer per store still holds: the caller keeps the store's write lock for the whole run), at most
``depth`` behind the caller, so at most ``depth`` batches of vectors are held in memory.

A write's exception reaches the caller at its next :meth:`~WriteBehind.submit` or at
:meth:`~WriteBehind.drain`: nothing is lost silently.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable
    from concurrent.futures import Future
    from types import TracebackType


class WriteBehind:
    """Ordered background writes, each returning a count (chunks written) that :attr:`done` sums.

    Example:
        >>> with WriteBehind(depth=1) as w:
        ...     w.submit(len, [1, 2]); w.submit(len, [3])
        ...     w.drain()
        3
    """

    def __init__(self, depth: int = 1) -> None:
        if depth < 1:
            raise ValueError(f"Expected depth >= 1, got {depth}")
        self.depth = depth
        self.done = 0
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sieve-write")
        self._pending: deque[Future[int]] = deque()

    def submit(self, fn: Callable[..., int], *args: Any) -> None:
        """Queue ``fn(*args)`` after the writes before it, first waiting while ``depth`` are outstanding."""
        while len(self._pending) >= self.depth:
            self.done += self._pending.popleft().result()
        self._pending.append(self._pool.submit(fn, *args))

    def drain(self) -> int:
        """Wait for every queued write; returns :attr:`done`, the counts of all writes so far."""
        while self._pending:
            self.done += self._pending.popleft().result()
        return self.done

    def close(self) -> None:
        """Wait for the writes already started (never leave one half-done), drop the queued ones."""
        for fut in self._pending:
            fut.cancel()
        self._pool.shutdown(wait=True)
        self._pending.clear()

    def __enter__(self) -> WriteBehind:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


__all__ = ["WriteBehind"]
