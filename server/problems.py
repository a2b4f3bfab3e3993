"""Errors as RFC 9457 problem details: one handler per error family, all producing one JSON shape.

``SieveError`` subclasses carry their own ``code``, mapped to a status by ``sieve.server.errors``; request validation (bad JSON,
wrong types, unknown fields) is ``422 invalid_input`` with the field errors listed; unknown
routes and methods keep their HTTP status; anything unexpected is a logged ``500``.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from sieve.core.errors import CollectionGone, SieveError, UnknownCollection
from sieve.retriever.filters import FILTER_LIMITS
from sieve.server.errors import error_problem, http_status, problem_body
from sieve.retriever.store import COLLECTION_NAME_PATTERN, COLLECTION_NAME_RULE

if TYPE_CHECKING:
    from fastapi import FastAPI, Request

logger = logging.getLogger(__name__)

PROBLEM_MEDIA_TYPE = "application/problem+json"
_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_input",
}


def problem(
    status: int,
    detail: str,
    code: str,
    *,
    errors: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse(
        problem_body(status, detail, code, errors), status_code=status, headers=headers, media_type=PROBLEM_MEDIA_TYPE
    )


def sieve_error_body(exc: SieveError) -> dict[str, Any]:
    return error_problem(exc)


# What a pattern of the request schemas means, in words: pydantic's own message quotes the regex.
_PATTERNS = {
    r"\S": "Expected some text, got only whitespace",
    COLLECTION_NAME_PATTERN: f"Expected {COLLECTION_NAME_RULE}",
    r"^[^$#]": "Expected a metadata key not starting with '$' or '#'",
}


def _validation_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    # Keep loc/msg/type: `input` may echo megabytes back and `ctx` can hold exception objects.
    out = []
    for err in exc.errors():
        item = {
            "loc": [str(p) for p in err.get("loc", ())],
            "msg": str(err.get("msg", "")),
            "type": str(err.get("type", "")),
        }
        ctx = err.get("ctx") or {}
        if "error" in ctx:
            item["msg"] = f"{item['msg']}: {ctx['error']}"
        if item["type"] == "string_pattern_mismatch" and str(ctx.get("pattern")) in _PATTERNS:
            item["msg"] = _PATTERNS[str(ctx["pattern"])]
        elif item["loc"] == ["body"] and item["type"] in ("model_attributes_type", "dict_type"):
            # A body that is not a JSON object, or sent without Content-Type: application/json.
            item["msg"] = "Expected a JSON object as the body, sent with Content-Type: application/json"
        out.append(item)
    return out


def _summary(errors: list[dict[str, Any]]) -> str:
    parts = [f"{'.'.join(e['loc']) or 'body'}: {e['msg']}" for e in errors[:5]]
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return "Invalid request: " + "; ".join(parts) + more


# Seconds a client should wait before retrying a 503 that carries no estimate of its own.
DEFAULT_RETRY_AFTER_S = 5


async def _sieve_error(request: Request, exc: SieveError) -> JSONResponse:
    status = http_status(exc)
    headers = {"WWW-Authenticate": 'Bearer realm="sieve"'} if status == 401 else None
    if status == 503:
        headers = {"Retry-After": str(getattr(exc, "retry_after_s", None) or DEFAULT_RETRY_AFTER_S)}
    if status >= 500:
        logger.warning("%s %s -> %d %s: %s", request.method, request.url.path, status, exc.code, exc.message)
    return problem(status, exc.message, exc.code, headers=headers)


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = _validation_errors(exc)
    return problem(422, _summary(errors), "invalid_input", errors=errors)


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    detail = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"Expected a known route, got {request.method} {request.url.path}; see /docs"
    elif exc.status_code == 400 and isinstance(exc.__cause__, RecursionError):
        # FastAPI's "error parsing the body" for JSON nested past the parser's recursion limit
        # (~1,000 levels): say what was wrong. No request needs it: a filter nests at most 8 deep.
        detail = (
            f"Expected a JSON body nested at most {sys.getrecursionlimit()} levels deep "
            f"(a filter's $and/$or at most {FILTER_LIMITS.max_depth}), got one nested deeper"
        )
    return problem(
        exc.status_code,
        detail,
        _HTTP_CODES.get(exc.status_code, "http_error"),
        headers=dict(exc.headers) if exc.headers else None,
    )


def vanished_collection(exc: BaseException) -> SieveError | None:
    """A collection deleted under a running request (the store raised ``CollectionGone``): a 404, not a crash."""
    if isinstance(exc, CollectionGone):
        return UnknownCollection(
            f"Expected the collection to exist for the whole request, got it deleted "
            f"while the request ran ({exc.message})"
        )
    return None


async def _vanished(request: Request, exc: Exception) -> JSONResponse:
    gone = vanished_collection(exc)
    if gone is None:  # registered for CollectionGone only: never, but not a crash if it were
        return await _unexpected(request, exc)
    request.app.state.sieve.invalidate()
    return problem(http_status(gone), gone.message, gone.code)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    logger.exception("Unhandled error on %s %s", request.method, request.url.path)
    return problem(500, f"Internal server error ({type(exc).__name__}); see the server log", "internal_error")


def install_problem_handlers(app: FastAPI) -> None:
    # Each handler is registered for exactly the type it is annotated with.
    app.add_exception_handler(SieveError, _sieve_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http_error)  # type: ignore[arg-type]
    # Its own handler (the most specific class wins): the cached index of a vanished collection is dropped.
    app.add_exception_handler(CollectionGone, _vanished)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _unexpected)


__all__ = [
    "PROBLEM_MEDIA_TYPE",
    "install_problem_handlers",
    "problem",
    "problem_body",
    "sieve_error_body",
    "vanished_collection",
]
