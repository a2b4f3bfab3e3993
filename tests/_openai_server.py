"""A SCRIPTED (fake) OpenAI-compatible server: real sockets and status codes, replies from a script.

Shared by ``test_openai_backend.py`` and ``test_harmony.py``; the real-vLLM test lives in test_vllm.py (opt-in).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def completion(
    content=None, tool_calls=None, prompt_tokens=11, completion_tokens=7, *, reasoning=None, finish_reason=None
):
    """A chat completion; ``reasoning`` is ``(field, text)`` (vLLM's ``reasoning_content`` or ``reasoning``)."""
    msg = {"role": "assistant", "content": content}
    if reasoning:
        msg[reasoning[0]] = reasoning[1]
    if tool_calls:
        msg["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": n, "arguments": a if isinstance(a, str) else json.dumps(a)},
            }
            for i, (n, a) in enumerate(tool_calls)
        ]
    return {
        "choices": [
            {"index": 0, "message": msg, "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop")}
        ],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
    }


class FakeOpenAI:
    """SCRIPTED fake server: each request pops (status, body, delay_s); records request bodies."""

    def __init__(self):
        self.script: list[tuple[int, object, float]] = []
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                status, payload, delay = outer.script.pop(0) if outer.script else (200, completion("done"), 0.0)
                time.sleep(delay)
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
