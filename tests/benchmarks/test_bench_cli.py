"""``benchmarks/cli.py`` runs real ``sieve`` processes and prints its table (figures are not checked)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sieve.benchmarks.cli import main


def test_before_after_table_for_help(capsys: pytest.CaptureFixture[str]) -> None:
    from sieve.benchmarks.cli import sieve_executable

    exe = sieve_executable()
    main(["--commands", "help", "--runs", "2", "--warmup", "0", "--baseline", exe])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| command | runs | before median s |")
    [row] = [ln for ln in lines if ln.startswith("| `sieve --help`")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "2" and len(cells) == 7 and float(cells[-1]) > 0


def test_a_failing_command_stops_with_its_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="exited 2"):
        main(
            [
                "--commands",
                "bm25",
                "--runs",
                "1",
                "--warmup",
                "0",
                "--collection",
                "never-made",
                "--data-dir",
                str(tmp_path / "data"),
            ]
        )


def test_every_mode_is_a_row_by_default() -> None:
    from sieve.benchmarks.cli import CliBenchConfig, commands

    rows = commands(CliBenchConfig(collection="sample"))
    assert list(rows) == ["help", "collections", "bm25", "dense", "hybrid", "search"]
    assert rows["dense"][:4] == ["retrieve", rows["dense"][1], "--mode", "dense"] and rows["search"][0] == "search"
