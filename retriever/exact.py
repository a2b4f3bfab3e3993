"""Exact dense search for collections small enough to hold in memory: every vector, one product.

Chroma's HNSW graph is approximate, and a new process rebuilds the records added since the index's
last save into a graph that differs from one process to the next. Even with a 400-wide beam
(``HNSW_MIN_BEAM`` in :mod:`sieve.retriever.store`), the same HotpotQA question (5,406 chunks)
missed its true 22nd-nearest chunk in 7 of 10 fresh processes and found it in 3, so one `sieve
eval` run's hybrid R@20 read 0.960 and the next 0.961. Below :data:`EXACT_MAX_CHUNKS` chunks a
query is instead scored against every vector: exact, the same in every process, and cheap (a
matrix-vector product: ~0.7 ms at 17k chunks of 384 floats, under four threads at once).

The vectors are read from Chroma once per write generation (the token every write changes,
:class:`~sieve.retriever.store.CollectionState`), so a write by this or another process is seen by
the next query, as BM25's cache sees it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np

# 20k chunks of 384 floats hold 31 MB, and reading them again after a write takes ~0.55 s (0.46 s at
# the filings' 16,808 chunks): the first search after each write pays it. Above, HNSW's beam
# (store.HNSW_MIN_BEAM) serves: a server taking writes on a large collection never stalls on a reload.
EXACT_MAX_CHUNKS = 20_000


@dataclass(frozen=True)
class ExactVectors:
    """Every chunk's unit vector of one collection at one write generation."""

    key: tuple[str, str]  # (collection id, generation)
    ids: list[str]
    matrix: np.ndarray  # one unit row per id, float32

    @classmethod
    def build(cls, key: tuple[str, str], ids: list[str], vectors: np.ndarray) -> ExactVectors:
        import numpy as np  # not at import time: `sieve --help` loads no numpy

        m = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1)
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        return cls(key, list(ids), m / np.where(norms > 0, norms, 1.0))

    def top(self, embedding: np.ndarray, n: int) -> list[tuple[str, float]]:
        """The ``n`` most similar (id, cosine) pairs, ties in store order.

        Example:
            >>> import numpy as np
            >>> ev = ExactVectors.build(("c", "g"), ["a", "b", "c"], np.array([[1, 0], [0, 1], [1, 1]]))
            >>> [(i, round(s, 3)) for i, s in ev.top(np.array([1.0, 0.2]), 2)]
            [('a', 0.981), ('c', 0.832)]
        """
        import numpy as np

        if n <= 0 or not self.ids:
            return []
        q = np.asarray(embedding, dtype=np.float32).ravel()
        norm = float(np.linalg.norm(q))
        # einsum's own loop, not BLAS: the agent runs its searches in threads, and OpenBLAS's pool
        # called from several threads at once made one product 10x slower (0.62 ms vs 0.07 at 1.4k chunks).
        sims = np.einsum("ij,j->i", self.matrix, q / norm if norm > 0 else q)
        n = min(n, len(self.ids))
        best = np.argpartition(-sims, n - 1)[:n] if n < len(self.ids) else np.arange(len(self.ids))
        order = best[np.lexsort((best, -sims[best]))]  # by similarity, then store order: no ties left to chance
        return [(self.ids[i], float(sims[i])) for i in order]


class ExactCache:
    """The :class:`ExactVectors` of a collection's current generation, rebuilt when it changes (thread-safe)."""

    def __init__(self, max_chunks: int = EXACT_MAX_CHUNKS) -> None:
        self.max_chunks = max_chunks
        self._lock = threading.Lock()
        self._current: ExactVectors | None = None
        self._too_big: tuple[str, str] | None = None

    def clear(self) -> None:
        """Forget the vectors (this process wrote): the next query reads them again."""
        with self._lock:
            self._current, self._too_big = None, None

    def current(
        self,
        key: tuple[str, str],
        count: Callable[[], int],
        load: Callable[[], tuple[list[str], np.ndarray]],
    ) -> ExactVectors | None:
        """The vectors at ``key`` (loaded with ``load`` when this is a new generation), or None when the
        collection holds more than ``max_chunks`` (``count``) and HNSW must serve."""
        with self._lock:
            if self._current is not None and self._current.key == key:
                return self._current
            if self._too_big == key:
                return None
            if count() > self.max_chunks:
                self._too_big, self._current = key, None
                return None
            ids, vectors = load()
            self._current = ExactVectors.build(key, ids, vectors)
            return self._current


__all__ = ["EXACT_MAX_CHUNKS", "ExactCache", "ExactVectors"]
