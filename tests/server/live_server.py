"""Running the real app under uvicorn on a loopback port, in a thread (used by conftest and scripts)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from sieve.core.net import free_port

if TYPE_CHECKING:
    from sieve.server.state import AppState

API_KEY = "test-key-3f9a"
TINY = "srv-tiny"
TINY_DOCS = [
    {
        "id": "paris",
        "title": "Paris",
        "text": "Paris is the capital and largest city of France, on the Seine.",
        "metadata": {"country": "France"},
    },
    {
        "id": "berlin",
        "title": "Berlin",
        "text": "Berlin is the capital of Germany and its most populous city.",
        "metadata": {"country": "Germany"},
    },
    {
        "id": "rome",
        "title": "Rome",
        "text": "Rome is the capital city of Italy, founded, legend says, in 753 BC.",
        "metadata": {"country": "Italy"},
    },
]


@dataclass
class LiveServer:
    url: str
    state: AppState
    server: Any
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)


def start_server(embedder: Any, data_dir: Path, **settings: Any) -> LiveServer:
    """Run ``create_app(Settings(...))`` under uvicorn in a daemon thread; returns once it accepts requests."""
    import uvicorn

    from sieve.server.main import create_app
    from sieve.server.serving import uvicorn_config
    from sieve.settings import Settings

    port = free_port()
    s = Settings(data_dir=data_dir, host="127.0.0.1", port=port, **settings)
    app = create_app(s, embedder=embedder)
    # The served configuration (limits, header timeout), as `sieve serve` builds it.
    server = uvicorn.Server(uvicorn_config(app, s, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"uvicorn did not start on port {port}")
        time.sleep(0.05)
    return LiveServer(url=f"http://127.0.0.1:{port}", state=app.state.sieve, server=server, thread=thread)


PROBLEM_KEYS = {"type", "title", "status", "detail", "code"}


def assert_problem(r: httpx.Response, status: int, code: str) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    assert PROBLEM_KEYS <= body.keys()
    assert body["status"] == status and body["code"] == code
    assert body["type"] == f"urn:sieve:error:{code}"
    assert body["detail"]
    return body


__all__ = ["API_KEY", "assert_problem", "TINY", "TINY_DOCS", "LiveServer", "start_server"]
