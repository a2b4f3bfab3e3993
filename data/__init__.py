"""The small sample corpus and tasks that ship with Sieve (see ``data/README.md`` for licences)."""

from __future__ import annotations

from pathlib import Path

#: ``corpus.jsonl``, ``tasks.jsonl`` and ``docs/``; installed with the package, so ``sieve demo`` runs anywhere.
SAMPLE_DIR = Path(__file__).resolve().parent / "sample"

#: The multi-hop question ``sieve demo`` and the playground ask of the sample corpus.
DEMO_QUESTION = (
    "What was the 2020 population of the city that Charles Lindbergh's transatlantic aircraft was named after?"
)

__all__ = ["DEMO_QUESTION", "SAMPLE_DIR"]
