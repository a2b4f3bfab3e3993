"""A FAKE OpenAI-compatible model server for the server's cancellation and admission tests.

Real sockets and a real HTTP server (stdlib, in a thread); only the model is fake: every reply
is a ``search`` tool call, so an episode runs until its turn cap unless something stops it. Each
request after the first ``fast`` ones is held ``delay_s`` seconds, and the server records
whether the client hung up while it was held (the abort of an in-flight call).
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Call:
    started: float
    aborted: bool = False  # the client closed the connection before the reply was due


@dataclass
class FakeLLM:
    delay_s: float = 0.0
    fast: int = 0  # the first `fast` requests are answered at once
    calls: list[Call] = field(default_factory=list)
    # Held replies also wait for this (set by default): a test clears it to keep episodes running for as long
    # as it needs, whatever the machine's load, and sets it to let them finish.
    release: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        outer = self
        self.release.set()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                call = Call(started=time.monotonic())
                outer.calls.append(call)
                n = len(outer.calls)
                if n > outer.fast and outer._hold(self.connection, outer.delay_s, outer.release):
                    call.aborted = True
                    return
                body = json.dumps(_search_call(n)).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    call.aborted = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @staticmethod
    def _hold(conn: socket.socket, seconds: float, release: threading.Event) -> bool:
        """Wait ``seconds`` and until ``release`` is set (at most 120 s); True as soon as the client closes its
        end (a readable socket with no data)."""
        deadline, give_up = time.monotonic() + seconds, time.monotonic() + 120
        while (left := deadline - time.monotonic()) > 0 or (not release.is_set() and time.monotonic() < give_up):
            readable, _, _ = select.select([conn], [], [], min(max(left, 0.0), 0.05) or 0.05)
            if readable:
                try:
                    if conn.recv(1, socket.MSG_PEEK) == b"":
                        return True
                except OSError:
                    return True
        return False

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _search_call(n: int) -> dict:
    call = {
        "id": f"call_{n}",
        "type": "function",
        "function": {"name": "search", "arguments": json.dumps({"query": f"capital city {n}", "k": 1})},
    }
    return {
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
            }
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10},
    }


__all__ = ["Call", "FakeLLM"]
