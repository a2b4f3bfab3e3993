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


class OwnProcessRun:
    """A ``python -m pytest PATH`` child, started now and read when its outcomes are needed.

    Started at the session's start (``conftest.own_process_runs``), the child's minute of training
    runs on the second core while the suite's other tests run on the first.
    """

    def __init__(self, path: Path, work: Path, timeout_s: float = 1800) -> None:
        work.mkdir(parents=True, exist_ok=True)
        self.path, self.timeout_s = path, timeout_s
        self.report, self.log = work / "junit.xml", work / "pytest.log"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={self.report}",
            f"--basetemp={work / 'tmp'}",
            str(path),
        ]
        with self.log.open("w", encoding="utf-8") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=dict(os.environ))

    def outcomes(self) -> dict[str, Outcome]:
        """Wait for the child; test name (``test_x`` or ``test_x[param]``) -> its :class:`Outcome`, from its JUnit XML.

        Raises:
            RuntimeError: the child wrote no report (it crashed, or collected nothing), naming its log.
            subprocess.TimeoutExpired: the child ran past ``timeout_s`` (it is killed).
        """
        try:
            returncode = self.proc.wait(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        if not self.report.exists():
            raise RuntimeError(
                f"Expected a JUnit report from pytest {self.path.name}, got none (exit {returncode}); see {self.log}"
            )
        outcomes = {}
        for case in ET.parse(self.report).getroot().iter("testcase"):
            status, text = "passed", ""
            for child in case:
                if child.tag in ("failure", "error", "skipped"):
                    status, text = child.tag, f"{child.get('message', '')}\n{child.text or ''}"
                    break
            outcomes[case.get("name", "")] = Outcome(status, text)
        return outcomes

    def stop(self) -> None:
        """Kill the child if it still runs (a suite that ended early must not leave it behind)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


__all__ = ["Outcome", "OwnProcessRun"]
