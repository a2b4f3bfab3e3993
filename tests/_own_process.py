"""Run a file of tests in a fresh ``pytest`` process and read back each test's outcome.

For tests whose peak memory is their own (a training step of a language model): in a process of
their own it never stacks on what the suite's process holds by then. Importable like
``_server_process`` (pytest puts ``tests/`` on ``sys.path``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Outcome:
    """One test's result in the child run: ``passed``, ``failed``, ``error`` or ``skipped``, with its text."""

    status: str
    text: str = ""


def run_tests_in_own_process(path: Path, work: Path, timeout_s: float = 1800) -> dict[str, Outcome]:
    """``python -m pytest PATH`` in a new interpreter (same environment, repository root as cwd,
    its temporary folders under ``work``, apart from the suite's).

    Returns:
        Test name (``test_x`` or ``test_x[param]``) -> its :class:`Outcome`, from the child's JUnit XML;
        the child's own output goes to ``work/pytest.log``.

    Raises:
        RuntimeError: the child wrote no report (it crashed, or collected nothing), naming its log.
    """
    work.mkdir(parents=True, exist_ok=True)
    report, log = work / "junit.xml", work / "pytest.log"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
           f"--basetemp={work / 'tmp'}", str(path)]
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=dict(os.environ),
                              timeout=timeout_s, check=False)
    if not report.exists():
        raise RuntimeError(f"Expected a JUnit report from pytest {path.name}, got none "
                           f"(exit {proc.returncode}); see {log}")
    outcomes = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        status, text = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                status, text = child.tag, f"{child.get('message', '')}\n{child.text or ''}"
                break
        outcomes[case.get("name", "")] = Outcome(status, text)
    return outcomes


__all__ = ["Outcome", "run_tests_in_own_process"]
