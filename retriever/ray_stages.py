"""The stages ``sieve index --ray`` runs on Ray workers: chunking and embedding, as Ray Data actor classes.

Rows cross processes (and machines) as plain columns: strings, integers, metadata as JSON text
(Arrow cannot hold every document's own metadata keys as one schema) and, after embedding, one
float32 vector per chunk. Each actor loads its tokenizer or model once, in ``__init__``, and is
then called batch after batch (Ray Data's ``map_batches`` with an actor pool).

Nothing here imports Ray: the classes are plain callables, so they are tested and reused without
a cluster, and Ray is only needed by :mod:`sieve.retriever.ray_index`, which schedules them.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from sieve.retriever.chunking import Chunker
from sieve.retriever.types import Chunk, Document, passage_text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sieve.retriever.config import RetrieverConfig

logger = logging.getLogger(__name__)

Batch = dict[str, Any]
"""A Ray Data batch in ``numpy`` format: column name -> 1-d array (2-d for ``vector``)."""

DOC_COLUMNS = ("doc_id", "text", "title", "source", "metadata", "doc_hash", "context")
CHUNK_COLUMNS = (
    "chunk_id",
    "doc_id",
    "position",
    "text",
    "title",
    "source",
    "char_start",
    "char_end",
    "n_tokens",
    "metadata",
    "doc_hash",
    "n_chunks",
    "heading_path",
)


def _strings(values: Sequence[str]) -> np.ndarray:
    # dtype=object keeps each string whole (a fixed-width numpy str dtype would pad every one).
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def documents_batch(docs: Sequence[Document], hashes: Sequence[str]) -> Batch:
    """Documents (with their content hashes) as one batch of :data:`DOC_COLUMNS`.

    Example:
        >>> b = documents_batch([Document("a", "x", "T")], ["h"])
        >>> list(b["doc_id"]), json.loads(b["metadata"][0])
        (['a'], {})
    """
    return {
        "doc_id": _strings([d.doc_id for d in docs]),
        "text": _strings([d.text for d in docs]),
        "title": _strings([d.title for d in docs]),
        "source": _strings([d.source for d in docs]),
        "metadata": _strings([json.dumps(d.metadata, sort_keys=True) for d in docs]),
        "doc_hash": _strings(list(hashes)),
        "context": _strings([d.context for d in docs]),
    }


def documents_from_batch(batch: Batch) -> list[tuple[Document, str]]:
    """The inverse of :func:`documents_batch`: (document, content hash) pairs."""
    return [
        (Document(str(d), str(t), str(ti), str(s), json.loads(str(m)), context=str(x)), str(h))
        for d, t, ti, s, m, h, x in zip(*(batch[c] for c in DOC_COLUMNS))
    ]


def chunks_batch(rows: Sequence[tuple[Chunk, str, int]]) -> Batch:
    """Chunks with their document's hash and chunk count as one batch of :data:`CHUNK_COLUMNS`."""
    chunks = [c for c, _, _ in rows]
    ints = {
        name: np.array([getattr(c, name) for c in chunks], dtype=np.int64)
        for name in ("position", "char_start", "char_end", "n_tokens")
    }
    return {
        "chunk_id": _strings([c.chunk_id for c in chunks]),
        "doc_id": _strings([c.doc_id for c in chunks]),
        "text": _strings([c.text for c in chunks]),
        "title": _strings([c.title for c in chunks]),
        "source": _strings([c.source for c in chunks]),
        "metadata": _strings([json.dumps(c.metadata, sort_keys=True) for c in chunks]),
        "doc_hash": _strings([h for _, h, _ in rows]),
        "n_chunks": np.array([n for _, _, n in rows], np.int64),
        "heading_path": _strings([c.heading_path for c in chunks]),
        **ints,
    }


@dataclass(frozen=True)
class EmbeddedChunk:
    """One chunk back from the embedding stage, with what the store records beside it."""

    chunk: Chunk
    doc_hash: str
    n_chunks: int
    vector: np.ndarray


def embedded_chunks(batch: Batch) -> list[EmbeddedChunk]:
    """The rows of an embedded batch (:data:`CHUNK_COLUMNS` plus ``vector``)."""
    out = []
    vectors = np.asarray(batch["vector"], dtype=np.float32)
    for i in range(len(batch["chunk_id"])):
        chunk = Chunk(
            chunk_id=str(batch["chunk_id"][i]),
            doc_id=str(batch["doc_id"][i]),
            position=int(batch["position"][i]),
            text=str(batch["text"][i]),
            title=str(batch["title"][i]),
            source=str(batch["source"][i]),
            char_start=int(batch["char_start"][i]),
            char_end=int(batch["char_end"][i]),
            n_tokens=int(batch["n_tokens"][i]),
            metadata=json.loads(str(batch["metadata"][i])),
            heading_path=str(batch["heading_path"][i]),
        )
        out.append(EmbeddedChunk(chunk, str(batch["doc_hash"][i]), int(batch["n_chunks"][i]), vectors[i]))
    return out


def worker_config(config: RetrieverConfig, default_embedder: str) -> RetrieverConfig:
    """``config`` as a worker should use it: the bundled model is found where *that* machine installed it.

    The driver's path to the bundled MiniLM (inside its site-packages) need not exist on another
    machine; an explicitly chosen model folder is kept as given (it must be reachable there).
    """
    if config.embedder_path == default_embedder:
        from sieve.retriever.config import default_embedder_path

        return replace(config, embedder_path=default_embedder_path())
    return config


class ChunkStage:
    """Ray Data actor: documents -> chunks, with the embedder's own (fast) tokenizer.

    Only the tokenizer is loaded (transformers' ``AutoTokenizer``, as the single-process path's
    chunker uses), so this stage runs on CPUs while the embedding actors keep the GPUs busy.
    """

    def __init__(self, config: RetrieverConfig, default_embedder: str) -> None:
        from transformers import AutoTokenizer

        from sieve.core.runtime import prepare_runtime

        prepare_runtime()  # offline hub: a worker never reaches a model hub either
        cfg = worker_config(config, default_embedder)
        tokenizer = AutoTokenizer.from_pretrained(cfg.embedder_path, local_files_only=True)
        self.chunker = Chunker(tokenizer, cfg.chunk_tokens, cfg.chunk_overlap, cfg.chunk_split)

    def __call__(self, batch: Batch) -> Batch:
        rows: list[tuple[Chunk, str, int]] = []
        for doc, doc_hash in documents_from_batch(batch):
            chunks = self.chunker.chunk(doc)  # none: the driver reports the document as skipped
            rows.extend((c, doc_hash, len(chunks)) for c in chunks)
        return chunks_batch(rows)


class EmbedStage:
    """Ray Data actor: chunks -> chunks with unit float32 vectors (``vector`` column).

    It is :class:`~sieve.retriever.embeddings.Embedder` itself, so a worker embeds exactly as
    ``sieve index`` does (same backend, dtype, device choice, passage text with the title).
    """

    def __init__(self, config: RetrieverConfig, default_embedder: str, threads: int | None = None) -> None:
        from sieve.retriever.embeddings import Embedder

        self.embedder = Embedder.from_config(worker_config(config, default_embedder), lazy=True)
        self.embedder.threads = threads  # the CPUs Ray gave this actor, not every core of its machine
        self.embedder.loaded()
        logger.info("Embedding actor on %s", self.embedder.device_choice.describe())

    def __call__(self, batch: Batch) -> Batch:
        columns = zip(batch["title"], batch["text"], batch["heading_path"])
        texts = [passage_text(str(t), str(x), str(h)) for t, x, h in columns]
        return {**batch, "vector": self.embedder.embed_passages(texts)}


__all__ = [
    "CHUNK_COLUMNS",
    "DOC_COLUMNS",
    "Batch",
    "ChunkStage",
    "EmbedStage",
    "EmbeddedChunk",
    "chunks_batch",
    "documents_batch",
    "documents_from_batch",
    "embedded_chunks",
    "worker_config",
]
