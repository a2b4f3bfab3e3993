"""Loopback helpers for whatever starts a local server and waits for it: benchmarks and tests.

``benchmarks/load_test.py`` starts ``sieve serve``; the integration tests start Chroma, vLLM and
uvicorn. They share these two functions rather than each writing its own port picker and
health loop.
"""

from __future__ import annotations

import socket
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it).

    Example:
        >>> 0 < free_port() < 65536
        True
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_healthy(
    url: str,
    *,
    proc: subprocess.Popen | None = None,
    name: str = "server",
    timeout_s: float = 120.0,
    poll_s: float = 0.5,
    request_timeout_s: float = 1.0,
) -> None:
    """Poll ``url`` until it answers HTTP 200.

    Raises:
        RuntimeError: ``proc`` exited first, or ``timeout_s`` passed without a 200.
    """
    import httpx

    deadline = time.monotonic() + timeout_s
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=request_timeout_s).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not answer {url} within {timeout_s:.0f} s")
        time.sleep(poll_s)


__all__ = ["free_port", "wait_until_healthy"]
