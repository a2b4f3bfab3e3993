"""Shape of the code: no function of 60 lines or more, in any folder of the package.

Measured with :mod:`ast` as ``end_lineno - lineno + 1`` of every ``def`` (methods and nested
functions included, and a nested function counts inside its parent too; decorators and the
docstring count as lines of the function).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 60
# Every folder that installs as part of `sieve` (pyproject.toml's package-dir).
FOLDERS = ("agent", "retriever", "pruning", "train", "eval", "server", "cli", "sieve", "benchmarks", "data")


def function_lengths(*folders: str) -> dict[str, int]:
    """``"path:line name"`` -> length in lines, for every function under ``folders``."""
    out: dict[str, int] = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    assert node.end_lineno is not None
                    out[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = node.end_lineno - node.lineno + 1
    return out


def test_the_measure_sees_functions() -> None:
    lengths = function_lengths(*FOLDERS)
    assert len(lengths) > 1000 and any(name.endswith(" run") for name in lengths)  # so the check below can fail
    assert all((ROOT / folder / "__init__.py").is_file() for folder in FOLDERS)  # no folder name mistyped


def test_no_long_function_in_any_folder() -> None:
    long = {name: n for name, n in function_lengths(*FOLDERS).items() if n >= LIMIT}
    assert not long, f"Expected every function under {LIMIT} lines, got {long}"


# -- classes -----------------------------------------------------------------------------------------
# A class with more methods than this does more than one thing: split a cohesive part into a class
# of its own and hold it (the index holds its writer and BM25 cache; the store its collection ref).

MAX_METHODS = 25


def method_counts(*folders: str) -> dict[str, int]:
    """``"path:line Class"`` -> its methods: the ``def`` and ``async def`` directly in the class body."""
    out: dict[str, int] = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef):
                    methods = [s for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
                    out[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = len(methods)
    return out


def test_the_measure_sees_classes_and_their_methods() -> None:
    counts = method_counts(*FOLDERS)
    assert len(counts) > 100  # so the check below can fail: it sees the package's classes
    index = next(n for name, n in counts.items() if name.endswith(" CorpusIndex"))
    assert index >= 15  # and counts their methods (the index has a score of them)


def test_no_class_has_more_than_25_methods() -> None:
    big = {name: n for name, n in method_counts(*FOLDERS).items() if n > MAX_METHODS}
    assert not big, f"Expected every class in {FOLDERS} to have at most {MAX_METHODS} methods, got {big}"
