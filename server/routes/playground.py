"""The web playground at ``/``: a page to watch the agent search, and a collection browser.

Plain static files shipped in the package (``server/static/playground/``): no build step, no CDN,
nothing fetched from outside this server. The page talks to the public API only (``/v1/search``
with ``stream: true``, ``/v1/retrieve``, ``/v1/collections``, ``/v1/chunks``); the one extra
route here hands it the server's defaults.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from sieve.data import DEMO_QUESTION
from sieve.server.deps import ReadAuth, StateDep

if TYPE_CHECKING:
    from fastapi import FastAPI

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
PAGE = STATIC_DIR / "playground" / "index.html"

router = APIRouter(include_in_schema=False)


@router.get("/")
async def playground() -> FileResponse:
    # The page itself reveals nothing about the corpus: it loads without a key and asks for one on a 401.
    return FileResponse(PAGE, media_type="text/html", headers={"Cache-Control": "no-cache"})


@router.get("/playground/config", dependencies=[ReadAuth])
async def playground_config(state: StateDep) -> dict[str, Any]:
    s = state.settings
    return {
        "collection": s.collection,
        "policy": s.policy,
        "policies": s.available_policies(),
        "k": min(5, s.k),
        "budget_tokens": s.budget_tokens,
        "max_budget_tokens": s.max_budget_tokens,
        "max_k": s.max_request_k,
        "demo_question": DEMO_QUESTION,
    }


def install(app: FastAPI) -> None:
    """Serve the page at ``/`` and its files under ``/static``."""
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")


__all__ = ["STATIC_DIR", "install", "router"]
