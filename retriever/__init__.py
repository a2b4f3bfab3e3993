"""Retrieval layer: ingestion, chunking, embeddings, the Chroma store, BM25 and hybrid fusion.

The names below resolve on first access (PEP 562): importing a light submodule such as
``sieve.retriever.config`` must not load scipy (BM25) or Chroma.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sieve.core.lazy import lazy_getattr

if TYPE_CHECKING:
    from sieve.retriever.base import Retriever, validate_k, validate_query
    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.index import CorpusIndex, IndexReport, delete_collection
    from sieve.retriever.store import list_collections
    from sieve.retriever.types import Chunk, Document, Hit

__all__ = [
    "Chunk",
    "CorpusIndex",
    "Document",
    "Hit",
    "IndexReport",
    "Retriever",
    "RetrieverConfig",
    "delete_collection",
    "list_collections",
    "validate_k",
    "validate_query",
]

_LAZY = {
    "Retriever": ".base",
    "validate_k": ".base",
    "validate_query": ".base",
    "RetrieverConfig": ".config",
    "CorpusIndex": ".index",
    "IndexReport": ".index",
    "delete_collection": ".index",
    "list_collections": ".store",
    "Chunk": ".types",
    "Document": ".types",
    "Hit": ".types",
}


__getattr__ = lazy_getattr(__name__, _LAZY)
