"""Run files of tests in fresh ``pytest`` processes, one after another, beside the suite; read back each outcome.

For tests whose peak memory is their own (a training step of a language model): in a process of
their own it never stacks on what the suite's process holds. In one process (``-n 0``) the lane
starts with the session and runs on the core the suite leaves idle; under ``-n 2`` it starts in
the worker that draws its wrapper (``conftest.own_process_runs``). A file of such tests is named ``*_cases.py`` (so
the suite does not collect it) and a ``test_*.py`` beside it sets ``CASES_IN_OWN_PROCESS`` and
turns each child outcome into a test of its own (``conftest.own_process_runs`` starts the lane).
Importable like ``_server_process`` (pytest puts ``tests/`` on ``sys.path``).

Only the LLM training runs are there: moving the GPU check's and the Ray test's files there too
(mostly subprocess time) left a clean clone's suite at the same wall time (6:37 against 6:34) for
50 s more CPU, the children's own start-up and index builds.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import threading
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
            "-n",
            "0",  # the child is one process (pyproject's addopts ask the suite for two workers)
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


class OwnProcessLane:
    """Files of tests run one after another, each by an :class:`OwnProcessRun`, on a thread of their own.

    Started as the session starts, in the order the suite reaches their wrappers, so a wrapper
    rarely waits. With ``start=False`` the lane starts when a wrapper first asks for outcomes:
    under ``pytest -n`` every worker collects every module, but only the worker that runs a
    wrapper may start its child (else each worker would train the same model).
    """

    def __init__(self, jobs: list[tuple[Path, Path]], *, start: bool = True) -> None:
        """``jobs``: (cases file, work folder) pairs, run in that order."""
        self._runs: dict[Path, OwnProcessRun] = {}
        self._errors: dict[Path, BaseException] = {}
        self._done = {path: threading.Event() for path, _ in jobs}
        self._stopped = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._work, args=(jobs,), name="own-process-lane", daemon=True)
        if start:
            self._thread.start()

    def _work(self, jobs: list[tuple[Path, Path]]) -> None:
        for path, work in jobs:
            try:
                with self._lock:
                    if self._stopped:
                        return
                    run = self._runs[path] = OwnProcessRun(path, work)
                run.proc.wait(timeout=run.timeout_s)
            except BaseException as e:  # kept for the wrapper to raise: a thread's exception would vanish
                self._errors[path] = e
            finally:
                self._done[path].set()

    def outcomes(self, path: Path) -> dict[str, Outcome]:
        """Wait for ``path``'s child; its outcomes (:meth:`OwnProcessRun.outcomes`).

        Raises:
            KeyError: ``path`` was not given to this lane.
            RuntimeError: the lane was stopped first, or the child could not run (the cause attached).
        """
        with self._lock:
            if not self._stopped and self._thread.ident is None:
                self._thread.start()
        self._done[path].wait()
        if path in self._errors:
            raise RuntimeError(f"Expected {path.name} to run in its own process, got an error") from self._errors[path]
        if path not in self._runs:
            raise RuntimeError(f"Expected {path.name} to run in its own process, got a lane stopped before it")
        return self._runs[path].outcomes()

    def stop(self) -> None:
        """Start no further child and kill the running one (a suite that ended early leaves none behind)."""
        with self._lock:
            self._stopped = True
            for run in self._runs.values():
                run.stop()
        for event in self._done.values():
            event.set()


def case_names(path: Path) -> list[str]:
    """The test functions a cases file defines, read from its source (the child names its outcomes so)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]


def assert_passed(name: str, outcomes: dict[str, Outcome]) -> None:
    """``name`` ran in the child and passed there (a skip there is a failure here: it must not read as a pass)."""
    assert name in outcomes, f"{name} did not run in the child; it ran {sorted(outcomes)}"
    outcome = outcomes[name]
    assert outcome.status == "passed", f"{name}: {outcome.status} in its own process\n{outcome.text}"


__all__ = ["Outcome", "OwnProcessLane", "OwnProcessRun", "assert_passed", "case_names"]
