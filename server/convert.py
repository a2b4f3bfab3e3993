"""Conversions between the library's dataclasses and the HTTP schemas (and the wire formats peers use)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from sieve.results import Result
from sieve.server.schemas import ChunkOut, DocumentOut, EvidenceOut, SearchR1Doc, UsageOut

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sieve.agent import Trace
    from sieve.agent.trace import Evidence
    from sieve.retriever.types import Chunk, Hit


def hit_out(hit: Hit) -> EvidenceOut:
    return EvidenceOut(**Result.from_hit(hit).to_json())


def evidence_out(e: Evidence) -> EvidenceOut:
    return EvidenceOut(**Result.from_evidence(e).to_json())


def trace_usage(trace: Trace) -> UsageOut:
    calls = trace.tool_calls
    return UsageOut(
        turns=len(trace.turns),
        tool_calls=len(calls),
        searches=trace.n_searches,
        tokens=trace.tokens_total,
        peak_context_tokens=trace.peak_context_tokens,
        ms=round(trace.wall_ms, 2),
    )


def completion_tokens(trace: Trace) -> int:
    return sum(t.completion_tokens for t in trace.turns)


def search_r1_contents(chunk: Chunk) -> str:
    """Search-R1's passage format: the title in quotes on the first line (veRL reads it back from there).

    Example:
        >>> from sieve.retriever.types import Chunk
        >>> search_r1_contents(Chunk("d#0", "d", 0, "Body.", title="Title"))
        '"Title"\\nBody.'
    """
    return f'"{chunk.title}"\n{chunk.text}'


def search_r1_doc(chunk: Chunk) -> SearchR1Doc:
    return SearchR1Doc(id=chunk.chunk_id, contents=search_r1_contents(chunk))


def stitch_chunks(chunks: Sequence[Chunk]) -> str:
    """Rebuild a document's text from its overlapping chunks (by character offsets).

    Example:
        >>> from sieve.retriever.types import Chunk
        >>> a = Chunk("d#0", "d", 0, "one two three", char_start=0, char_end=13)
        >>> b = Chunk("d#1", "d", 1, "three four", char_start=8, char_end=18)
        >>> stitch_chunks([a, b])
        'one two three four'
    """
    out: list[str] = []
    end = -1
    for c in sorted(chunks, key=lambda c: c.position):
        if end < 0:
            out.append(c.text)
        elif c.char_start >= end:
            out.append(" " + c.text)  # a gap can only be whitespace the chunker stripped
        elif c.char_end > end:
            out.append(c.text[end - c.char_start :])
        end = max(end, c.char_end)
    return "".join(out)


def chunk_out(c: Chunk) -> ChunkOut:
    return ChunkOut(
        id=c.chunk_id,
        position=c.position,
        text=c.text,
        char_start=c.char_start,
        char_end=c.char_end,
        n_tokens=c.n_tokens,
    )


def document_out(chunks: Sequence[Chunk], collection: str) -> DocumentOut:
    first = min(chunks, key=lambda c: c.position)
    return DocumentOut(
        id=first.doc_id,
        collection=collection,
        title=first.title,
        source=first.source,
        text=stitch_chunks(chunks),
        metadata=dict(first.metadata),
        chunks=[chunk_out(c) for c in sorted(chunks, key=lambda c: c.position)],
    )


def justification_for(e: Evidence) -> str:
    """The agent's justification, or (no-LLM policies write none) a one-sentence statement of why it ranked."""
    if e.justification.strip():
        return " ".join(e.justification.split())
    where = f' in "{e.title}"' if e.title else ""
    return f"Ranked {e.rank} by the search agent (score {e.score:.4f}){where}."


def document_blocks(evidence: Sequence[Evidence]) -> str:
    """Context-1's final answer format: ranked ``<Document id=...><Justification>...`` blocks.

    Example:
        >>> from sieve.agent.trace import Evidence
        >>> document_blocks([Evidence("d#0", "d", 0.5, 1, justification="Says so.")])
        '<Document id="d#0"><Justification>Says so.</Justification></Document>'
    """
    blocks = []
    for e in evidence:
        # Escape so a justification can never close the block early; ids are quoted.
        just = html.escape(justification_for(e), quote=False)
        blocks.append(f'<Document id="{html.escape(e.chunk_id)}"><Justification>{just}</Justification></Document>')
    return "\n".join(blocks)


__all__ = [
    "chunk_out",
    "completion_tokens",
    "document_blocks",
    "document_out",
    "evidence_out",
    "hit_out",
    "justification_for",
    "search_r1_contents",
    "search_r1_doc",
    "stitch_chunks",
    "trace_usage",
]
