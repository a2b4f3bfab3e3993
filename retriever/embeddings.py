"""Sentence-transformers embeddings, loaded offline from a local path.

The model is loaded once per process and shared by every collection opened with the same
settings. Query embeddings are memoised (agents re-issue similar queries); passages are
embedded in batches with a progress bar. An embedder built with ``lazy=True`` loads torch and
the weights on first use only, so a BM25 query or a listing never pays the ~10 s of CPU it costs.
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

    Build it with :meth:`from_config` or :meth:`load`; ``__init__`` does no I/O. ``model`` is
    None until first use when built with ``lazy=True`` (``path`` then says what to load).
    """

    model: object | None  # sentence_transformers.SentenceTransformer
    name: str
    dtype: str = "float32"
    batch_size: int = 32
    query_cache_size: int = 4096
    path: str = ""
    _cache: OrderedDict[str, np.ndarray] = field(default_factory=OrderedDict, repr=False)
    _lock: Lock = field(default_factory=Lock, repr=False)
    _load_lock: Lock = field(default_factory=Lock, repr=False)

    @classmethod
    def load(cls, path: str, *, dtype: str = "float32", batch_size: int = 32, lazy: bool = False) -> Embedder:
        """A local sentence-transformers folder; never touches a model hub.

        With ``lazy=True`` only the folder is checked now; the weights load on first use.
        """
        if not os.path.isdir(path):
            raise ModelUnavailable(
                f"Expected a local sentence-transformers model folder, got {path!r} (not a directory). "
                "Set SIEVE_EMBEDDER or --embedder to a folder; models are never downloaded."
            )
        emb = cls(model=None, name=os.path.basename(os.path.normpath(path)), dtype=dtype, batch_size=batch_size,
                  path=path)
        if not lazy:
            emb.loaded()
        return emb

    @classmethod
    def from_config(cls, config: RetrieverConfig, *, lazy: bool = False) -> Embedder:
        """The configured model. Loading costs seconds: build one and share it between indexes."""
        return cls.load(config.embedder_path, dtype=config.embed_dtype, batch_size=config.embed_batch_size,
                        lazy=lazy)

    @property
    def is_loaded(self) -> bool:
        return self.model is not None

    def loaded(self) -> object:
        """The model, loading it first if this embedder was built lazily (thread-safe, once)."""
        if self.model is None:
            with self._load_lock:
                if self.model is None:
                    self.model = _load_model(self.path, self.dtype)
        return self.model

    @property
    def tokenizer(self) -> object:
        return self.loaded().tokenizer  # type: ignore[attr-defined]

    @property
    def dim(self) -> int:
        return int(self.loaded().get_embedding_dimension())  # type: ignore[attr-defined]

    def embed_passages(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """Unit-normalised float32 embeddings, one row per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:  # torch CPU inference is not faster when two threads share 2 cores
            vecs = self.loaded().encode(  # type: ignore[attr-defined]
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


def _load_model(path: str, dtype: str) -> object:
    prepare_runtime()  # offline hub, passive OpenMP waiting: before torch is first imported
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    # transformers draws a "Loading weights" bar for a one-second load; a CLI call would print it
    # on every run, in the middle of the command's own output.
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        model = SentenceTransformer(path, device="cpu", local_files_only=True)
    finally:
        if bars:
            hf_logging.enable_progress_bar()
    if dtype == "bfloat16":
        model = model.to(torch.bfloat16)
    logger.info("Loaded embedder %s (%s, dim=%d)", path, dtype, model.get_embedding_dimension())
    return model


__all__ = ["Embedder"]
