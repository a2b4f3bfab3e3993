"""What every task writer reads and resumes from: all chunks of a collection, and the tasks a run already wrote.

Shared by the template, claim and hard writers (``synth``, ``synth_hard``), which import each
other's modules in one direction only: a helper both need lives here, below both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sieve.core.errors import EmptyCorpus

if TYPE_CHECKING:
    from sieve.retriever import CorpusIndex
    from sieve.retriever.types import Chunk

# Ids per read: Chroma answers a get of 1,000 ids in one query, and 1,000 chunks are a few MB.
_PAGE = 1000


def all_chunks(index: CorpusIndex) -> list[Chunk]:
    """Every chunk of the collection, in document then position order.

    Raises:
        EmptyCorpus: the collection holds no chunk.
    """
    docs = index.documents()
    if not docs:
        raise EmptyCorpus(f"Expected an indexed collection, got {index.name!r} with no chunks")
    ids = [f"{d}#{i}" for d, n in sorted(docs.items()) for i in range(n)]
    chunks: list[Chunk] = []
    for i in range(0, len(ids), _PAGE):
        chunks.extend(index.get_chunks(ids[i : i + _PAGE]))
    return chunks


def read_written_tasks(path: Path) -> dict[str, dict[str, Any]]:
    """Tasks a writer already wrote to ``path``, by id (missing file: none); a torn last line is ignored.

    Lenient on purpose, unlike :func:`sieve.eval.data.read_tasks`: it reads back a file that an
    interrupted run may have left half-written, to resume it.
    """
    tasks: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return tasks
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                row = json.loads(line)
                tasks[row["id"]] = row
            except (json.JSONDecodeError, KeyError, TypeError):
                continue
    return tasks


def read_task_ids(path: Path) -> set[str]:
    """Ids already in a tasks file."""
    return set(read_written_tasks(path))


# Wordings of the task writers' templates that no person asks in ("In X, what is said about a, and about b?").
_TEMPLATE_MARKS = ("what is said about", "in connection with", ", and about", "have in common")
_ASKS = frozenset("what who whom whose which when where why how is are was were does do did can could has have".split())


def naturalness(question: str) -> float:
    """How much ``question`` reads like one a person would ask: it opens with a question word, is 5 to 16
    words long and ends with a question mark; the writers' template wordings and code-like tokens
    count against it. Only for choosing which synthesized tasks to show: it judges nothing else.

    Example:
        >>> naturalness("Which city was the Spirit of St. Louis named after?") > naturalness(
        ...     "In GN Build, what is said about execute, and about configuration options?")
        True
    """
    words = question.split()
    low = question.lower()
    score = float(bool(words) and words[0].lower().strip("\"'") in _ASKS)
    score += 1.0 if 5 <= len(words) <= 16 else -0.1 * abs(len(words) - 10)
    score += 0.5 * question.rstrip().endswith("?")
    score -= sum(1.5 for mark in _TEMPLATE_MARKS if mark in low)
    score -= 0.3 * sum(any(ch in w for ch in "_/=<>{}[]()#@") for w in words)
    return score


def most_natural(tasks: list[dict[str, Any]], n: int = 3) -> list[dict[str, Any]]:
    """The ``n`` tasks whose questions read most like a person's (:func:`naturalness`), in that order;
    ties keep the tasks' own order."""
    order = sorted(range(len(tasks)), key=lambda i: (-naturalness(str(tasks[i].get("question", ""))), i))
    return [tasks[i] for i in order[:n]]


__all__ = ["all_chunks", "most_natural", "naturalness", "read_task_ids", "read_written_tasks"]
