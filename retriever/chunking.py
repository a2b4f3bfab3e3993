"""Token-aware chunking with the embedder's own tokenizer.

Chunks are windows of ``chunk_tokens`` tokens that overlap by ``chunk_overlap``; their text is
the exact character span of the document that those tokens cover (offsets from the fast
tokenizer), so a chunk can always be located in its source. Ids are ``f"{doc_id}#{position}"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from sieve.errors import InvalidInput
from sieve.retriever.types import Chunk, Document

if TYPE_CHECKING:
    from collections.abc import Iterable


class OffsetTokenizer(Protocol):
    """What the chunker needs: a (fast) tokenizer that returns character offsets."""

    def __call__(self, text: str, **kwargs: object) -> dict: ...


def chunk_id_for(doc_id: str, position: int) -> str:
    """The stable id of a document's ``position``-th chunk.

    Example:
        >>> chunk_id_for("wiki-rome", 2)
        'wiki-rome#2'
    """
    return f"{doc_id}#{position}"


def split_chunk_id(chunk_id: str) -> tuple[str, int]:
    """Inverse of :func:`chunk_id_for`; raises ``ValueError`` for ids without a position."""
    doc_id, sep, pos = chunk_id.rpartition("#")
    if not sep or not pos.isdigit():
        raise ValueError(f"Expected a chunk id like 'doc#3', got {chunk_id!r}")
    return doc_id, int(pos)


def validate_doc_id(doc_id: str) -> str:
    """Return ``doc_id`` unless it has the form of a chunk id (``doc#position``), else :class:`InvalidInput`.

    Chunk ids are ``f"{doc_id}#{position}"``: a document ``collide#0`` would be indistinguishable from
    the first chunk of ``collide`` (reading one returned the other, deleting one removed the other).

    Example:
        >>> validate_doc_id("notes#draft"), validate_doc_id("a#b#c")
        ('notes#draft', 'a#b#c')
    """
    try:
        base, position = split_chunk_id(doc_id)
    except ValueError:
        return doc_id
    raise InvalidInput(
        f"Expected a document id not ending in '#<digits>' (the form of chunk ids, doc#position), "
        f"got {doc_id!r}; it would name chunk {position} of document {base!r}: rename it, e.g. "
        f"{base + '-' + str(position)!r}"
    )


@dataclass
class Chunker:
    """Splits documents into overlapping token windows.

    Args:
        tokenizer: a Hugging Face fast tokenizer (``return_offsets_mapping`` support).
        chunk_tokens: window size in tokens.
        overlap: tokens shared by consecutive windows.
    """

    tokenizer: OffsetTokenizer
    chunk_tokens: int = 200
    overlap: int = 32

    def __post_init__(self) -> None:
        if not 0 <= self.overlap < self.chunk_tokens:
            raise ValueError(f"Expected 0 <= overlap < chunk_tokens, got {self.overlap}, {self.chunk_tokens}")

    def offsets(self, text: str) -> list[tuple[int, int]]:
        enc = self.tokenizer(
            text, add_special_tokens=False, return_offsets_mapping=True, return_attention_mask=False, verbose=False
        )
        return [(int(s), int(e)) for s, e in enc["offset_mapping"] if e > s]

    def chunk(self, doc: Document) -> list[Chunk]:
        text = doc.text
        spans = self.offsets(text)
        if not spans:
            return []
        step = self.chunk_tokens - self.overlap
        chunks: list[Chunk] = []
        start_tok = 0
        while True:
            window = spans[start_tok : start_tok + self.chunk_tokens]
            # Extend the first/last character to whole whitespace-delimited words so a chunk never
            # starts or ends inside a word that the tokenizer split into pieces.
            c_start = window[0][0] if start_tok else 0
            is_last = start_tok + self.chunk_tokens >= len(spans)
            c_end = len(text) if is_last else window[-1][1]
            while 0 < c_start and text[c_start - 1].isalnum() and text[c_start].isalnum():
                c_start -= 1
            while c_end < len(text) and text[c_end - 1].isalnum() and text[c_end].isalnum():
                c_end += 1
            chunk_text = text[c_start:c_end].strip()
            lead = len(text[c_start:c_end]) - len(text[c_start:c_end].lstrip())
            position = len(chunks)
            chunks.append(
                Chunk(
                    chunk_id=chunk_id_for(doc.doc_id, position),
                    doc_id=doc.doc_id,
                    position=position,
                    text=chunk_text,
                    title=doc.title,
                    source=doc.source,
                    char_start=c_start + lead,
                    char_end=c_start + lead + len(chunk_text),
                    n_tokens=len(window),
                    metadata=dict(doc.metadata),
                )
            )
            if is_last:
                return chunks
            start_tok += step

    def chunk_all(self, docs: Iterable[Document]) -> list[Chunk]:
        return [c for d in docs for c in self.chunk(d)]


__all__ = ["Chunker", "chunk_id_for", "split_chunk_id", "validate_doc_id"]
