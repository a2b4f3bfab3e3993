"""Evaluation of Sieve against gold evidence, in two layers.

* **The library** (:mod:`sieve.eval.data`, :mod:`sieve.eval.metrics`): eval sets and task files,
  gold evidence, recall and the other metrics. It imports nothing of Sieve above the retriever, and
  training, rewards and the benchmarks use it (``tests/test_layers.py`` holds both rules).
* **The application** (systems, evaluators, the ``sieve eval`` runner, reports): it runs agents and
  baselines over the library's sets, and nothing below it imports it.

Importing this package loads neither layer: the names below load their module on first use, so a
``from sieve.eval.metrics import recall_at_k`` in training pulls in no agent or runner.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sieve.eval.data import EvalSet, EvalTask, load_sets
    from sieve.eval.evaluator import RetrievalEvaluator, SequentialEvaluator
    from sieve.eval.runner import EvalConfig, EvalReport, run_eval
    from sieve.eval.systems import AgentSystem, RetrievalSystem, System, SystemOutput, make_system, parse_systems

_HOMES = {
    "sieve.eval.data": ("EvalSet", "EvalTask", "load_sets"),
    "sieve.eval.evaluator": ("RetrievalEvaluator", "SequentialEvaluator"),
    "sieve.eval.runner": ("EvalConfig", "EvalReport", "run_eval"),
    "sieve.eval.systems": ("AgentSystem", "RetrievalSystem", "System", "SystemOutput", "make_system", "parse_systems"),
}
_MODULE_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    if name in _MODULE_OF:
        return getattr(importlib.import_module(_MODULE_OF[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AgentSystem",
    "EvalConfig",
    "EvalReport",
    "EvalSet",
    "EvalTask",
    "RetrievalEvaluator",
    "RetrievalSystem",
    "SequentialEvaluator",
    "System",
    "SystemOutput",
    "load_sets",
    "make_system",
    "parse_systems",
    "run_eval",
]
