"""Errors only HTTP can produce, and the one map from every Sieve error to its HTTP status.

The library's errors (``sieve.core.errors``) carry a ``code`` only; which status a code becomes is
decided here, once, for the problem-details handler and the MCP wrapper alike. A subclass
without an entry gets its nearest ancestor's status (``InvalidPattern`` is a 422 as
``InvalidInput`` is). No FastAPI import: :class:`~sieve.client.SieveClient` rebuilds these
errors from a server's answers.

Example:
    >>> from sieve.core.errors import InvalidPattern
    >>> http_status(InvalidPattern("Expected a regex, got '('")), http_status(Unauthorized("no key"))
    (422, 401)
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from sieve.core.errors import (
    BackendError,
    EmbedderMismatch,
    EmptyCorpus,
    InvalidInput,
    ModelUnavailable,
    NotFound,
    SieveError,
    StoreLocked,
    StoreUnavailable,
    UnknownCollection,
)


class Unauthorized(SieveError):
    """A request without the server's API key where one is required."""

    code = "unauthorized"


class PayloadTooLarge(SieveError):
    """A request body over ``SIEVE_MAX_BODY_BYTES``."""

    code = "payload_too_large"


class RequestTimeout(SieveError):
    """A request's blocking work (retrieval, agent run) ran past its time limit."""

    code = "timeout"


class Overloaded(SieveError):
    """The server runs as many jobs of a kind as it admits and its queue is full (or too slow): 503.

    ``retry_after_s`` becomes the ``Retry-After`` header (the server's estimate of a free place).
    """

    code = "overloaded"

    def __init__(self, message: str, *, retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ClientClosedRequest(SieveError):
    """The client disconnected before its answer was ready (nginx's 499); nobody reads this response."""

    code = "client_closed_request"


HTTP_STATUS: dict[type[SieveError], int] = {
    SieveError: 500,
    InvalidInput: 422,
    NotFound: 404,
    UnknownCollection: 404,
    EmptyCorpus: 409,
    EmbedderMismatch: 409,  # the collection holds another embedder's vectors: a conflict with its state
    BackendError: 502,
    StoreUnavailable: 503,
    StoreLocked: 503,
    ModelUnavailable: 503,
    Unauthorized: 401,
    PayloadTooLarge: 413,
    RequestTimeout: 504,
    Overloaded: 503,
    ClientClosedRequest: 499,
}


def http_status(exc: SieveError) -> int:
    """The HTTP status of ``exc``: its class's entry in :data:`HTTP_STATUS`, else its nearest ancestor's."""
    for cls in type(exc).__mro__:
        status = HTTP_STATUS.get(cls)
        if status is not None:
            return status
    return 500


def problem_body(status: int, detail: str, code: str, errors: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """RFC 9457 problem details; ``type`` names Sieve's error code as a URN. The HTTP handlers and
    ``sieve ... --json`` print this one shape.

    Example:
        >>> problem_body(404, "Expected an existing collection, got 'x'", "unknown_collection")["title"]
        'Not Found'
    """
    try:
        title = HTTPStatus(status).phrase
    except ValueError:
        title = "Error"
    body: dict[str, Any] = {
        "type": f"urn:sieve:error:{code}",
        "title": title,
        "status": status,
        "detail": detail,
        "code": code,
    }
    if errors is not None:
        body["errors"] = errors
    return body


def error_problem(exc: SieveError) -> dict[str, Any]:
    """The problem details of a Sieve error."""
    return problem_body(http_status(exc), exc.message, exc.code)


__all__ = [
    "HTTP_STATUS",
    "ClientClosedRequest",
    "Overloaded",
    "PayloadTooLarge",
    "RequestTimeout",
    "Unauthorized",
    "error_problem",
    "http_status",
    "problem_body",
]
