"""Pure-ASGI middleware: request metrics, the trusted-host check, the body read timeout and size limit.

All are plain ASGI callables rather than ``BaseHTTPMiddleware`` so that streamed responses
(SSE, MCP) pass through untouched and byte by byte.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Any

import anyio
from starlette.datastructures import Headers
from starlette.middleware.trustedhost import TrustedHostMiddleware

from sieve.server.problems import PROBLEM_MEDIA_TYPE, problem_body

if TYPE_CHECKING:
    from collections.abc import MutableMapping

    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from sieve.server.metrics import Metrics


class TrustedHosts(TrustedHostMiddleware):
    """Starlette's Host check (same patterns: ``"*"``, ``"*.example.com"``), answering a wrong Host
    with a ``400 invalid_host`` problem like every other error, before any route runs.

    Why it matters: a server on 127.0.0.1 that answers any ``Host`` can be read by any web page
    through DNS rebinding (``evil.example`` re-resolved to 127.0.0.1), and reads need no key by
    default. Settings.trusted_hosts() gives the default: loopback names on a loopback bind.
    """

    def __init__(self, app: ASGIApp, allowed_hosts: list[str]) -> None:
        super().__init__(app, allowed_hosts=allowed_hosts, www_redirect=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.allow_any or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = _host_name(Headers(scope=scope).get("host", ""))
        if any(host == p or (p.startswith("*.") and host.endswith(p[1:])) for p in self.allowed_hosts):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":  # no problem body over a websocket handshake: refuse it
            await send({"type": "websocket.close", "code": 1008})
            return
        await _send_problem(
            send,
            400,
            f"Expected a Host header naming this server (one of {self.allowed_hosts}), "
            f"got {host or 'none'!r}; set SIEVE_ALLOWED_HOSTS to serve other names",
            "invalid_host",
        )


def _host_name(header: str) -> str:
    """The host part of a Host header, lower-cased, without the port (``[::1]:8000`` -> ``[::1]``)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header.partition("]")[0] + "]"
    return header.rpartition(":")[0] if header.count(":") == 1 else header


async def _send_problem(send: Send, status: int, detail: str, code: str) -> None:
    body = json.dumps(problem_body(status, detail, code)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyLimitMiddleware:
    """Reject request bodies over ``max_bytes`` with ``413 payload_too_large``.

    A declared ``Content-Length`` over the limit is refused before a byte is read. Bodies of
    unknown length (chunked) are read here up to the limit and then replayed to the app, so the
    app never sees a partial body and the 413 is always a clean problem response.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = _content_length(scope)
        if length == -1:
            await _send_problem(
                send, 400, "Expected a numeric Content-Length header, got something else", "bad_request"
            )
            return
        if length is not None:
            if length > self.max_bytes:
                await _send_problem(
                    send,
                    413,
                    f"Expected a request body of at most {self.max_bytes} bytes, got {length}",
                    "payload_too_large",
                )
                return
            await self.app(scope, receive, send)
            return
        if scope.get("method") in ("GET", "HEAD", "OPTIONS", "DELETE") and not _has_chunked_body(scope):
            await self.app(scope, receive, send)
            return
        # Unknown length: buffer (bounded) so the limit holds for chunked uploads too.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                await _send_problem(
                    send,
                    413,
                    f"Expected a request body of at most {self.max_bytes} bytes, got more",
                    "payload_too_large",
                )
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class BodyTimeoutMiddleware:
    """``408 request_timeout`` when a client takes longer than ``timeout_s`` to send its request body.

    uvicorn bounds idle keep-alive connections and (with our protocol) the headers, but not a
    body sent one byte at a time; this bounds the whole body, from the first ``receive`` to the
    last byte. The app never sees a partial body: its ``receive`` fails, whatever it answers is
    dropped, and the client gets the 408 with ``Connection: close``.
    """

    def __init__(self, app: ASGIApp, timeout_s: float) -> None:
        self.app = app
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not (_content_length(scope) or _has_chunked_body(scope)):
            await self.app(scope, receive, send)
            return
        deadline = anyio.current_time() + self.timeout_s
        body_done = timed_out = response_started = False

        async def receive_in_time() -> Message:
            nonlocal body_done, timed_out
            if body_done or timed_out:
                return await receive()  # after the body, only the disconnect can come: no deadline
            with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
                message = await receive()
                body_done = message["type"] != "http.request" or not message.get("more_body", False)
                return message
            timed_out = True
            raise _BodyTimeout

        async def send_unless_timed_out(message: Message) -> None:
            nonlocal response_started
            if timed_out:
                return
            response_started = True
            await send(message)

        try:
            await self.app(scope, receive_in_time, send_unless_timed_out)
        except _BodyTimeout:
            pass
        except Exception:
            if not timed_out:
                raise
        if timed_out and not response_started:
            await _send_problem(
                send,
                408,
                f"Expected the request body within {self.timeout_s:g} s, got it slower; "
                "send it at once (SIEVE_BODY_TIMEOUT_S)",
                "request_timeout",
            )


class _BodyTimeout(Exception):
    """Raised into the app when the body is late; BodyTimeoutMiddleware answers 408 instead."""


def _content_length(scope: Scope) -> int | None:
    """The declared length; ``None`` when absent, ``-1`` when not a number."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                n = int(value)
            except ValueError:
                return -1
            return n if n >= 0 else -1
    return None


def _has_chunked_body(scope: Scope) -> bool:
    return any(name == b"transfer-encoding" and b"chunked" in value.lower() for name, value in scope.get("headers", ()))


WORKER_HEADER = b"x-sieve-worker"


class MetricsMiddleware:
    """Count requests and time them to the last response byte, labelled by route template.

    The label is the matched route's path template (``/v1/documents/{doc_id}``), never the raw
    path, so label cardinality stays bounded whatever clients send. Every response also names
    the worker process that answered (``X-Sieve-Worker: <pid>``), which tells the workers of
    ``sieve serve --workers N`` apart.
    """

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics
        self.worker = str(os.getpid()).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = {"code": 500}
        t0 = time.perf_counter()

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = int(message["status"])
                message = {**message, "headers": [*message.get("headers", ()), (WORKER_HEADER, self.worker)]}
            await send(message)

        self.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            self.metrics.in_flight.dec()
            route = _route_label(scope)
            method = str(scope.get("method", ""))
            self.metrics.requests.labels(method=method, route=route, status=str(status["code"])).inc()
            self.metrics.latency.labels(method=method, route=route).observe(time.perf_counter() - t0)


def _route_label(scope: MutableMapping[str, Any]) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    return str(path) if path else "unmatched"


__all__ = ["BodyLimitMiddleware", "BodyTimeoutMiddleware", "MetricsMiddleware", "TrustedHosts", "WORKER_HEADER"]
