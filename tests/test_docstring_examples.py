"""Every ``Example:`` in Sieve's docstrings runs and prints what it shows, so no example goes stale.

The examples are documentation (a reader copies them), and the suite is what keeps them true: an
example that no longer holds fails here, with the module and its doctest report.
"""

from __future__ import annotations

import doctest
import importlib
import io
import pkgutil
from contextlib import redirect_stdout

import sieve


def test_every_docstring_example_holds():
    failed: list[str] = []
    attempted = 0
    for info in pkgutil.walk_packages(sieve.__path__, "sieve."):
        module = importlib.import_module(info.name)
        report = io.StringIO()
        try:
            with redirect_stdout(report):
                result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        except ValueError as exc:  # a malformed example (a bad directive) is a failure too
            failed.append(f"{info.name}: {exc}")
            continue
        attempted += result.attempted
        if result.failed:
            failed.append(f"{info.name}: {result.failed} failed\n{report.getvalue()}")
    assert not failed, "\n".join(failed)
    assert attempted > 250  # the walk found the examples (304 on 2026-12-06)
