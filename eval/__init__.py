"""Evaluation of Sieve against gold evidence: pure metrics, systems, evaluators, the ``sieve eval`` runner.

Everything here is light to import; models load only when a system or index is built.
"""

from __future__ import annotations

from sieve.eval.data import EvalSet, EvalTask, load_sets
from sieve.eval.evaluator import RetrievalEvaluator, SequentialEvaluator
from sieve.eval.runner import EvalConfig, EvalReport, run_eval
from sieve.eval.systems import AgentSystem, RetrievalSystem, System, SystemOutput, make_system, parse_systems

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
