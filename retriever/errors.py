"""Sieve's one error hierarchy.

Every error a user can cause carries a machine ``code`` (stable, used in HTTP problem details
and CLI exit messages) and an HTTP ``status``. The server maps them with a single handler.
Messages read "Expected X, got Y; valid: ...".
"""

from __future__ import annotations


class SieveError(Exception):
    """Base of every error Sieve raises on purpose."""

    code: str = "sieve_error"
    status: int = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(SieveError):
    code = "invalid_input"
    status = 422


class UnknownCollection(SieveError):
    code = "unknown_collection"
    status = 404


class NotFound(SieveError):
    code = "not_found"
    status = 404


class EmptyCorpus(SieveError):
    code = "empty_corpus"
    status = 409


class InvalidPattern(InvalidInput):
    code = "invalid_pattern"


class StoreUnavailable(SieveError):
    code = "store_unavailable"
    status = 503


class ModelUnavailable(SieveError):
    code = "model_unavailable"
    status = 503


class BackendError(SieveError):
    """A model backend failed (timeout, connection, bad response) after its retries."""

    code = "backend_error"
    status = 502


class Unauthorized(SieveError):
    code = "unauthorized"
    status = 401


class PayloadTooLarge(SieveError):
    code = "payload_too_large"
    status = 413


class RequestTimeout(SieveError):
    """A request's blocking work (retrieval, agent run) ran past its time limit."""

    code = "timeout"
    status = 504


__all__ = [
    "BackendError",
    "EmptyCorpus",
    "InvalidInput",
    "InvalidPattern",
    "ModelUnavailable",
    "NotFound",
    "PayloadTooLarge",
    "RequestTimeout",
    "SieveError",
    "StoreUnavailable",
    "Unauthorized",
    "UnknownCollection",
]
