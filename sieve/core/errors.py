"""Sieve's one public error hierarchy: every error a caller can cause, from every layer.

Each class carries a stable machine ``code`` (used in HTTP problem details, CLI exit lines and
by :class:`~sieve.client.SieveClient` to rebuild the error). What HTTP status a code becomes is
the server's business (``sieve.server.errors``); errors that only HTTP can produce (401, 413,
504) live there too. Messages read "Expected X, got Y; valid: ...".

This module imports nothing from Sieve, so every layer can import it without a cycle.

Example:
    >>> from sieve.core.errors import InvalidInput, SieveError
    >>> err = InvalidInput("Expected k >= 1, got 0")
    >>> isinstance(err, SieveError) and isinstance(err, ValueError), err.code
    (True, 'invalid_input')
"""

from __future__ import annotations


class SieveError(Exception):
    """Base of every error Sieve raises on purpose."""

    code: str = "sieve_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(SieveError, ValueError):
    """A bad argument or config value.

    Also a ``ValueError``: config dataclasses raise it from ``__post_init__``, and code that
    already catches ``ValueError`` around them (as callers of dataclasses commonly do) keeps working.
    """

    code = "invalid_input"


class InvalidPattern(InvalidInput):
    """A grep pattern Chroma's (Rust) regex engine cannot run."""

    code = "invalid_pattern"


class NotFound(SieveError):
    code = "not_found"


class UnknownCollection(SieveError):
    code = "unknown_collection"


class CollectionGone(UnknownCollection):
    """The collection was deleted (by another process or worker) while it was in use."""

    code = "collection_gone"


class EmptyCorpus(SieveError):
    code = "empty_corpus"


class StoreUnavailable(SieveError):
    """Chroma could not be reached or failed in a way the caller did not cause."""

    code = "store_unavailable"


class StoreLocked(SieveError):
    """Another writer held the store's write lock for longer than the caller would wait."""

    code = "store_locked"


class ModelUnavailable(SieveError):
    """A model (embedder, local LLM) is not installed or cannot be loaded."""

    code = "model_unavailable"


class EmbedderMismatch(SieveError):
    """A collection's vectors came from another embedder (model, or bf16/int8 precision) than the one asked to use it."""

    code = "embedder_mismatch"


class BackendError(SieveError):
    """A model backend failed (timeout, connection, bad response) after its retries."""

    code = "backend_error"


__all__ = [
    "CollectionGone",
    "BackendError",
    "EmbedderMismatch",
    "EmptyCorpus",
    "InvalidInput",
    "InvalidPattern",
    "ModelUnavailable",
    "NotFound",
    "SieveError",
    "StoreLocked",
    "StoreUnavailable",
    "UnknownCollection",
]
