"""Integration-test helpers: run a real server as a subprocess until its health URL answers.

Shared by the Chroma-server and vLLM tests (importable because pytest puts ``tests/``, the
directory of the root conftest, on ``sys.path``). The health loop (and the port picker the
tests take) are ``sieve.core.net``'s, which the load-test script uses too.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from sieve.core.net import free_port, wait_until_healthy

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence


def sieve_command() -> list[str]:
    """The ``sieve`` console script of this Python (as a user runs it), else ``python -m sieve.cli.main``."""
    script = Path(sys.executable).with_name("sieve")
    return [str(script)] if script.exists() else [sys.executable, "-m", "sieve.cli.main"]


@contextmanager
def server_process(
    cmd: Sequence[str],
    health_url: str,
    *,
    name: str,
    log_path: Path,
    timeout_s: float,
    poll_s: float,
    request_timeout_s: float = 1.0,
    stop_timeout_s: float = 15.0,
    env: Mapping[str, str] | None = None,
) -> Iterator[None]:
    """Start ``cmd`` (output to ``log_path``), wait until ``health_url`` returns 200, stop it on exit.

    Fails the test, naming the log, if the process exits first or does not answer in ``timeout_s``.
    """
    log = log_path.open("w")
    proc = subprocess.Popen(list(cmd), stdout=log, stderr=subprocess.STDOUT, env=None if env is None else dict(env))
    try:
        try:
            wait_until_healthy(
                health_url,
                proc=proc,
                name=name,
                timeout_s=timeout_s,
                poll_s=poll_s,
                request_timeout_s=request_timeout_s,
            )
        except RuntimeError as exc:
            pytest.fail(f"{exc}; see {log.name}")
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(stop_timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@contextmanager
def chroma_server(path: Path) -> Iterator[str]:
    """``chroma run --path PATH`` on a free loopback port; yields its URL once the heartbeat answers."""
    exe = shutil.which("chroma")
    if exe is None:
        pytest.fail("the `chroma` CLI (shipped with chromadb) is not on PATH")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with server_process(
        [exe, "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        f"{url}/api/v2/heartbeat",
        name="chroma server",
        log_path=path.parent / f"{path.name}.log",
        timeout_s=60,
        poll_s=0.1,
    ):
        yield url


__all__ = ["chroma_server", "server_process", "sieve_command"]
