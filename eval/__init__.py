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

from typing import TYPE_CHECKING

from sieve.core.lazy import lazy_getattr

if TYPE_CHECKING:
    from sieve.eval.data import EvalSet, EvalTask, load_sets
    from sieve.eval.evaluator import RetrievalEvaluator, SequentialEvaluator
    from sieve.eval.runner import EvalConfig, EvalReport, run_eval
    from sieve.eval.systems import AgentSystem, RetrievalSystem, System, SystemOutput, make_system, parse_systems

_LAZY = {
    "EvalSet": ".data",
    "EvalTask": ".data",
    "load_sets": ".data",
    "RetrievalEvaluator": ".evaluator",
    "SequentialEvaluator": ".evaluator",
    "EvalConfig": ".runner",
    "EvalReport": ".runner",
    "run_eval": ".runner",
    "AgentSystem": ".systems",
    "RetrievalSystem": ".systems",
    "System": ".systems",
    "SystemOutput": ".systems",
    "make_system": ".systems",
    "parse_systems": ".systems",
}
__getattr__ = lazy_getattr(__name__, _LAZY)

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
