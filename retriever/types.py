"""Vocabulary shared by every layer: documents, chunks and search hits.

These are plain frozen dataclasses so they cross process and thread boundaries safely and
never depend on a flag of the code that produced them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sieve.core.defaults import DEFAULT_MODE

DocId = str
ChunkId = str
MetadataValue = str | int | float | bool | list[str] | list[int] | list[float] | list[bool]
Metadata = dict[str, MetadataValue]
"""What Chroma holds as given: scalars and non-empty single-type lists (see ``retriever.metadata``)."""
Where = dict[str, Any]
"""A Chroma-style metadata filter, e.g. ``{"source": "a.md"}`` or ``{"$and": [...]}``."""

SearchMode = str  # a name in sieve.retriever.modes.MODES (dense, bm25, hybrid, and any registered)
# What produced a hit: a retriever, named as its mode is in sieve.retriever.modes.MODES, or "grep" (the
# agent's exact-text search). A str, not a Literal: a registered mode's retriever names its own hits.
HitMode = str


@dataclass(frozen=True)
class Document:
    """A source document before chunking.

    Example:
        >>> Document(doc_id="d1", title="T", text="Hello.").doc_id
        'd1'
    """

    doc_id: DocId
    text: str
    title: str = ""
    source: str = ""
    metadata: Metadata = field(default_factory=dict)
    # What the document is read in, searched with it but never returned: for a conversation turn
    # stored as its own document, the turn before it (sieve.retriever.turns.with_turn_context).
    context: str = ""


@dataclass(frozen=True)
class Chunk:
    """A contiguous span of a document, the unit that is embedded, searched and returned.

    ``chunk_id`` is ``f"{doc_id}#{position}"``: stable across re-indexing of unchanged text.
    ``char_start``/``char_end`` index into the document text.
    """

    chunk_id: ChunkId
    doc_id: DocId
    position: int
    text: str
    title: str = ""
    source: str = ""
    char_start: int = 0
    char_end: int = 0
    n_tokens: int = 0
    metadata: Metadata = field(default_factory=dict)
    # The headings of the sections that hold the chunk, outermost first, " > "-joined, without one
    # that repeats the title ("add > Options"); for text without headings, its document's
    # ``context`` (a conversation turn's previous turn), else empty. Embedded and searched, not returned.
    heading_path: str = ""


def passage_text(title: str, text: str, heading_path: str = "") -> str:
    """A chunk as embedded and BM25-indexed: its title and heading path on a line of their own
    (when it has them), then its text.

    The title disambiguates short passages ("He was born in ...") for both scorers; the heading
    path names what a section of a long page is about ("Options" of which command).

    Example:
        >>> passage_text("Paris", "The capital of France.")
        'Paris\\nThe capital of France.'
        >>> passage_text("Commands", "--dry-run: ...", "add > Options")
        'Commands > add > Options\\n--dry-run: ...'
        >>> passage_text("", "Untitled text.")
        'Untitled text.'
    """
    head = " > ".join(p for p in (title, heading_path) if p)
    return f"{head}\n{text}" if head else text


@dataclass(frozen=True)
class Hit:
    """One search result: a chunk with the score the producing retriever gave it.

    Scores are comparable only within one result list (cosine similarity for dense, BM25 for
    bm25, fused reciprocal-rank score for hybrid).
    """

    chunk: Chunk
    score: float
    rank: int = 0
    mode: HitMode = DEFAULT_MODE

    @property
    def chunk_id(self) -> ChunkId:
        return self.chunk.chunk_id

    @property
    def doc_id(self) -> DocId:
        return self.chunk.doc_id


__all__ = [
    "ChunkId",
    "Chunk",
    "DocId",
    "Document",
    "Hit",
    "HitMode",
    "Metadata",
    "MetadataValue",
    "SearchMode",
    "Where",
    "passage_text",
]
