"""One ranked item of evidence as every interface hands it out: :class:`Result`.

The retriever ranks :class:`~sieve.retriever.types.Hit` (a chunk and its mode's score) and an
episode returns :class:`~sieve.agent.trace.Evidence` (with the policy's justification); what a
user receives from ``/v1/retrieve``, ``/v1/search``, MCP, the Python client or a RAG adapter is
this one record, made from either by :meth:`Result.from_hit` or :meth:`Result.from_evidence`
(the HTTP schema ``EvidenceOut`` has exactly its fields; ``tests/test_results.py`` holds it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sieve.agent.trace import Evidence
    from sieve.retriever.types import Hit


@dataclass(frozen=True)
class Result:
    """One ranked item of evidence (a chunk): its id, its document, its rank and score, and its text."""

    id: str
    doc_id: str
    rank: int
    score: float
    title: str = ""
    text: str = ""
    source: str = ""
    justification: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_hit(cls, hit: Hit) -> Result:
        """A retrieval hit: the mode's score (cosine, BM25 or hybrid RRF); no justification."""
        c = hit.chunk
        return cls(
            id=c.chunk_id,
            doc_id=c.doc_id,
            rank=hit.rank,
            score=float(hit.score),
            title=c.title,
            text=c.text,
            source=c.source,
            metadata=dict(c.metadata),
        )

    @classmethod
    def from_evidence(cls, e: Evidence) -> Result:
        """An episode's returned evidence, with its justification."""
        return cls(
            id=e.chunk_id,
            doc_id=e.doc_id,
            rank=e.rank,
            score=float(e.score),
            title=e.title,
            text=e.text,
            source=e.source,
            justification=e.justification,
            metadata=dict(e.metadata),
        )

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Result:
        """A result as the server sends it (missing optional fields take their defaults)."""
        return cls(
            id=d["id"],
            doc_id=d["doc_id"],
            rank=int(d.get("rank", 0)),
            score=float(d.get("score", 0.0)),
            title=d.get("title", ""),
            text=d.get("text", ""),
            source=d.get("source", ""),
            justification=d.get("justification", ""),
            metadata=dict(d.get("metadata") or {}),
        )

    def to_json(self) -> dict[str, Any]:
        """The fields as a JSON object (what the server sends)."""
        return asdict(self)


__all__ = ["Result"]
