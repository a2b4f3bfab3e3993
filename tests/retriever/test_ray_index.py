"""``sieve index PATH --ray`` on a real local Ray cluster into a real ``chroma run``: same result as one process.

The tests of ``ray_index_cases.py`` run in a process of their own in the suite's second lane
(``CASES_IN_OWN_PROCESS``, read by ``conftest.own_process_runs``): their time is mostly spent in
subprocesses of their own, which the second core runs while the suite goes on. Each is one test
here; a failure carries the child's traceback, a skip there fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from _own_process import Outcome, OwnProcessLane, assert_passed, case_names

CASES_IN_OWN_PROCESS = Path(__file__).with_name("ray_index_cases.py")
NAMES = case_names(CASES_IN_OWN_PROCESS)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def outcomes(own_process_runs: OwnProcessLane) -> dict[str, Outcome]:
    return own_process_runs.outcomes(CASES_IN_OWN_PROCESS)


def test_the_cases_file_holds_the_ray_index_tests() -> None:
    assert set(NAMES) == {
        "test_ray_index_matches_the_single_process_path",
        "test_ray_index_cli_flag_and_an_empty_folder",
        "test_without_ray_installed_the_flag_says_how_to_install_it_and_creates_nothing",
    }


@pytest.mark.parametrize("name", NAMES)
def test_in_own_process(name: str, outcomes: dict[str, Outcome]) -> None:
    assert_passed(name, outcomes)
