"""The LLM training runs of ``llm_training_cases.py``, each one test here, run together in a process of their own.

The child runs in the suite's second lane (``CASES_IN_OWN_PROCESS``, read by ``conftest.own_process_runs``)
and trains on the second core while the rest of the suite runs; the tests here wait for its outcomes.

Every test of that file must pass in the child; a failure here carries the child's traceback, a
skip there fails here (the child has the same skip policy, but a skip must never read as a pass).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from _own_process import Outcome, OwnProcessLane, assert_passed, case_names

CASES_IN_OWN_PROCESS = Path(__file__).with_name("llm_training_cases.py")
NAMES = case_names(CASES_IN_OWN_PROCESS)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def outcomes(own_process_runs: OwnProcessLane) -> dict[str, Outcome]:
    return own_process_runs.outcomes(CASES_IN_OWN_PROCESS)


def test_the_cases_file_holds_the_training_runs() -> None:
    assert set(NAMES) == {
        "test_grpo_smoke_run_through_the_harness",
        "test_gpt_oss_rollout_and_grpo_step",
        "test_grpo_time_budget_alone_ends_the_run",
        "test_tiny_sft_run_saves_a_loadable_checkpoint",
    }


@pytest.mark.parametrize("name", NAMES)
def test_in_own_process(name: str, outcomes: dict[str, Outcome]) -> None:
    assert_passed(name, outcomes)
