"""Sentence-transformers embeddings, loaded offline from a local path.

The model is loaded once per process and shared by every collection opened with the same
settings. Query embeddings are memoised (agents re-issue similar queries); passages are
embedded in batches with a progress bar.
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from threading import Lock
from typing import TYPE_CHECKING

import numpy as np

from sieve.errors import ModelUnavailable
from sieve.runtime import prepare_runtime

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sieve.retriever.config import RetrieverConfig

logger = logging.getLogger(__name__)


@dataclass
class Embedder:
    """A sentence-transformers model with batching, normalisation and a query cache.

    Build it with :meth:`from_config` or :meth:`load`; ``__init__`` does no I/O.
    """

    model: object  # sentence_transformers.SentenceTransformer
    name: str
    dtype: str = "float32"
    batch_size: int = 32
    query_cache_size: int = 4096
    _cache: OrderedDict[str, np.ndarray] = field(default_factory=OrderedDict, repr=False)
    _lock: Lock = field(default_factory=Lock, repr=False)

    @classmethod
    def load(cls, path: str, *, dtype: str = "float32", batch_size: int = 32) -> Embedder:
        """Load a local sentence-transformers folder; never touches a model hub."""
        if not os.path.isdir(path):
            raise ModelUnavailable(
                f"Expected a local sentence-transformers model folder, got {path!r} (not a directory). "
                "Set SIEVE_EMBEDDER or --embedder to a folder; models are never downloaded."
            )
        prepare_runtime()  # offline hub, passive OpenMP waiting: before torch is first imported
        import torch
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(path, device="cpu", local_files_only=True)
        if dtype == "bfloat16":
            model = model.to(torch.bfloat16)
        logger.info("Loaded embedder %s (%s, dim=%d)", path, dtype, model.get_embedding_dimension())
        return cls(model=model, name=os.path.basename(os.path.normpath(path)), dtype=dtype, batch_size=batch_size)

    @classmethod
    def from_config(cls, config: RetrieverConfig) -> Embedder:
        """Load the configured model. Loading costs seconds: build one and share it between indexes."""
        return cls.load(config.embedder_path, dtype=config.embed_dtype, batch_size=config.embed_batch_size)

    @property
    def tokenizer(self) -> object:
        return self.model.tokenizer  # type: ignore[attr-defined]

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())  # type: ignore[attr-defined]

    def embed_passages(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """Unit-normalised float32 embeddings, one row per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:  # torch CPU inference is not faster when two threads share 2 cores
            vecs = self.model.encode(  # type: ignore[attr-defined]
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=False,
                convert_to_tensor=True,
                show_progress_bar=progress,
            )
        return vecs.float().cpu().numpy().astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
        vec = self.embed_passages([text])[0]
        with self._lock:
            self._cache[text] = vec
            if len(self._cache) > self.query_cache_size:
                self._cache.popitem(last=False)
        return vec

    def clear_cache(self) -> None:
        """Forget cached query vectors (eval does this between systems so none inherits warm queries)."""
        with self._lock:
            self._cache.clear()

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            for t, v in zip(missing, self.embed_passages(missing)):
                with self._lock:
                    self._cache[t] = v
        return np.stack([self.embed_query(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


__all__ = ["Embedder"]
