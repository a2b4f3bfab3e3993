"""Token-aware chunking with the embedder's own tokenizer.

Chunks hold at most ``chunk_tokens`` tokens; their text is the exact character span of the
document that those tokens cover (offsets from the fast tokenizer), so a chunk can always be
located in its source. Ids are ``f"{doc_id}#{position}"``.

Three ways to cut (:data:`SPLITS`):

- ``sections`` (the default): as ``structure``, and documentation is read as documentation. Every
  heading (Markdown ATX or setext, reStructuredText underlined titles; :mod:`sieve.retriever.sections`)
  opens a chunk, wherever it falls in the window: a chunk never joins the end of one section to the
  start of the next, except where a heading only sits right above another (a section's title above its
  first subsection's stays with it). Each chunk records its heading path (``add > Options``), which
  :func:`~sieve.retriever.types.passage_text` puts beside the title in what is embedded and BM25-indexed;
  the chunk's text and offsets stay those of the original. Text without headings is cut exactly as
  ``structure`` cuts it. On Poetry's docs this lifted hybrid's span recall@10 from 0.733 to 0.792
  (docs/experiments/sections.md); the path alone, on ``structure``'s chunks, lowered it.
- ``structure``: a chunk ends at the strongest break of the text in the second half
  of its window: a Markdown heading (so a section's heading opens the chunk that holds it), else a
  blank line (paragraph, section, page), else a line break, else a sentence's end; only text with
  none of them is cut mid-sentence. The next chunk starts right there after a
  line or paragraph break (nothing is cut, so nothing needs repeating), else ``chunk_overlap``
  tokens back, at a sentence's start where one is in reach. A chunk is then a paragraph or a run
  of them, so what a user reads starts where a thought starts, and a page or section seldom
  shares a chunk with the next one.
- ``window``: fixed windows of ``chunk_tokens`` tokens overlapping by ``chunk_overlap``, cut
  wherever the count falls (how Sieve chunked before ``structure``; indexes built that way keep it).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from sieve.core.errors import InvalidInput
from sieve.retriever.sections import SectionMap, find_headings, heading_path
from sieve.retriever.types import Chunk, Document

if TYPE_CHECKING:
    from collections.abc import Iterable


ChunkSplit = Literal["sections", "structure", "window"]
SPLITS: tuple[ChunkSplit, ...] = ("sections", "structure", "window")
_SENTENCE_END = frozenset(".!?:;")
_CLOSERS = "\"')]\u201d\u2019"  # may follow a sentence's end: 'he said "yes." Then'.


@dataclass(frozen=True)
class _Sections:
    """A document's headings as the ``sections`` split cuts by them: token indices and character offsets."""

    map: SectionMap
    tokens: list[int]  # the first token of each heading (ascending, distinct)
    ends: list[int]  # per token above, the first token after that heading's own lines
    offsets: frozenset[int]  # the character offsets where headings start

    @classmethod
    def of(cls, text: str, spans: list[tuple[int, int]]) -> _Sections:
        smap = SectionMap(find_headings(text))
        firsts = [s for s, _ in spans]
        pairs = {bisect.bisect_left(firsts, h.start): bisect.bisect_left(firsts, h.end) for h in smap.headings}
        tokens = sorted(t for t in pairs if t < len(spans))
        return cls(smap, tokens, [pairs[t] for t in tokens], frozenset(h.start for h in smap.headings))

    def _opening(self, start: int) -> tuple[int, int]:
        """(j, token): the index of the first heading after those that open a chunk at token
        ``start``, and the token where that chunk's own text begins."""
        j = bisect.bisect_left(self.tokens, start)
        reach = start  # the chunk holds only headings up to here
        while j < len(self.tokens) and self.tokens[j] <= reach:
            reach = max(reach, self.ends[j])
            j += 1
        return j, reach

    def next_cut(self, start: int) -> int | None:
        """The first heading that may end a chunk opened at token ``start``: one past whatever
        headings open the chunk itself (a section's heading right above its first subsection's stays
        with it, never a chunk of headings alone). None: no more headings."""
        j, _ = self._opening(start)
        return self.tokens[j] if j < len(self.tokens) else None

    def path(self, start: int, spans: list[tuple[int, int]], title: str) -> str:
        """The heading path of a chunk opened at token ``start``: that of its first line of text
        (below the headings it opens with)."""
        _, reach = self._opening(start)
        offset = spans[min(reach, len(spans) - 1)][0]
        return heading_path(self.map.path_at(offset), title)


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
    """Splits documents into chunks of at most ``chunk_tokens`` tokens.

    Args:
        tokenizer: a Hugging Face fast tokenizer (``return_offsets_mapping`` support).
        chunk_tokens: the most tokens a chunk holds.
        overlap: tokens shared by consecutive chunks where a cut falls inside a paragraph.
        split: ``structure`` cuts at paragraph, line and sentence breaks; ``window`` at fixed counts.
    """

    tokenizer: OffsetTokenizer
    chunk_tokens: int = 200
    overlap: int = 32
    split: ChunkSplit = "sections"

    def __post_init__(self) -> None:
        if not 0 <= self.overlap < self.chunk_tokens:
            raise ValueError(f"Expected 0 <= overlap < chunk_tokens, got {self.overlap}, {self.chunk_tokens}")
        if self.split not in SPLITS:
            raise ValueError(f"Expected split in {SPLITS}, got {self.split!r}")

    def offsets(self, text: str) -> list[tuple[int, int]]:
        enc = self.tokenizer(
            text, add_special_tokens=False, return_offsets_mapping=True, return_attention_mask=False, verbose=False
        )
        return [(int(s), int(e)) for s, e in enc["offset_mapping"] if e > s]

    @staticmethod
    def break_strength(text: str, spans: list[tuple[int, int]], i: int, headings: frozenset[int] | None = None) -> int:
        """How strong a break the text has between tokens ``i - 1`` and ``i``: 4 a line that opens a
        heading, 3 a blank line, 2 a line break, 1 a sentence's end (``.!?:;``, closing quotes or
        brackets allowed, then a space), 0 none (inside a sentence, or inside a word the tokenizer
        split). ``headings`` holds the character offsets where headings start (``sections``); without
        it (``structure``) any line starting with ``#`` counts as a Markdown heading."""
        gap = text[spans[i - 1][1] : spans[i][0]]
        if "\n" in gap:
            opens = spans[i][0] in headings if headings is not None else text[spans[i][0]] == "#"
            if opens:  # a heading starts here: it opens the next chunk, never ends one
                return 4
            return 3 if gap.count("\n") > 1 else 2
        if not gap:
            return 0
        end = spans[i - 1][1]
        tail = text[max(0, end - 4) : end].rstrip(_CLOSERS)
        return 1 if tail[-1:] in _SENTENCE_END else 0

    def _cut(
        self, text: str, spans: list[tuple[int, int]], start: int, sections: _Sections | None = None
    ) -> tuple[int, int]:
        """(end, next start) token indices of the chunk that begins at token ``start`` (not the last
        one); ``sections``: where headings start (``sections`` split)."""
        limit = start + self.chunk_tokens
        if self.split == "window":
            return limit, limit - self.overlap
        head = sections.next_cut(start) if sections is not None else None
        if head is not None and head <= limit:  # a heading past the chunk's own headings ends it
            return head, head
        starts = sections.offsets if sections is not None else None
        end, best = limit, 0
        for i in range(limit, start + max(1, self.chunk_tokens // 2) - 1, -1):  # latest strongest break wins
            strength = self.break_strength(text, spans, i, starts)
            if strength > best:
                end, best = i, strength
                if strength == 4:
                    break
        if best >= 2:
            return end, end
        nxt = max(end - self.overlap, start + 1)
        for i in range(nxt, end):  # the earliest sentence start in the overlap keeps the most context
            if self.break_strength(text, spans, i, starts) >= 1:
                nxt = i
                break
        return end, nxt

    def chunk(self, doc: Document) -> list[Chunk]:
        text = doc.text
        spans = self.offsets(text)
        if not spans:
            return []
        sections = _Sections.of(text, spans) if self.split == "sections" else None
        chunks: list[Chunk] = []
        start_tok = 0
        while True:
            is_last = start_tok + self.chunk_tokens >= len(spans) and (
                sections is None or sections.next_cut(start_tok) is None
            )
            end_tok, next_tok = (len(spans), len(spans)) if is_last else self._cut(text, spans, start_tok, sections)
            window = spans[start_tok:end_tok]
            # Extend the first/last character to whole whitespace-delimited words so a chunk never
            # starts or ends inside a word that the tokenizer split into pieces.
            c_start = window[0][0] if start_tok else 0
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
                    heading_path=(sections.path(start_tok, spans, doc.title) if sections is not None else "")
                    or doc.context,
                )
            )
            if is_last:
                return chunks
            start_tok = next_tok

    def chunk_all(self, docs: Iterable[Document]) -> list[Chunk]:
        return [c for d in docs for c in self.chunk(d)]


__all__ = ["Chunker", "chunk_id_for", "split_chunk_id", "validate_doc_id"]
