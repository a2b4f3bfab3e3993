"""Packaging: the wheel adds one import root, ``sieve``, and lists every package folder."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYOUT = ("retriever", "agent", "pruning", "train", "eval", "server", "cli", "benchmarks", "data")


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_every_package_folder_is_listed_under_the_sieve_root() -> None:
    setuptools = _pyproject()["tool"]["setuptools"]
    mapping = setuptools["package-dir"]
    assert mapping == {"sieve": "sieve", **{f"sieve.{name}": name for name in LAYOUT}}
    expected = set()
    for top in ("sieve", *LAYOUT):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top).parts
            expected.add(".".join(("sieve",) if top == "sieve" else ("sieve", top)) + "".join(f".{p}" for p in rel))
    assert set(setuptools["packages"]) == expected


def test_no_experiment_write_up_inside_the_package_folders() -> None:
    """Write-ups, their plots and scripts live in docs/experiments/, not in what the wheel installs."""
    found = sorted(
        str(p.relative_to(ROOT))
        for top in ("sieve", *LAYOUT)
        for p in (ROOT / top).rglob("*")
        if p.suffix == ".png" or (p.is_dir() and p.name in ("reports", "experiments"))
    )
    assert not found, f"Expected no PNG or reports/ folder under the package folders, got {found}"


@pytest.mark.slow
def test_the_wheel_has_sieve_as_its_only_top_level_name(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    wheel = next(tmp_path.glob("sieve-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
    assert tops == {"sieve"}
    for must in (
        "sieve/agent/loop.py",
        "sieve/agent/ranking/ranker_default.json",  # the shipped closing ranker
        "sieve/train/ranking/__main__.py",
        "sieve/cli/main.py",
        "sieve/data/sample/corpus.jsonl",
        "sieve/data/sample/tasks.jsonl",
        "sieve/data/sample/docs/faq.txt",
        "sieve/server/static/playground/index.html",
        "sieve/server/static/playground/app.js",
        "sieve/server/static/playground/style.css",
    ):
        assert must in names, must
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "sieve = sieve.cli.main:main" in zipfile.ZipFile(wheel).read(entry).decode()
