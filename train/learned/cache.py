"""Memoised retrieval for RL rollouts: a group of rollouts of one task repeats most of its queries.

:class:`CachedIndex` stands in for a :class:`~sieve.retriever.index.CorpusIndex` inside the
agent's tools. For an unfiltered hybrid search it keeps each query's vector and its dense and
BM25 ranked lists once, deep enough to leave out the chunks an episode has already seen, and
redoes only the cheap part per call — drop the excluded ids, cut both lists at the fusion
depth, fuse by RRF with the index's own constant and weights — so a hit list equals the
index's own (the same steps on the same lists). Chunks are memoised by id. Anything else
(filters, grep, read, another mode, more exclusions than the cached depth covers) goes to the
index itself.

With ``folder``, the query vectors and ranked lists persist between runs (training several
seeds on one task set embeds each query once), keyed by the collection's generation and the
embedder, so a changed collection or model never reads a stale cache.

Only for a collection that does not change while the cache lives (a training run).
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from threading import Lock
from typing import TYPE_CHECKING, Any

import numpy as np

from sieve.core.defaults import DEFAULT_K, DEFAULT_MODE
from sieve.retriever.base import validate_k, validate_query
from sieve.retriever.hybrid import rrf_fuse
from sieve.retriever.types import Hit

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from sieve.retriever.index import CorpusIndex
    from sieve.retriever.types import Chunk, SearchMode, Where

logger = logging.getLogger(__name__)


class _QueryVectors:
    """The embedder as the tools see it, with query vectors memoised (and batched on request)."""

    def __init__(self, owner: CachedIndex) -> None:
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._owner.index.embedder, name)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_queries([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        vecs = self._owner._vectors
        missing = [t for t in dict.fromkeys(texts) if t not in vecs]
        if missing:
            for t, v in zip(missing, self._owner.index.embedder.embed_passages(missing)):
                vecs[t] = v
        return np.stack([vecs[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


class CachedIndex:
    """A read-through cache of ``index``'s hybrid searches, query vectors and chunks (attributes pass through).

    Args:
        index: the collection.
        max_excluded: exclusions the cached lists are deep enough for (deeper asks go to the index).
        folder: where to keep the cache between runs (none: in memory only).

    Example:
        >>> cached = CachedIndex(index)  # doctest: +SKIP
        >>> cached.search("q", 10, exclude={"a#0"}) == index.search("q", 10, exclude={"a#0"})  # doctest: +SKIP
        True
    """

    def __init__(self, index: CorpusIndex, *, max_excluded: int = 200, folder: str | Path | None = None) -> None:
        self.index = index
        self.max_excluded = max_excluded
        self._lists: dict[str, tuple[list[str], list[str]]] = {}
        self._vectors: dict[str, np.ndarray] = {}
        self._chunks: dict[str, Chunk] = {}
        self._lock = Lock()
        self.embedder = _QueryVectors(self)
        self.hits = 0
        self.misses = 0
        self.folder = Path(folder) / self._key() if folder is not None else None
        if self.folder is not None:
            self._load()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.index, name)

    # -- persistence ----------------------------------------------------------------------------
    def _key(self) -> str:
        e = self.index.embedder
        tag = f"{self.index.name}|{self.index.refresh().generation}|{e.name}|{e.dtype}|{self.max_excluded}"
        return f"{self.index.name[:60]}-{hashlib.sha256(tag.encode()).hexdigest()[:12]}"

    def _load(self) -> None:
        if self.folder is None:
            return
        try:
            self._lists = {q: (d, b) for q, (d, b) in json.loads((self.folder / "lists.json").read_text()).items()}
            with np.load(self.folder / "vectors.npz") as z:
                self._vectors = dict(zip(json.loads((self.folder / "texts.json").read_text()), z["vectors"]))
            logger.info("Retrieval cache %s: %d queries, %d vectors", self.folder, len(self._lists), len(self._vectors))
        except (OSError, ValueError, KeyError):
            self._lists, self._vectors = {}, {}

    def save(self) -> None:
        """Write the cache to ``folder`` (atomically per file); a no-op without a folder."""
        if self.folder is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        with self._lock:
            lists = dict(self._lists)
            texts = list(self._vectors)
            mat = np.stack([self._vectors[t] for t in texts]) if texts else np.zeros((0, 1), np.float32)
        for name, write in (
            ("lists.json", lambda p: p.write_text(json.dumps(lists))),
            ("texts.json", lambda p: p.write_text(json.dumps(texts))),
            ("vectors.npz", lambda p: np.savez(p, vectors=mat)),
        ):
            tmp = self.folder / f"tmp-{name}"
            write(tmp)
            (self.folder / f"tmp-{name}").replace(self.folder / name)

    # -- search ---------------------------------------------------------------------------------
    def _ranked(self, query: str, depth: int) -> tuple[list[str], list[str]]:
        key = f"{depth}\t{query}"  # lists cut at another depth are not the same lists
        with self._lock:
            got = self._lists.get(key)
        if got is not None:
            self.hits += 1
            return got
        dense = [cid for cid, _ in self.index.scored_ids(query, depth, mode="dense")]
        bm25 = [cid for cid, _ in self.index.scored_ids(query, depth, mode="bm25")]
        with self._lock:
            self.misses += 1
            self._lists[key] = (dense, bm25)
        return dense, bm25

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        missing = [c for c in chunk_ids if c not in self._chunks]
        if missing:
            for c in self.index.get_chunks(missing):
                self._chunks[c.chunk_id] = c
        return [self._chunks[c] for c in chunk_ids if c in self._chunks]

    def search(
        self,
        query: str,
        k: int = DEFAULT_K,
        *,
        mode: SearchMode = DEFAULT_MODE,
        where: Where | None = None,
        exclude: Collection[str] | None = None,
    ) -> list[Hit]:
        exclude = set(exclude or ())
        h = self.index.hybrid
        depth = max(k, h.candidates)
        if mode != "hybrid" or where is not None or len(exclude) > self.max_excluded:
            return self.index.search(query, k, mode=mode, where=where, exclude=exclude)
        validate_query(query)
        validate_k(k, h.max_k)
        dense, bm25 = self._ranked(query, depth + self.max_excluded)
        fused = rrf_fuse(
            [[c for c in dense if c not in exclude][:depth], [c for c in bm25 if c not in exclude][:depth]],
            k=h.rrf_k,
            weights=h.weights,
        )[:k]
        chunks = {c.chunk_id: c for c in self.get_chunks([cid for cid, _ in fused])}
        kept = [(chunks[cid], s) for cid, s in fused if cid in chunks]
        return [Hit(chunk=c, score=s, rank=i + 1, mode="hybrid") for i, (c, s) in enumerate(kept)]


__all__ = ["CachedIndex"]
