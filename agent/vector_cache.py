"""The agent's vector cache: passage vectors by chunk id, and cheap cosine relevance scores from them.

Re-embedding 50 candidates per search would cost about a second on CPU; the stored passage
vectors (title + text, unit-normalised) are fetched instead, and embedded only when the store
cannot return them. Vectors are cached per :class:`VectorCache` (one per agent, not global).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from threading import Lock
from typing import TYPE_CHECKING, Protocol

import numpy as np

from sieve.retriever.types import passage_text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sieve.retriever.index import CorpusIndex
    from sieve.retriever.types import Chunk

logger = logging.getLogger(__name__)


class VectorView(Protocol):
    """Read access to passage vectors and query-chunk cosines: what a policy may look at (see ``episode.py``)."""

    def vectors(self, chunks: Sequence[Chunk]) -> np.ndarray: ...

    def cosine(self, query: str, chunks: Sequence[Chunk]) -> np.ndarray: ...


class VectorCache:
    """Passage vectors by chunk id for one index, fetched from the store and memoised (LRU)."""

    def __init__(self, index: CorpusIndex, max_size: int = 50_000) -> None:
        self.index = index
        self.max_size = max_size
        self._vecs: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = Lock()

    def _fetch(self, chunks: Sequence[Chunk]) -> dict[str, np.ndarray]:
        ids = [c.chunk_id for c in chunks]
        out: dict[str, np.ndarray] = {}
        try:
            out.update(self.index.get_vectors(ids))
        except Exception as exc:  # a remote or older store: fall back to embedding the text
            logger.debug("Stored vectors unavailable (%s); embedding %d chunks", exc, len(ids))
        missing = [c for c in chunks if c.chunk_id not in out]
        if missing:
            texts = [passage_text(c.title, c.text, c.heading_path) for c in missing]
            for c, v in zip(missing, self.index.embedder.embed_passages(texts)):
                out[c.chunk_id] = v
        return out

    def vectors(self, chunks: Sequence[Chunk]) -> np.ndarray:
        """One unit row per chunk, in order."""
        if not chunks:
            return np.zeros((0, 1), dtype=np.float32)
        with self._lock:
            missing = [c for c in dict((c.chunk_id, c) for c in chunks).values() if c.chunk_id not in self._vecs]
        fetched = self._fetch(missing) if missing else {}
        with self._lock:
            for cid, vec in fetched.items():
                self._vecs[cid] = vec
            rows = []
            for c in chunks:
                v = self._vecs.get(c.chunk_id)
                if v is None:
                    v = fetched[c.chunk_id]
                else:
                    self._vecs.move_to_end(c.chunk_id)
                rows.append(v)
            while len(self._vecs) > self.max_size:
                self._vecs.popitem(last=False)
        return np.stack(rows)

    def cosine(self, query: str, chunks: Sequence[Chunk]) -> np.ndarray:
        """Cosine similarity of ``query`` with each chunk (vectors are unit-normalised)."""
        if not chunks:
            return np.zeros(0, dtype=np.float32)
        q = self.index.embedder.embed_query(query)
        return self.vectors(chunks) @ q


__all__ = ["VectorCache", "VectorView"]
