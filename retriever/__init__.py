"""Retrieval layer: ingestion, chunking, embeddings, the Chroma store, BM25 and hybrid fusion."""

from sieve.retriever.base import Retriever, validate_k, validate_query
from sieve.retriever.config import RetrieverConfig
from sieve.retriever.index import CorpusIndex, IndexReport, delete_collection, list_collections
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
