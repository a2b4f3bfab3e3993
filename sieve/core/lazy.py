"""Names a package exports without importing their modules until first use (PEP 562 ``__getattr__``).

So ``import sieve.agent`` or ``import sieve.eval`` stays light: a serving process never loads torch
through a re-export, and training never loads eval's runner through its metrics.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping


def lazy_getattr(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: each name in ``homes`` is read from its module on first use.

    ``homes`` maps an exported name to its module, absolute (``sieve.facade``) or relative to
    ``package`` (``.loop``).

    Example:
        >>> lazy_getattr("sieve.eval", {"recall_at_k": ".metrics"})("recall_at_k").__name__
        'recall_at_k'
    """

    def __getattr__(name: str) -> Any:
        module = homes.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module, package), name)

    return __getattr__


__all__ = ["lazy_getattr"]
