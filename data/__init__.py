"""The small sample corpus and tasks that ship with Sieve (see ``data/README.md`` for licences)."""

from __future__ import annotations

from pathlib import Path

#: ``corpus.jsonl``, ``tasks.jsonl`` and ``docs/``; installed with the package, so ``sieve demo`` runs anywhere.
SAMPLE_DIR = Path(__file__).resolve().parent / "sample"

__all__ = ["SAMPLE_DIR"]
