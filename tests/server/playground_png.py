"""The README's playground picture, made from the real thing: ``sieve serve`` on the sample, the
system's chromium driven by playwright (the browser and driver the playground test uses), the
demo question asked, the finished page saved as a PNG.

    python tests/server/playground_png.py                 # -> docs/playground.png
    python tests/server/playground_png.py --out /tmp/p.png --data-dir DIR

It serves ``$SIEVE_DATA_DIR`` (or ``--data-dir``), which must hold the collection ``sample``:
``sieve demo`` made it. ``tests/server/test_playground_browser.py`` drives the page with these
same functions and saves a picture with :func:`screenshot` on every run, so the script cannot
drift from the page it pictures.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

logger = logging.getLogger("sieve.playground_png")

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Headless on a machine without network: without these, chromium keeps retrying refused connections.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1400, "height": 1000}
K = 5


@contextmanager
def browser_page(profile: Path) -> Iterator[Any]:
    """A fresh chromium page (``profile`` is its --user-data-dir) that records page errors in ``page.errors``.

    Raises:
        FileNotFoundError: no chromium binary (``.ci/install`` installs Debian's as root).
        ImportError: playwright missing (a test extra).
    """
    if not Path(CHROMIUM).exists():
        raise FileNotFoundError(f"Expected chromium at {CHROMIUM}, got none; .ci/install installs it as root")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, viewport=VIEWPORT
        )
        page = context.new_page()
        page.errors = []
        page.on("pageerror", lambda exc: page.errors.append(str(exc)))
        page.on("console", lambda msg: msg.type == "error" and page.errors.append(msg.text))
        try:
            yield page
        finally:
            context.close()


def ask(page: Any, url: str, *, k: int = K, question: str | None = None) -> str:
    """Open the playground at ``url``, ask ``question`` (default: the demo's, preset by the page) for
    ``k`` results and wait for the run to end; return the page's run state (``done`` on success)."""
    page.goto(url + "/")
    page.wait_for_selector("body[data-ready='1']", timeout=30_000)
    if question is not None:
        page.fill("#question", question)
    page.fill("#k", str(k))
    page.click("#ask")
    page.wait_for_selector("body[data-run]", timeout=120_000)
    return page.get_attribute("body", "data-run")


def screenshot(page: Any, out: Path) -> Path:
    """The search tab, whole page, as a PNG at ``out``."""
    page.click("#tab-search")
    page.screenshot(path=str(out), full_page=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "playground.png")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="Data folder holding `sample` (default $SIEVE_DATA_DIR or the per-user one).",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    sys.path.insert(0, str(ROOT / "tests"))  # _server_process, as the tests import it
    from _server_process import server_process, sieve_command

    from sieve.core.net import free_port

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = dict(os.environ)
    if args.data_dir is not None:
        env["SIEVE_DATA_DIR"] = str(args.data_dir)
    with tempfile.TemporaryDirectory(prefix="sieve-shot-") as tmp:
        cmd = [*sieve_command(), "serve", "-c", "sample", "--port", str(port), "--log-level", "warning"]
        with (
            server_process(
                cmd,
                f"{url}/healthz",
                name="sieve serve",
                log_path=Path(tmp) / "serve.log",
                timeout_s=300,
                poll_s=0.5,
                env=env,
            ),
            browser_page(Path(tmp) / "profile") as page,
        ):
            state = ask(page, url)
            if state != "done" or page.errors:
                logger.error(
                    "The playground ended in state %r (errors: %s): %s", state, page.errors, page.inner_text("#status")
                )
                return 1
            screenshot(page, args.out)
    logger.info("Wrote %s", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
