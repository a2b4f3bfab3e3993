"""A pytest plugin (loaded by the root conftest): only opt-in tests may skip.

A skip whose reason does not start with ``opt-in:`` (an ``importorskip`` of a missing core or
test-extra dependency, a ``pytest.skip`` for a missing wheel) is turned into a failure, so a
broken install can never pass as a run of skips. Opt-in tests (a real vLLM server, the Qwen
download) skip with ``reason="opt-in: SIEVE_TEST_...=1"``, and ``-rs`` (pyproject addopts) lists
every skip and its reason at the end of the run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Generator

OPT_IN = "opt-in:"


def _skip_reason(longrepr: object) -> str:
    # A skip's longrepr is (path, line, "Skipped: <reason>").
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return str(text).removeprefix("Skipped: ")


def _fail_unless_opt_in(report: pytest.TestReport | pytest.CollectReport) -> None:
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = _skip_reason(report.longrepr)
    if not reason.startswith(OPT_IN):
        report.outcome = "failed"
        report.longrepr = (
            f"Expected only opt-in tests (a reason starting {OPT_IN!r}) to skip, got a skip: {reason}. "
            "A missing dependency is a broken install: install the test extras (.ci/install)."
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Generator[None, None, None]:
    outcome = yield
    _fail_unless_opt_in(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, None, None]:
    outcome = yield
    _fail_unless_opt_in(outcome.get_result())
