"""What every task writer reads and resumes from: all chunks of a collection, and the tasks a run already wrote.

Shared by the template, claim and hard writers (``synth``, ``synth_hard``), which import each
other's modules in one direction only: a helper both need lives here, below both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sieve.errors import EmptyCorpus

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


__all__ = ["all_chunks", "read_task_ids", "read_written_tasks"]
