"""One process's handle on a store: its Chroma client, reopened whenever another process wrote.

Chroma's embedded ``PersistentClient`` keeps each collection's vector index (HNSW) in memory and
never looks at the disk again: a long-lived process (``sieve serve``) does not see vectors that
another process (``sieve index``) added, and, worse, when it then writes itself it saves its stale
index over the other process's, and those vectors no longer read back (Chroma's "Error finding
id"). The embedded client is built for one process (Chroma's docs say so), so Sieve makes every
process behave as the only one, one write at a time:

* every write holds the store's :class:`~sieve.retriever.writelock.WriteLock` (one per *real*
  path of the store: relative, absolute and symlinked spellings of a data folder share it);
* a writer bumps the store's *token*, a small file beside the lock, before and after it writes;
* every user of the store, reader or writer, goes through :meth:`StoreHandle.session`, which
  compares the token with the one its client was opened at and, when another process changed
  it, closes the client and opens a fresh one (which reads what is on disk) before going on.
  A writer does so under the lock, so it never writes from a stale index; a reader waits until the
  other writer has released the lock (answering meanwhile from what it had), so that a long write
  costs it one reopen, not one per batch.

Creating a new store (Chroma's SQLite schema) runs under the lock too, and is marked done by a
``.ready`` file, so two processes creating one store never race. A Chroma server (``HttpClient``)
arbitrates its own clients: its handle never reopens.

One handle per store per process (:func:`open_store`): Chroma shares one client system per path,
so two handles of one path could not reopen independently.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from sieve.core.errors import InvalidInput, StoreLocked, StoreUnavailable
from sieve.retriever.writelock import WriteLock, clear_empty_dir, damaged_file

if TYPE_CHECKING:
    from collections.abc import Iterator

    from sieve.retriever.config import RetrieverConfig

logger = logging.getLogger(__name__)


def store_location(config: RetrieverConfig) -> str:
    """The store's identity: the Chroma server URL, or the *real* path of the embedded folder.

    Example:
        >>> store_location(RetrieverConfig(data_dir=Path("/data"), chroma_url="http://h:8000"))  # doctest: +SKIP
        'http://h:8000'
    """
    return config.chroma_url or os.path.realpath(config.data_dir / "chroma")


def store_tag(config: RetrieverConfig) -> str:
    """10 hex digits naming the store in file names (lock, token, BM25 caches)."""
    return hashlib.sha256(store_location(config).encode()).hexdigest()[:10]


def _locks_dir(config: RetrieverConfig) -> Path:
    return Path(os.path.realpath(config.data_dir)) / "locks"


def lock_folder_paths(config: RetrieverConfig) -> dict[str, Path]:
    """The store's files in the lock folder, by role: ``lock`` (the write lock), ``token`` (bumped by
    every write), ``ready`` (the store's schema exists). ``sieve collections --check`` inspects them."""
    stem = _locks_dir(config) / f"store-{store_tag(config)}"
    return {role: stem.with_name(f"{stem.name}.{role}") for role in ("lock", "token", "ready")}


def store_write_lock(config: RetrieverConfig, timeout_s: float | None = None) -> WriteLock:
    """The write lock of the configured store (one per embedded folder or Chroma server URL)."""
    return WriteLock(
        lock_folder_paths(config)["lock"],
        store_location(config),
        timeout_s=config.write_lock_timeout_s if timeout_s is None else timeout_s,
    )


class StoreHandle:
    """This process's client of one store; build with :func:`open_store`.

    Args:
        config: where the store is (``data_dir`` or ``chroma_url``) and how long to wait for its lock.
    """

    def __init__(self, config: RetrieverConfig | None, *, client: Any | None = None) -> None:
        self.config = config
        self._client: Any | None = client
        self.embedded = config is not None and not config.chroma_url  # only these ever reopen
        if config is None:  # a bare client made elsewhere: nothing on disk to watch
            self.location = "a Chroma client passed in"
            self._token_path = self._ready_path = Path(os.devnull)
        else:
            self.location = store_location(config)
            paths = lock_folder_paths(config)
            self._token_path, self._ready_path = paths["token"], paths["ready"]
        self._cond = threading.Condition(threading.Lock())
        self._seen = ""  # the token the client was opened at (or this process last wrote)
        self._users = 0  # sessions in progress, all threads
        self._reopening = False
        self._local = threading.local()  # this thread's session depth: nested sessions never wait
        self.epoch = 0  # +1 per (re)open: a ChromaStore re-fetches its collection when it changes
        self._write_lock: WriteLock | None = None
        self.reopens = 0

    @classmethod
    def wrapping(cls, client: Any) -> StoreHandle:
        """A handle on a client made elsewhere (a bare Chroma client): used as it is, never reopened."""
        return cls(None, client=client)

    # -- the token ------------------------------------------------------------------------------
    def token(self) -> str:
        """The store's current write token ("" before any write recorded one).

        A token file Sieve did not write is read for what it is, never trusted to be text: bytes
        that are not UTF-8 (a damaged or hand-edited data folder) read as a token like any other,
        so a reader reopens once (always safe) and the next write replaces it. A directory in its
        place reads as no token: no write can land while it stands (:meth:`mark_written` must
        replace it first). A file that cannot be read at all (permissions) would hide other
        processes' writes, so it is :class:`~sieve.core.errors.StoreUnavailable`, naming the path and the fix.
        """
        try:
            return self._token_path.read_bytes().decode("utf-8", errors="replace")
        except (FileNotFoundError, IsADirectoryError):
            return ""
        except OSError as exc:
            raise damaged_file(self._token_path, "token", exc) from exc

    def mark_written(self) -> None:
        """Record a write (call under the write lock, before and after writing): every other
        process's next session reopens its client; this one's goes on with its own."""
        if not self.embedded:
            return
        token = uuid.uuid4().hex
        self._token_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._token_path.with_name(f"{self._token_path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(token, encoding="utf-8")
        with self._cond:  # sessions compare the token under this lock: none sees the file ahead of _seen
            try:
                tmp.replace(self._token_path)
            except OSError as exc:  # a directory in the token's place: removed if empty, else named
                if not clear_empty_dir(self._token_path):
                    tmp.unlink(missing_ok=True)
                    raise damaged_file(self._token_path, "token", exc) from exc
                tmp.replace(self._token_path)
            self._seen = token

    # -- sessions -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def session(self) -> Iterator[Any]:
        """The Chroma client, current with the store, for one short use (no yielding to other code).

        Waits only while this handle reopens (which waits for the sessions in progress to end).
        """
        depth = getattr(self._local, "depth", 0)
        if depth:  # nested in this thread's own session: reopening now would deadlock on ourselves
            self._local.depth = depth + 1
            try:
                yield self._client
            finally:
                self._local.depth = depth
            return
        with self._cond:
            while self._reopening:
                self._cond.wait()
            stale = self._client is None or (
                self.embedded and self.token() != self._seen and not self._another_writer_busy()
            )
            if stale:
                self._reopening = True  # new sessions wait; the ones in progress finish first
                while self._users:
                    self._cond.wait()
            else:
                self._users += 1
                client = self._client
        if stale:
            try:
                self._reopen()
            finally:
                with self._cond:
                    self._reopening = False
                    self._cond.notify_all()
                    if self._client is not None:
                        self._users += 1
                    client = self._client
        self._local.depth = 1
        try:
            yield client
        finally:
            self._local.depth = 0
            with self._cond:
                self._users -= 1
                if not self._users:
                    self._cond.notify_all()

    def _another_writer_busy(self) -> bool:
        """Whether another writer holds the store's lock right now (this thread's own hold never counts).

        A reader then keeps its client until that write is over (its last token bump comes with it):
        reopening after every batch of a long ``sieve index`` would reload the vector index from disk
        each time and stall the server, for a view the writer has not finished. A writer holds the
        lock itself, so it always reopens before writing.
        """
        if self._write_lock is None:
            self._write_lock = store_write_lock(self.config)  # type: ignore[arg-type]
        with self._write_lock.try_hold() as held:
            return not held

    @property
    def client(self) -> Any:
        """The current client, for callers that use it at once (it is replaced when another process writes)."""
        with self.session() as client:
            return client

    def _reopen(self) -> None:
        token = self.token()  # read before opening: a write that lands meanwhile changes it again
        old, self._client = self._client, None
        if old is not None:
            with contextlib.suppress(Exception):
                old.close()  # the last client of this path: Chroma drops its system and in-memory indexes
            logger.info("Store %s was written by another process; reopened its Chroma client", self.location)
            self.reopens += 1
        self._client = self._open()
        self._seen = token
        self.epoch += 1

    def _open(self) -> Any:
        import chromadb
        from chromadb.config import Settings

        settings = Settings(anonymized_telemetry=False)
        if self.config is None:
            raise StoreUnavailable(f"Expected a live Chroma client, got {self.location} that was closed")
        try:
            if not self.embedded:
                url = urlparse(self.config.chroma_url)
                if url.scheme not in ("http", "https") or not url.hostname:
                    raise InvalidInput(
                        f"Expected a Chroma URL like http://127.0.0.1:8000, got {self.config.chroma_url!r}"
                    )
                return chromadb.HttpClient(
                    host=url.hostname,
                    port=url.port or (443 if url.scheme == "https" else 8000),
                    ssl=url.scheme == "https",
                    settings=settings,
                )
            with self._created():
                return chromadb.PersistentClient(path=self.location, settings=settings)
        except (InvalidInput, StoreLocked):
            raise
        except Exception as exc:  # chromadb raises plain ValueError/ConnectionError subclasses
            raise StoreUnavailable(f"Could not open the Chroma store at {self.location}: {exc}") from exc

    @contextlib.contextmanager
    def _created(self) -> Iterator[None]:
        """Run the first open of a store (which creates Chroma's SQLite schema) under the write lock.

        Once a store is marked ready, opening takes no lock. A store that predates the mark is
        opened under the lock once (or, if a writer of an older Sieve holds it for the whole wait,
        opened anyway: its schema exists), and marked.
        """
        if self._ready_path.exists():
            yield
            return
        Path(self.location).mkdir(parents=True, exist_ok=True)
        lock = store_write_lock(self.config)
        deadline = time.monotonic() + self.config.write_lock_timeout_s
        while True:
            with lock.try_hold() as held:
                if held or self._ready_path.exists():
                    yield
                    if held:
                        self._ready_path.touch()
                    return
            if time.monotonic() > deadline:
                if (Path(self.location) / "chroma.sqlite3").exists():
                    yield
                    return
                with lock.hold(0):  # raises StoreLocked naming the holder
                    pass
            time.sleep(0.05)


_HANDLES: dict[str, StoreHandle] = {}
_HANDLES_LOCK = threading.Lock()


def open_store(config: RetrieverConfig) -> StoreHandle:
    """The process's one handle on the configured store (made on first use; opens nothing yet)."""
    location = store_location(config)
    with _HANDLES_LOCK:
        handle = _HANDLES.get(location)
        if handle is None:
            handle = _HANDLES[location] = StoreHandle(config)
        return handle


__all__ = ["StoreHandle", "lock_folder_paths", "open_store", "store_location", "store_tag", "store_write_lock"]
