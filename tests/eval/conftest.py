"""Fixtures of the eval tests: two tiny data dirs cut from the shipped sample, and a call-counting system factory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sieve.eval.systems import make_system


def _lines(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _write(folder: Path, corpus: list[dict], tasks: list[dict]) -> Path:
    folder.mkdir(parents=True)
    for name, rows in (("corpus.jsonl", corpus), ("tasks.jsonl", tasks)):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory: pytest.TempPathFactory, sample_dir: Path) -> tuple[Path, Path]:
    """``alpha`` (tasks sample-01..03) and ``beta`` (sample-04..06), each with its gold docs and 10 distractors.

    ``beta`` also holds a different document under the id ``wiki-stanley-kubrick`` (a gold doc of
    alpha's sample-01), so pooling them must rename that id in both sets.
    """
    corpus = _lines(sample_dir / "corpus.jsonl")
    tasks = _lines(sample_dir / "tasks.jsonl")
    root = tmp_path_factory.mktemp("tiny-eval")
    alpha = _write(root / "alpha", corpus[0:6] + corpus[30:40], tasks[0:3])
    clash = dict(corpus[50], id="wiki-stanley-kubrick")
    beta = _write(root / "beta", corpus[6:12] + corpus[40:50] + [clash], tasks[3:6])
    return alpha, beta


class CountingFactory:
    """Wraps :func:`make_system` so tests can count how many questions each system was asked."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def __call__(self, spec, index, depth):
        system = make_system(spec, index, depth)
        inner = system.run
        self.calls.setdefault(system.name, 0)

        def run(question: str):
            self.calls[system.name] += 1
            return inner(question)

        system.run = run  # type: ignore[method-assign]
        return system


@pytest.fixture()
def counter() -> type[CountingFactory]:
    """The :class:`CountingFactory` class (test modules are not a package, so they cannot import it)."""
    return CountingFactory
