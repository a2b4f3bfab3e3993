"""FastAPI dependencies: the app state, API-key checks, and running blocking work off the event loop."""

from __future__ import annotations

import functools
import hmac
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import anyio
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from sieve.server.deadline import time_left
from sieve.server.errors import RequestTimeout, Unauthorized
from sieve.server.state import AppState

if TYPE_CHECKING:
    from collections.abc import Callable

    from sieve.server.admission import Slot

T = TypeVar("T")

# auto_error=False: a missing key is *our* 401 problem, and only where a key is required.
_bearer = HTTPBearer(auto_error=False, description="`Authorization: Bearer $SIEVE_API_KEY`")
BearerDep = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def get_state(request: Request) -> AppState:
    return request.app.state.sieve


StateDep = Annotated[AppState, Depends(get_state)]


def check_key(expected: str, presented: str | None) -> None:
    """Raise :class:`Unauthorized` unless ``presented`` equals ``expected`` (constant-time)."""
    if presented is None:
        raise Unauthorized("Expected an 'Authorization: Bearer <SIEVE_API_KEY>' header, got none")
    if not hmac.compare_digest(presented.encode(), expected.encode()):
        raise Unauthorized("Expected the server's API key in 'Authorization: Bearer ...', got a different key")


def require_read(state: StateDep, creds: BearerDep) -> None:
    """Reading needs the key only when ``SIEVE_REQUIRE_AUTH`` is set."""
    if state.settings.require_auth and state.settings.server_api_key:
        check_key(state.settings.server_api_key, creds.credentials if creds else None)


def require_write(state: StateDep, creds: BearerDep) -> None:
    """Writing needs the key whenever ``SIEVE_API_KEY`` is set."""
    if state.settings.server_api_key:
        check_key(state.settings.server_api_key, creds.credentials if creds else None)


ReadAuth = Depends(require_read)
WriteAuth = Depends(require_write)


async def run_blocking(
    fn: Callable[..., T],
    *args: Any,
    timeout: float,
    slot: Slot | None = None,
    on_timeout: Callable[[], None] | None = None,
    **kwargs: Any,
) -> T:
    """Run ``fn`` in the thread pool, giving up after ``timeout`` seconds with ``504 timeout``
    (sooner when the request's deadline, which counts its queue wait, comes first).

    The event loop never waits on embedding, Chroma or an agent episode. On timeout the worker
    thread is abandoned (Python threads cannot be killed) and ``on_timeout`` runs: the agent routes
    cancel their episode there, so it stops at its next turn. ``slot`` (an admission place) is
    released by the worker when ``fn`` returns, so an abandoned worker keeps its place until it
    has really stopped; a request that ends before its worker started releases the place itself.
    """
    call = functools.partial(fn, *args, **kwargs)
    limit = timeout
    timeout = time_left(timeout)  # what the request's deadline leaves, after its queue wait

    def job() -> T | None:
        if slot is not None and not slot.begin():
            return None  # the request gave up before this thread got to it: do no work for nobody
        try:
            return call()
        finally:
            if slot is not None:
                slot.release()

    try:
        with anyio.move_on_after(timeout):
            return await anyio.to_thread.run_sync(job, abandon_on_cancel=True)  # type: ignore[return-value, arg-type]
    finally:
        if slot is not None:
            slot.release_unless_running()
    # Only our own deadline leaves the block without a result (an outer cancel propagates).
    if on_timeout is not None:
        on_timeout()
    raise RequestTimeout(
        f"Expected the request to finish within {limit:g} s, got longer; "
        f"ask for less (smaller k or budget) or raise SIEVE_REQUEST_TIMEOUT_S"
    )


__all__ = [
    "BearerDep",
    "ReadAuth",
    "StateDep",
    "WriteAuth",
    "check_key",
    "get_state",
    "require_read",
    "require_write",
    "run_blocking",
]
