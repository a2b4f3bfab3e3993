"""Flags whose help (or default) lists a registry: written again each time the command line is assembled.

The commands are module-level functions whose options are built when their module loads; a plugin
may register a policy, writer, teacher, reader or mode after that (``tests/test_registries.py``
does). Each ``register(app)`` calls :func:`refresh`, so that the help, read by typer when it builds
the command, lists what is registered when the command line is assembled, as it did when the
options were built inside ``register``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_LISTINGS: list[tuple[Any, str, Callable[[], Any]]] = []


def listing(option: Any, help: Callable[[], str] | None = None, default: Callable[[], Any] | None = None) -> Any:
    """``option`` (a typer Option or Argument) with its help and/or default read from a registry now and at
    every :func:`refresh`."""
    for attribute, read in (("help", help), ("default", default)):
        if read is not None:
            setattr(option, attribute, read())
            _LISTINGS.append((option, attribute, read))
    return option


def refresh() -> None:
    """Rewrite every listing's help and default from the registries as they are now."""
    for option, attribute, read in _LISTINGS:
        setattr(option, attribute, read())


__all__ = ["listing", "refresh"]
