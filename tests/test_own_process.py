"""The suite's second lane (tests/_own_process.py): children run in order, and every outcome reads back as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from _own_process import OwnProcessLane, assert_passed, case_names

CASES = """
import pytest

def test_passes():
    assert True

def test_fails():
    assert 1 == 2, "one is not two"

def test_skips():
    pytest.skip("not here")
"""


def test_a_lane_reads_back_each_childs_outcomes_in_order(tmp_path: Path) -> None:
    first, second = tmp_path / "first_cases.py", tmp_path / "second_cases.py"
    first.write_text(CASES, encoding="utf-8")
    second.write_text("def test_only():\n    pass\n", encoding="utf-8")
    assert case_names(first) == ["test_passes", "test_fails", "test_skips"]
    lane = OwnProcessLane([(first, tmp_path / "w1"), (second, tmp_path / "w2")])
    try:
        outcomes = lane.outcomes(first)
        assert {name: o.status for name, o in outcomes.items()} == {
            "test_passes": "passed",
            "test_fails": "failure",
            "test_skips": "skipped",
        }
        assert "one is not two" in outcomes["test_fails"].text
        assert_passed("test_passes", outcomes)
        for name in ("test_fails", "test_skips", "test_missing"):
            with pytest.raises(AssertionError):
                assert_passed(name, outcomes)
        assert {n: o.status for n, o in lane.outcomes(second).items()} == {"test_only": "passed"}
    finally:
        lane.stop()


def test_a_stopped_lane_starts_nothing_more_and_says_so(tmp_path: Path) -> None:
    slow = tmp_path / "slow_cases.py"
    slow.write_text("import time\n\ndef test_sleeps():\n    time.sleep(60)\n", encoding="utf-8")
    later = tmp_path / "later_cases.py"
    later.write_text("def test_only():\n    pass\n", encoding="utf-8")
    lane = OwnProcessLane([(slow, tmp_path / "w1"), (later, tmp_path / "w2")])
    lane.stop()
    with pytest.raises(RuntimeError, match="(stopped before it|got none)"):
        lane.outcomes(later)


def test_a_lane_made_not_to_start_runs_nothing_until_asked(tmp_path: Path) -> None:
    cases = tmp_path / "marker_cases.py"
    marker = tmp_path / "ran"
    cases.write_text(f"from pathlib import Path\n\ndef test_marks():\n    Path({str(marker)!r}).touch()\n", "utf-8")
    lane = OwnProcessLane([(cases, tmp_path / "w1")], start=False)
    try:
        assert not (tmp_path / "w1").exists() and not marker.exists()  # no child yet: under -n, other workers
        assert {n: o.status for n, o in lane.outcomes(cases).items()} == {"test_marks": "passed"}
        assert marker.exists()
    finally:
        lane.stop()
