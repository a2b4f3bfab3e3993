"""Integration-test helpers: run a real server as a subprocess until its health URL answers.

Shared by the Chroma-server and vLLM tests (importable because pytest puts ``tests/``, the
directory of the root conftest, on ``sys.path``).
"""

from __future__ import annotations

import socket
import subprocess
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING

import httpx
import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence
    from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def server_process(cmd: Sequence[str], health_url: str, *, name: str, log_path: Path, timeout_s: float,
                   poll_s: float, request_timeout_s: float = 1.0, stop_timeout_s: float = 15.0,
                   env: Mapping[str, str] | None = None) -> Iterator[None]:
    """Start ``cmd`` (output to ``log_path``), wait until ``health_url`` returns 200, stop it on exit.

    Fails the test, naming the log, if the process exits first or does not answer in ``timeout_s``.
    """
    log = log_path.open("w")
    proc = subprocess.Popen(list(cmd), stdout=log, stderr=subprocess.STDOUT, env=None if env is None else dict(env))
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                pytest.fail(f"{name} exited with {proc.returncode}; see {log.name}")
            try:
                if httpx.get(health_url, timeout=request_timeout_s).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"{name} did not answer {health_url} within {timeout_s:.0f} s; see {log.name}")
            time.sleep(poll_s)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(stop_timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
