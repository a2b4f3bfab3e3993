"""How ``sieve serve`` runs the app under uvicorn: connection limits and timeouts for slow clients.

uvicorn closes idle keep-alive connections (``timeout_keep_alive``) and answers 503 beyond
``limit_concurrency`` open connections and tasks, but has no limit on how long a client may take
to send a request's headers: 50 connections sending headers one byte at a time would stay open
for good. :class:`HeaderTimeoutProtocol` adds that limit to uvicorn's own HTTP protocol (a 408
and the connection closed), and ``BodyTimeoutMiddleware`` bounds the body. Both ``sieve serve``
and the test servers build their configuration with :func:`uvicorn_config`, so the tests run what
is served.
"""

from __future__ import annotations

import asyncio
import collections
from typing import TYPE_CHECKING, Any

import uvicorn
from uvicorn.protocols.http.auto import AutoHTTPProtocol

if TYPE_CHECKING:
    from sieve.settings import Settings

DEFAULT_HEADER_TIMEOUT_S = 10.0
_TIMEOUT_408 = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 36\r\nconnection: close\r\n\r\nExpected the request headers sooner\n"
)


_TOO_MANY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 49\r\nretry-after: 5\r\nconnection: close\r\n\r\n"
    b"Expected fewer open connections from this client\n"
)


class HeaderTimeoutProtocol(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
    """uvicorn's HTTP protocol (httptools or h11), plus a deadline for each request's headers.

    The clock starts when the connection opens, and again at the first byte of each further
    request on a kept-alive connection (between requests uvicorn's keep-alive timeout applies);
    it stops when the headers are complete. Reads ``header_timeout_s`` from the uvicorn config
    (:class:`SieveUvicornConfig`).
    """

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self._client_host: str | None = None
        if self._over_client_limit(transport):
            return
        self._arm_header_timer()

    def _over_client_limit(self, transport: asyncio.Transport) -> bool:
        """Count this connection against its client address; refuse it (503, closed) beyond the limit.

        uvicorn's ``limit_concurrency`` is global: one client opening that many idle connections
        had every other client refused. Each address gets ``max_client_connections`` of them.
        """
        limit = getattr(self.config, "max_client_connections", 0)
        peer = transport.get_extra_info("peername")
        if not limit or not peer:
            return False
        counts = self.config.client_connections
        host = str(peer[0])
        if counts[host] >= limit:
            transport.write(_TOO_MANY)
            transport.close()
            return True
        counts[host] += 1
        self._client_host = host
        return False

    def data_received(self, data: bytes) -> None:
        before = self.cycle
        idle = before is None or before.response_complete  # these bytes begin (or continue) a request's headers
        super().data_received(data)
        upgraded = self.transport.get_protocol() is not self  # handed over to a websocket protocol
        if self.cycle is not before or upgraded:  # headers complete: uvicorn started a new request cycle
            self._disarm_header_timer()
        elif idle and self._header_timer is None and not self.transport.is_closing():
            self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        host = getattr(self, "_client_host", None)
        if host is not None:
            self._client_host = None
            counts = self.config.client_connections
            counts[host] -= 1
            if counts[host] <= 0:
                del counts[host]
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        timeout = getattr(self.config, "header_timeout_s", DEFAULT_HEADER_TIMEOUT_S)
        self._header_timer = self.loop.call_later(timeout, self._headers_too_slow)

    def _disarm_header_timer(self) -> None:
        if getattr(self, "_header_timer", None) is not None:
            self._header_timer.cancel()  # type: ignore[union-attr]
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or not (self.cycle is None or self.cycle.response_complete):
            return
        self.transport.write(_TIMEOUT_408)
        self.transport.close()


class SieveUvicornConfig(uvicorn.Config):
    """``uvicorn.Config`` that also carries the header timeout and the per-client connection limit
    (module level, so it pickles for workers; each worker counts its own connections)."""

    def __init__(
        self,
        app: Any,
        *,
        header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S,
        max_client_connections: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(app, **kwargs)
        self.header_timeout_s = header_timeout_s
        self.max_client_connections = max_client_connections
        self.client_connections: collections.Counter[str] = collections.Counter()  # address -> open connections


def uvicorn_config(app: Any, settings: Settings, **overrides: Any) -> SieveUvicornConfig:
    """The served configuration: bind address, limits and timeouts from ``settings``.

    Example:
        >>> config = uvicorn_config(create_app(s), s)  # doctest: +SKIP
        >>> uvicorn.Server(config).run()  # doctest: +SKIP
    """
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "log_level": settings.log_level,
        "http": HeaderTimeoutProtocol,
        "header_timeout_s": settings.header_timeout_s,
        "limit_concurrency": settings.max_connections,
        "timeout_keep_alive": settings.keep_alive_s,
        "max_client_connections": settings.max_client_connections,
        "timeout_graceful_shutdown": 10,
        # The app checks Host itself (TrustedHosts); uvicorn's proxy-header rewriting stays at its
        # default of trusting only 127.0.0.1.
    }
    options.update(overrides)
    return SieveUvicornConfig(app, **options)


__all__ = ["DEFAULT_HEADER_TIMEOUT_S", "HeaderTimeoutProtocol", "SieveUvicornConfig", "uvicorn_config"]
