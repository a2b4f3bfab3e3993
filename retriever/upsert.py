"""The two halves of one whole, cancellable write of a list of documents: what the HTTP document route runs.

:meth:`IndexWriter.index_documents <sieve.retriever.writer.IndexWriter.index_documents>` streams a
corpus in batches under the write lock, embedding as it goes, so that any size fits in memory and
an interrupted run resumes. A request has a deadline instead:
:meth:`IndexWriter.upsert_documents <sieve.retriever.writer.IndexWriter.upsert_documents>` chunks
and embeds first, outside the lock, stopping at the next batch once asked to (:func:`prepare`);
then it takes the lock, reads the store again and writes everything at once (:func:`commit`). The
caller gets either the collection as it was or the whole write, never a write that lands after it
gave up (issue 24, item 5).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import threading
    from collections.abc import Callable, Mapping, Sequence

    import numpy as np

    from sieve.retriever.store import DocState
    from sieve.retriever.types import Chunk, Document
    from sieve.retriever.write_run import IndexReport

Prepared = dict[str, tuple[list["Chunk"], "np.ndarray"]]  # doc_id -> (chunks, their vectors)
Batch = list[tuple["Document", str, list["Chunk"]]]  # (document, content hash, chunks) to write together


def prepare(
    docs: Sequence[Document],
    report: IndexReport,
    stop: threading.Event,
    *,
    chunk: Callable[[Document], list[Chunk]],
    embed: Callable[[Sequence[Chunk]], np.ndarray],
    batch_size: int,
) -> Prepared | None:
    """doc_id -> (chunks, vectors) for ``docs``, embedded ``batch_size`` chunks at a time; None once
    ``stop`` is set (checked between batches). Documents that chunk to nothing are skips in ``report``."""
    import numpy as np

    chunked = []
    for doc in docs:
        chunks = chunk(doc)
        if chunks:
            chunked.append((doc, chunks))
        else:
            report.ingest.skip(doc.doc_id, "no tokens after chunking")
    flat = [c for _, cs in chunked for c in cs]
    parts = []
    for i in range(0, len(flat), batch_size):
        if stop.is_set():
            return None
        parts.append(embed(flat[i : i + batch_size]))
    if stop.is_set():
        return None
    vectors = np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)
    out, at = {}, 0
    for doc, cs in chunked:
        out[doc.doc_id] = (cs, vectors[at : at + len(cs)])
        at += len(cs)
    return out


def commit(
    docs: Sequence[Document],
    hashes: Mapping[str, str],
    prepared: Prepared,
    states: Mapping[str, DocState],
    report: IndexReport,
    *,
    write: Callable[[Batch, np.ndarray], int],
    batch_size: int,
) -> None:
    """Write the prepared documents that still differ from the store (under the write lock), ``write``
    taking about ``batch_size`` chunks at a time; counts what was added, updated and resumed in ``report``."""
    import numpy as np

    skipped = {where for where, _ in report.ingest.skipped}
    batch: Batch = []
    vectors: list[np.ndarray] = []
    for doc in docs:
        state = states.get(doc.doc_id)
        if doc.doc_id not in prepared or unchanged(state, hashes[doc.doc_id]):
            report.unchanged += doc.doc_id not in skipped
            continue
        report.added += state is None
        report.resumed += state is not None and state.doc_hash == hashes[doc.doc_id]
        report.updated += state is not None and state.doc_hash != hashes[doc.doc_id]
        batch.append((doc, hashes[doc.doc_id], prepared[doc.doc_id][0]))
        vectors.append(prepared[doc.doc_id][1])
        if sum(len(c) for _, _, c in batch) >= batch_size:
            report.chunks_written += write(batch, np.concatenate(vectors))
            batch, vectors = [], []
    if batch:
        report.chunks_written += write(batch, np.concatenate(vectors))


def unchanged(state: DocState | None, doc_hash: str) -> bool:
    """Whether the store holds the document whole at this content hash (nothing to write)."""
    return state is not None and state.doc_hash == doc_hash and state.complete


__all__ = ["Batch", "Prepared", "commit", "prepare", "unchanged"]
