"""``sieve collections --check``: the store's lock-folder files, each as Sieve wrote it or named, and repaired.

A store has three small files in ``$SIEVE_DATA_DIR/locks/`` (:mod:`sieve.retriever.handle` says what
each does): the write lock, the write *token* (bumped by every write; readers reopen when it
changes) and the *ready* mark (the store's schema exists). A damaged or hand-edited data folder can
leave something else there: bytes that are not a token, a directory, a file nobody may read. Sieve
reads past what is safe to read past (an undecodable token: a reader reopens once) and otherwise
answers ``store_unavailable`` naming the path; this module reports every such file and, asked to,
repairs it: whatever stands in the way is moved aside (never deleted: it may be the user's), and a
fresh token is written under the write lock, so every process reopens its client from disk.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sieve.retriever.handle import lock_folder_paths, open_store, store_write_lock

if TYPE_CHECKING:
    from sieve.retriever.config import RetrieverConfig

_TOKEN_RE = re.compile(r"^[0-9a-f]{32}$")  # what StoreHandle.mark_written writes (uuid4().hex)


@dataclass(frozen=True)
class LockFileState:
    """One lock-folder file: ``ok``, ``missing`` (made on first use; nothing wrong) or ``damaged``."""

    role: str
    path: Path
    state: str
    problem: str = ""
    repaired: bool = False


def _problem(role: str, path: Path) -> str | None:
    """What is wrong with ``path`` as the store's ``role`` file; None when it is fine or missing."""
    if not path.exists():
        return None
    if path.is_dir():
        return "a directory stands in its place"
    try:
        data = path.read_bytes()
        if role == "lock":  # filelock opens it read-write
            os.close(os.open(path, os.O_RDWR))
    except OSError as exc:
        return f"it cannot be opened ({exc.strerror or exc})"
    if role == "token" and data and not _TOKEN_RE.match(data.decode("utf-8", errors="replace")):
        return f"it holds {len(data)} bytes that are not a token Sieve wrote"
    return None


def check_lock_folder(config: RetrieverConfig, *, repair: bool = False) -> list[LockFileState]:
    """Each lock-folder file of the configured store and its state; with ``repair``, damaged ones fixed.

    Raises:
        StoreLocked: ``repair`` and another writer held the store's lock for the whole wait.
    """
    paths = lock_folder_paths(config)
    found = {role: _problem(role, path) for role, path in paths.items()}
    damaged = {role for role, problem in found.items() if problem}
    if repair and damaged:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for role in sorted(damaged):  # out of the way first: the lock itself may be what is damaged
            path = paths[role]
            path.rename(path.with_name(f"{path.name}.damaged-{stamp}"))
        if config.chroma_url is None:
            with store_write_lock(config).hold():
                open_store(config).mark_written()  # a fresh token: every process reopens from disk
    return [
        LockFileState(
            role=role,
            path=path,
            state="damaged" if found[role] else ("ok" if path.exists() else "missing"),
            problem=found[role] or "",
            repaired=repair and role in damaged,
        )
        for role, path in paths.items()
    ]


__all__ = ["LockFileState", "check_lock_folder"]
