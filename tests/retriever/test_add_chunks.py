"""The public write path for chunks that come with their vectors (benchmarks, the Ray pipeline)."""

from __future__ import annotations

import numpy as np
import pytest

from sieve.core.errors import InvalidInput
from sieve.retriever.types import Chunk


def _chunks(words: list[str], start: int = 0) -> list[Chunk]:
    return [
        Chunk(
            chunk_id=f"doc{start + i}#0",
            doc_id=f"doc{start + i}",
            position=0,
            text=f"A note about {w}.",
            title=f"Note {start + i}",
            source="test",
            char_end=20,
        )
        for i, w in enumerate(words)
    ]


def test_chunks_and_their_vectors_land_in_chroma_and_bm25_in_one_run(make_index, embedder):
    index = make_index()
    first = _chunks(["Quillfeather", "Gondwanix", "harbours"])
    vectors = embedder.embed_passages([c.text for c in first])
    gen = index.refresh().generation
    assert index.writer.add_chunk_batches([(first[:2], vectors[:2]), (first[2:], vectors[2:])]) == 3
    assert index.refresh().generation != gen and index.count() == 3
    assert len(index.bm25_index().segments) == 1  # two batches, one run, one segment
    stored = index.get_vectors(["doc1#0"])["doc1#0"]
    np.testing.assert_allclose(stored, vectors[1], rtol=1e-6)
    assert [h.chunk_id for h in index.search("Gondwanix", 1, mode="bm25")] == ["doc1#0"]
    assert index.documents() == {"doc0": 1, "doc1": 1, "doc2": 1}

    # Same id, new text: the old row is dead in BM25, Chroma holds the new text.
    again = _chunks(["Vellichor"], start=1)
    assert index.writer.add_chunks(again, embedder.embed_passages([again[0].text])) == 1
    assert index.count() == 3 and len(index.bm25_index()) == 3
    assert index.search("Gondwanix", 5, mode="bm25") == []
    assert [h.chunk_id for h in index.search("Vellichor", 5, mode="bm25")] == ["doc1#0"]
    assert sorted(index.bm25_index().ids) == ["doc0#0", "doc1#0", "doc2#0"]


def test_one_vector_per_chunk_or_nothing_is_written(make_index, embedder):
    index = make_index()
    chunks = _chunks(["one", "two"])
    with pytest.raises(InvalidInput, match="one vector per chunk"):
        index.writer.add_chunks(chunks, embedder.embed_passages([chunks[0].text]))
    assert index.count() == 0
