"""The web playground in a real browser: ``sieve serve`` on the sample corpus, Debian's chromium driven by playwright.

The server is the real command in its own process; the browser is the system's ``chromium``
(``.ci/install`` installs it; playwright never downloads one here). The page asks the demo
question, and the test waits for the stream to finish, then checks what a user would look at:
the tool-call log, the evidence list, and plain hybrid's top-k beside it with overlaps marked.
"""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from _server_process import server_process, sieve_command
from playground_png import CHROMIUM, K, VIEWPORT, ask, screenshot
from playground_png import browser_page as browser_page_of
from sieve.core.net import free_port
from sieve.data import DEMO_QUESTION

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.slow


def _need(what: str, ok: bool) -> None:
    # .ci/install installs both: a missing one is a broken install, a failure and never a quiet skip.
    if not ok:
        pytest.fail(
            f"{what} is not installed; run .ci/install as root (apt-get install chromium; "
            f"pip install -e '.[test]' for playwright)"
        )


@pytest.fixture(scope="module")
def served(sample_data_copy: Path) -> Iterator[str]:
    """``sieve serve`` in a subprocess, on a copy of the session's indexed sample corpus."""
    data = sample_data_copy
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "SIEVE_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1"}
    env.pop("SIEVE_CHROMA_URL", None)
    cmd = [*sieve_command(), "serve", "-c", "sample", "--port", str(port), "--no-mcp", "--log-level", "warning"]
    with server_process(
        cmd, f"{url}/healthz", name="sieve serve", log_path=data / "serve.log", timeout_s=300, poll_s=0.5, env=env
    ):
        yield url


@pytest.fixture(scope="module")
def browser_page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    _need("chromium", Path(CHROMIUM).exists())
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _need("playwright (python package)", False)
    with browser_page_of(tmp_path_factory.mktemp("chromium-profile")) as page:  # a fresh --user-data-dir
        yield page


def _ids(page: Any, selector: str) -> list[str]:
    return page.eval_on_selector_all(selector, "els => els.map(e => e.dataset.chunkId)")


def test_ask_the_demo_question_and_watch_the_agent(served: str, browser_page: Any, tmp_path: Path) -> None:
    page = browser_page
    # The README picture's script asks through the same function (tests/server/playground_png.py).
    assert ask(page, served, k=K) == "done", page.inner_text("#status")
    assert page.input_value("#collection") == "sample"
    assert page.input_value("#question") == DEMO_QUESTION

    # The tool-call log: every call of every turn, each with its result filled in from the stream.
    calls = page.locator("#tool-log .tool-call")
    assert calls.count() >= 2
    assert page.locator("#tool-log .tool-call .tool-name").first.inner_text() == "search"
    assert page.locator("#tool-log .tool-result.pending").count() == 0
    assert page.locator("#tool-log .chunk-chip").count() >= 1

    # The evidence list, each item with the score the API returned.
    evidence = _ids(page, "#evidence > li")
    assert len(evidence) == K and all(evidence)
    scores = page.locator("#evidence .score").all_inner_texts()
    assert all(re.fullmatch(r"-?\d+\.\d+", s) for s in scores), scores

    # Plain hybrid's top-k for the same question: exactly what /v1/retrieve answers; overlaps marked on both sides.
    hybrid = _ids(page, "#hybrid > li")
    api = httpx.post(served + "/v1/retrieve", json={"query": DEMO_QUESTION, "k": K, "mode": "hybrid"}, timeout=60)
    assert hybrid == [r["id"] for r in api.json()["results"]]
    both = set(evidence) & set(hybrid)
    assert set(_ids(page, "#evidence > li.overlap")) == both == set(_ids(page, "#hybrid > li.overlap"))

    # Kept vs pruned, and the token budget the agent worked in.
    summary = page.inner_text("#chunk-summary")
    seen, kept, pruned = (int(n) for n in re.match(r"(\d+) seen · (\d+) kept · (\d+) pruned", summary).groups())
    assert seen == kept + pruned > 0
    assert page.locator("#chunks-kept .chunk-chip").count() == kept
    assert page.locator("#chunks-pruned .chunk-chip").count() == pruned
    assert re.search(r"/ 8,192 tokens", page.inner_text("#budget-text"))
    assert page.locator("#budget-history polyline").count() == 1

    # The browser: an evidence title opens its chunk with the neighbours around it.
    page.locator("#evidence > li .link").first.click()
    page.wait_for_selector("#chunk-view .chunk.focus", timeout=30_000)
    assert _ids(page, "#chunk-view .chunk.focus") == [evidence[0]]
    page.wait_for_selector("#docs-list > li", timeout=30_000)
    assert page.locator("#docs-list > li").count() > 0
    assert page.errors == []  # type: ignore[attr-defined]

    # The README's picture is this page: the script's screenshot, checked to be a real page-sized PNG.
    png = screenshot(page, tmp_path / "playground.png")
    width, height = struct.unpack(">II", png.read_bytes()[16:24])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and width == VIEWPORT["width"] and height >= VIEWPORT["height"]


def test_docs_load_offline(served: str, browser_page: Any) -> None:
    """/docs renders Swagger UI from files this server ships; nothing comes from a CDN."""
    page = browser_page
    external: list[str] = []
    page.on(
        "request", lambda req: req.url.startswith(served) or req.url.startswith("data:") or external.append(req.url)
    )
    page.goto(served + "/docs")
    page.wait_for_selector(".swagger-ui .opblock", timeout=60_000)
    assert page.locator(".swagger-ui .opblock").count() > 10
    assert external == []
