"""``sieve demo`` as a newcomer reads it: hybrid and the agent in one table, within 100 columns."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from sieve.cli.commands._compare import BOTH, MAX_WIDTH, compare_table
from sieve.cli.main import app


def _lines(text: str) -> list[str]:
    # A progress bar redraws itself after carriage returns: each state is a line of its own.
    return text.replace("\r", "\n").splitlines()


@pytest.mark.parametrize("columns", [200, 72])
def test_demo_fits_the_terminal_and_100_columns(sample_index, session_data_dir: Path, columns: int) -> None:
    res = CliRunner().invoke(app, ["demo", "--data-dir", str(session_data_dir)], env={"COLUMNS": str(columns)})
    assert res.exit_code == 0, res.output
    for line in _lines(res.stdout) + _lines(res.stderr):
        # tqdm sizes its bar to the terminal it finds (none here: its 80-column default).
        limit = MAX_WIDTH if line.startswith("Indexing sample:") else min(columns, MAX_WIDTH)
        assert len(line) <= limit, (len(line), line)
    out = _lines(res.stdout)
    # One table holds both systems: a single header row naming hybrid and the agent, then a rule, then the ranks.
    headers = [i for i, ln in enumerate(out) if ln.lstrip().startswith("#")]
    assert len(headers) == 1 and "hybrid" in out[headers[0]] and "agent (" in out[headers[0]], res.stdout
    rows = out[headers[0] + 2 : headers[0] + 7]
    assert [ln.split()[0] for ln in rows] == ["1", "2", "3", "4", "5"], res.stdout
    assert "turn 1 > search(" in res.stderr  # the step log is still there, on stderr


def test_compare_table_marks_chunks_in_both_lists_with_their_other_rank() -> None:
    def hit(doc: str, pos: int = 0) -> dict:
        return {"id": f"{doc}#{pos}", "doc_id": doc, "title": doc.title(), "text": f"{doc} text " * 30}

    left = [hit("paris"), hit("chicago"), hit("bangkok", 1)]
    right = [hit("st-louis"), hit("bangkok", 1), hit("paris")]
    buf = io.StringIO()
    compare_table(("hybrid", left), ("agent (learned)", right), "q " * 80, console=Console(file=buf, width=140))
    lines = buf.getvalue().splitlines()
    assert max(len(ln) for ln in lines) <= MAX_WIDTH
    row = {ln.split()[0]: ln for ln in lines if ln.strip()[:1].isdigit()}
    assert f"{BOTH}3 Paris" in row["1"] and f"{BOTH}1 Paris" in row["3"]  # each side names the other's rank
    assert f"{BOTH}2 Bangkok #1" in row["3"] and f"{BOTH}3 Bangkok #1" in row["2"]
    assert "Chicago" in row["2"] and f"{BOTH}" not in row["2"].split("Chicago")[0]
    assert any("also #N in the other list" in ln for ln in lines)
