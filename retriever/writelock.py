"""One writer per store: an inter-process lock (``filelock``) that every write path takes.

Chroma's embedded ``PersistentClient`` is not safe for several writing processes: two
``sieve index`` runs into one collection can leave embeddings that no longer read back. So every
write (each write of an index's :class:`~sieve.retriever.writer.IndexWriter`, ``delete_collection``,
and through them the CLI, the HTTP document routes and the Python API) holds the store's lock for
its whole run. A second writer logs who holds the lock and waits up to a timeout, then fails with
:class:`~sieve.core.errors.StoreLocked` naming the holder; two writers never interleave.

Readers never take the lock. The one thing a reader may write, the BM25 cache file it rebuilt,
it saves only when the lock is free at that instant (:meth:`WriteLock.try_hold`); otherwise the
writer saves it when it finishes. With a Chroma server the server arbitrates Chroma writes, but
the BM25 files beside ``$SIEVE_DATA_DIR`` are local, so the same lock (one per server URL)
protects them.

The lock is an OS file lock (``flock``): a writer killed with ``kill -9`` releases it with its
process, and a stale holder note left behind is simply overwritten by the next writer.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import sys
import threading
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from filelock import FileLock, Timeout

from sieve.core.errors import StoreLocked, StoreUnavailable

from pathlib import Path

if TYPE_CHECKING:
    from collections.abc import Iterator

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Holder:
    """Who holds a store's write lock (written beside the lock file by the holder)."""

    pid: int
    host: str
    command: str
    since: float  # time.time() when the lock was taken

    @classmethod
    def current(cls) -> Holder:
        return cls(pid=os.getpid(), host=socket.gethostname(), command=" ".join(sys.argv)[:300], since=time.time())

    def describe(self) -> str:
        """Example:
        >>> Holder(12, "box", "sieve index docs/", 0.0).describe().startswith("pid 12 on box (sieve index docs/)")
        True
        """
        started = time.strftime("%H:%M:%S", time.localtime(self.since))
        return f"pid {self.pid} on {self.host} ({self.command}), writing since {started}"


class WriteLock:
    """The write lock of one store, shared by every process and thread that writes to it.

    Re-entrant within a thread (a write that calls another write does not deadlock); other
    threads of the same process wait like other processes do (``filelock``'s per-path
    singleton with thread-local state over ``flock``).

    Args:
        path: the lock file (its folder is created).
        store: the store's location, for messages.
        timeout_s: how long :meth:`hold` waits for another writer by default.

    Example:
        >>> lock = WriteLock(Path(tmp) / "store.lock", "test store", timeout_s=5)  # doctest: +SKIP
        >>> with lock.hold():  # doctest: +SKIP
        ...     write_things()
    """

    def __init__(self, path: Path, store: str, *, timeout_s: float) -> None:
        if timeout_s < 0:
            raise ValueError(f"Expected a write-lock timeout >= 0 s, got {timeout_s}")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.store = store
        self.timeout_s = timeout_s
        self.holder_path = path.with_name(path.name + ".holder.json")
        self._lock = FileLock(str(path), is_singleton=True)

    def holder(self) -> Holder | None:
        """The current holder as it described itself; None when unknown or no longer running."""
        try:
            data = json.loads(self.holder_path.read_text(encoding="utf-8"))
            holder = Holder(**data)
        except (OSError, ValueError, TypeError):
            return None
        if holder.host == socket.gethostname() and not _pid_alive(holder.pid):
            return None  # left behind by a writer that was killed: the OS already freed its lock
        return holder

    def _acquire(self, timeout: float) -> None:
        """``filelock``'s acquire, with a lock path that is not a file (a directory in its place) named.

        An empty directory there holds nothing and is removed; anything else is the user's to move.
        """
        try:
            self._lock.acquire(timeout=timeout)
        except Timeout:
            raise
        except OSError as exc:
            if not clear_empty_dir(self.path):
                raise damaged_file(self.path, "lock", exc) from exc
            self._lock.acquire(timeout=timeout)

    @contextlib.contextmanager
    def hold(self, timeout_s: float | None = None, *, stop: threading.Event | None = None) -> Iterator[None]:
        """Hold the lock for a write; wait (logging who holds it) at most ``timeout_s`` seconds, and
        no longer than until ``stop`` is set.

        Raises:
            StoreLocked: another writer held the lock for the whole wait (or until ``stop``).
        """
        timeout = self.timeout_s if timeout_s is None else timeout_s
        try:
            self._acquire(0)
        except Timeout:
            who = self.holder()
            logger.warning(
                "Another writer holds the store %s (%s); waiting up to %g s for it to finish",
                self.store,
                who.describe() if who else "holder unknown",
                timeout,
            )
            try:
                self._wait(timeout, stop)
            except Timeout:
                who = self.holder()
                raise StoreLocked(
                    f"Expected to be the only writer of the store {self.store}, got another writer holding it "
                    f"for more than {timeout:g} s: {who.describe() if who else 'holder unknown'} "
                    f"(lock {self.path}); retry when it has finished, or raise SIEVE_WRITE_LOCK_TIMEOUT_S"
                ) from None
        outermost = self._lock.lock_counter == 1
        try:
            if outermost:
                self._write_holder()
            yield
        finally:
            if outermost:
                with contextlib.suppress(OSError):
                    self.holder_path.unlink()
            self._lock.release()

    def _wait(self, timeout: float, stop: threading.Event | None) -> None:
        if stop is None:
            self._acquire(timeout)
            return
        deadline = time.monotonic() + timeout
        while True:  # in short waits, so that a caller who gives up is let go at once
            if stop.is_set():
                raise Timeout(str(self.path))
            try:
                self._acquire(max(0.0, min(0.1, deadline - time.monotonic())))
                return
            except Timeout:
                if time.monotonic() >= deadline:
                    raise

    @contextlib.contextmanager
    def try_hold(self) -> Iterator[bool]:
        """Hold the lock only if it is free right now (or already held by this thread); yields whether held."""
        try:
            self._acquire(0)
        except Timeout:
            yield False
            return
        try:
            yield True
        finally:
            self._lock.release()

    def _write_holder(self) -> None:
        tmp = self.holder_path.with_name(f"{self.holder_path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(asdict(Holder.current())), encoding="utf-8")
        tmp.replace(self.holder_path)


def damaged_file(path: Path, role: str, exc: OSError) -> StoreUnavailable:
    """The error for a file of the lock folder (``lock``, ``token``) that is not what Sieve wrote there.

    Example:
        >>> damaged_file(Path("/d/locks/s.token"), "token", IsADirectoryError(21, "Is a directory")).code
        'store_unavailable'
    """
    got = "a directory holding files" if path.is_dir() else f"a file that cannot be used ({exc.strerror or exc})"
    return StoreUnavailable(
        f"Expected the store's {role} file {path} to be a file Sieve can read and replace, got {got}; "
        f"the store's data is intact: run `sieve collections --check --repair`, or remove {path}"
    )


def clear_empty_dir(path: Path) -> bool:
    """Remove an empty directory standing where a lock-folder file belongs (it holds nothing); whether removed."""
    try:
        path.rmdir()
    except OSError:
        return False
    logger.warning("Removed an empty directory standing in place of the store's file %s", path)
    return True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


__all__ = ["Holder", "WriteLock", "clear_empty_dir", "damaged_file"]
