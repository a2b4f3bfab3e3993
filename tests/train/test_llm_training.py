"""The LLM training runs of ``llm_training_cases.py``, each one test here, run together in a process of their own.

Every test of that file must pass in the child; a failure here carries the child's traceback, a
skip there fails here (the child has the same skip policy, but a skip must never read as a pass).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from _own_process import Outcome, run_tests_in_own_process

CASES = Path(__file__).with_name("llm_training_cases.py")
NAMES = [node.name for node in ast.parse(CASES.read_text(encoding="utf-8")).body
         if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    return run_tests_in_own_process(CASES, tmp_path_factory.mktemp("llm-training"))


def test_the_cases_file_holds_the_training_runs() -> None:
    assert set(NAMES) == {"test_grpo_smoke_run_through_the_harness", "test_grpo_time_budget_alone_ends_the_run",
                          "test_tiny_sft_run_saves_a_loadable_checkpoint"}


@pytest.mark.parametrize("name", NAMES)
def test_in_own_process(name: str, outcomes: dict[str, Outcome]) -> None:
    assert name in outcomes, f"{name} did not run in the child; it ran {sorted(outcomes)}"
    outcome = outcomes[name]
    assert outcome.status == "passed", f"{name}: {outcome.status} in its own process\n{outcome.text}"
