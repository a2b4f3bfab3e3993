"""Stopping an episode from outside: a cancel token the loop checks between turns.

Whoever no longer wants an episode's result (an HTTP client that disconnected, a request past its
deadline, a user's Ctrl-C handler) calls :meth:`CancelToken.cancel`. The loop ends the episode at
its next turn boundary with ``stop_reason="cancelled"`` (the trace is still complete and valid);
a backend that can abort a call in flight (an HTTP request to a model server, a local
``generate``) registers a callback with :meth:`CancelToken.on_cancel` and raises
:class:`Cancelled` from that call.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

logger = logging.getLogger(__name__)


class Cancelled(Exception):
    """Raised by a backend whose call was aborted because the episode's token was cancelled."""


class CancelToken:
    """Set once, from any thread; read by the loop and by backends.

    Example:
        >>> token = CancelToken()
        >>> seen = []
        >>> undo = token.on_cancel(lambda: seen.append("aborted"))
        >>> token.cancel("disconnect")
        True
        >>> token.cancelled, token.reason, seen
        (True, 'disconnect', ['aborted'])
        >>> token.cancel("timeout")  # only the first cancel counts
        False
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self.reason: str | None = None

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self, reason: str = "cancelled") -> bool:
        """Cancel (once); returns whether this call did it. Registered callbacks run here."""
        with self._lock:
            if self._event.is_set():
                return False
            self.reason = reason
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            try:
                fn()
            except Exception:  # an abort that fails leaves the call to finish on its own
                logger.exception("Cancel callback failed")
        return True

    def on_cancel(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Run ``fn`` when cancelled (at once if already); returns a function that unregisters it."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(fn)
                return lambda: self._remove(fn)
        fn()
        return lambda: None

    def _remove(self, fn: Callable[[], None]) -> None:
        with self._lock:
            if fn in self._callbacks:
                self._callbacks.remove(fn)


__all__ = ["CancelToken", "Cancelled"]
