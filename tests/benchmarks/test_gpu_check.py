"""The GPU check's dry path on the CPU: prepare the float16 copy, index two small corpora end to end, time queries.

The tests of ``gpu_check_cases.py`` run in a process of their own in the suite's second lane
(``CASES_IN_OWN_PROCESS``, read by ``conftest.own_process_runs``): their time is mostly spent in
subprocesses of their own, which the second core runs while the suite goes on. Each is one test
here; a failure carries the child's traceback, a skip there fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from _own_process import Outcome, OwnProcessLane, assert_passed, case_names

CASES_IN_OWN_PROCESS = Path(__file__).with_name("gpu_check_cases.py")
NAMES = case_names(CASES_IN_OWN_PROCESS)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def outcomes(own_process_runs: OwnProcessLane) -> dict[str, Outcome]:
    return own_process_runs.outcomes(CASES_IN_OWN_PROCESS)


def test_the_cases_file_holds_the_gpu_check_tests() -> None:
    assert set(NAMES) == {
        "test_prepare_writes_a_float16_copy_under_the_upload_limit",
        "test_cpu_dry_run_prints_one_json_line_per_corpus",
        "test_sizes_are_checked",
    }


@pytest.mark.parametrize("name", NAMES)
def test_in_own_process(name: str, outcomes: dict[str, Outcome]) -> None:
    assert_passed(name, outcomes)
