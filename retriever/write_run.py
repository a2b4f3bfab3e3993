"""The records of a write: what one run changes in BM25, what an indexing call reports, and the
check a list of documents passes before anything of it is written.

They sit below both halves of the write side (:mod:`~sieve.retriever.writer`, which runs writes,
and :mod:`~sieve.retriever.upsert`, the parts of a cancellable upsert) and the BM25 cache
(:mod:`~sieve.retriever.bm25_cache`, which publishes a run's segment), so none of those imports another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sieve.core.errors import InvalidInput
from sieve.retriever.bm25 import BM25Builder
from sieve.retriever.chunking import validate_doc_id
from sieve.retriever.ingest import IngestReport
from sieve.retriever.metadata import validate_metadata

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from sieve.retriever.bm25_segments import SegmentedBM25
    from sieve.retriever.types import Document


@dataclass
class IndexReport:
    """What one indexing run did."""

    added: int = 0  # documents new to the collection
    updated: int = 0  # documents whose content changed (old chunks replaced)
    unchanged: int = 0  # skipped: same content hash, all chunks present
    resumed: int = 0  # documents an interrupted run had left incomplete
    chunks_written: int = 0
    seconds: float = 0.0
    ingest: IngestReport = field(default_factory=IngestReport)
    cancelled: bool = False  # stopped before writing anything (upsert_documents): the collection is as it was
    # Documents of files inside the folder indexed that it no longer gives (deleted, moved out, or
    # left out by a .gitignore), and
    # how many of them this run removed (``index_path(..., delete_missing=True)``).
    gone: list[str] = field(default_factory=list)
    deleted: int = 0

    @property
    def chunks_per_second(self) -> float:
        return self.chunks_written / self.seconds if self.seconds else 0.0


@dataclass
class WriteRun:
    """What one write run changes in BM25: the chunks it wrote and the rows they replace."""

    base: SegmentedBM25 | None  # BM25 as the run found it; None when it was stale (then rebuilt at the end)
    added: BM25Builder = field(default_factory=BM25Builder)
    replaced_docs: set[str] = field(default_factory=set)  # documents whose old chunks are gone
    replaced_ids: set[str] = field(default_factory=set)  # chunk ids written over
    started: bool = False  # the first generation bump happened


def checked_documents(docs: Sequence[Document]) -> Sequence[Document]:
    """``docs`` if every id is unique and valid and all metadata is storable; else InvalidInput naming the first problem."""
    seen: set[str] = set()
    for doc in docs:
        validate_doc_id(doc.doc_id)
        if doc.doc_id in seen:
            raise InvalidInput(f"Expected unique document ids, got {doc.doc_id!r} twice")
        seen.add(doc.doc_id)
        try:
            validate_metadata(doc.metadata)
        except InvalidInput as exc:
            raise InvalidInput(f"Document {doc.doc_id!r}: {exc.message}") from None
    return docs


def nothing_to_index(path: str | Path, report: IngestReport) -> str:
    """The message of an index run that found no readable document in ``path`` (with every skip's reason)."""
    from sieve.retriever.readers import formats_help

    lines = report.problem_lines()  # every skip with its reason, ignored files by suffix
    return f"Expected at least one readable document ({formats_help()}) in {str(path)!r}, got none" + (
        ":\n" + "\n".join(lines) if lines else ""
    )


__all__ = ["IndexReport", "WriteRun", "checked_documents", "nothing_to_index"]
