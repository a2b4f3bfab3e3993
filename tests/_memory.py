"""A pytest plugin (loaded by the root conftest): hand freed memory back between test modules, and log RSS on request.

The suite runs in one process that loads, in turn, ONNX sessions, Chroma clients, SmolLM2 (540 MB)
and TRL trainers. Each is freed when its test ends, but glibc keeps freed heap pages mapped
(fragmented arenas, one per thread that allocated), so the process's resident size only ever grew
(1.6 GB after the first few modules, 2.6 GB by the training tests). After each module,
``gc.collect()`` frees what sits in reference cycles (models and trainers do) and ``malloc_trim(0)``
returns the free pages to the system. Once per module, not per test: a full collection with
torch and transformers loaded costs tens of milliseconds.

``SIEVE_TEST_RSS_LOG=FILE`` writes one line per test (resident MiB after it, peak MiB so far,
process CPU seconds, test id): how to find what holds memory.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import resource
import sys
import time
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator


def _malloc_trim() -> None:
    """glibc's ``malloc_trim(0)``; other C libraries (musl, macOS) have none and keep their own policy."""
    if not sys.platform.startswith("linux"):
        return
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    trim = getattr(libc, "malloc_trim", None)
    if trim is not None:
        trim(0)


def release_memory() -> None:
    """Free unreachable cycles, then return free heap pages to the system."""
    gc.collect()
    _malloc_trim()


@pytest.fixture(scope="module", autouse=True)
def _release_memory_after_module() -> Iterator[None]:
    yield
    release_memory()


def _rss_mib() -> float:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    path = os.environ.get("SIEVE_TEST_RSS_LOG")
    if not path or not os.path.exists("/proc/self/statm"):
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open(path, "a", encoding="utf-8") as f:
        f.write(
            f"{time.time():.1f}\t{_rss_mib():.0f}\t{usage.ru_maxrss / 1024:.0f}\t"
            f"{usage.ru_utime + usage.ru_stime:.1f}\t{nodeid}\n"
        )
