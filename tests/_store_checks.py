"""What "nothing lost, nothing half-written" means for a store written by several writers.

Shared by the writer tests of ``tests/retriever`` and ``tests/server`` (importable because pytest
puts ``tests/``, the directory of the root conftest, on ``sys.path``). The store under test must be
opened by a process that did not write it: an embedded Chroma client caches its vector index,
so only a fresh one shows what is on disk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sieve.retriever import CorpusIndex


def all_ids(index: CorpusIndex) -> list[str]:
    return sorted(cid for cid, _t, _m in index.store.scan(include_text=False))


def assert_same_as_clean(index: CorpusIndex, clean: CorpusIndex, *, probe_every: int = 7) -> None:
    """``index`` holds exactly the chunks of ``clean`` (one writer, one run): ids, texts, embeddings,
    BM25, and dense self-retrieval of every ``probe_every``-th chunk."""
    ids = all_ids(index)
    clean_ids = all_ids(clean)
    assert index.count() == clean.count() == len(clean_ids), (index.count(), clean.count())
    assert ids == clean_ids, (
        f"only here {sorted(set(ids) - set(clean_ids))[:5]}, missing {sorted(set(clean_ids) - set(ids))[:5]}"
    )
    got, want = {}, {}
    for i in range(0, len(ids), 200):  # every embedding reads back (Chroma raises when one is missing)
        got.update(index.get_vectors(ids[i : i + 200]))
        want.update(clean.get_vectors(ids[i : i + 200]))
    assert len(got) == len(ids), f"{len(ids) - len(got)} of {len(ids)} embeddings did not read back"
    cos = np.array([float(got[c] @ want[c]) for c in ids])
    assert cos.min() > 0.999, f"embeddings differ from a clean index: min cosine {cos.min():.4f}"
    assert [c.text for c in index.get_chunks(ids)] == [c.text for c in clean.get_chunks(ids)]
    assert set(index.bm25_index().ids) == set(ids), "BM25 and Chroma disagree"
    missed = [c for c in ids[::probe_every] if index.store.query_ids(want[c], 1)[0][0] != c]
    assert not missed, f"dense self-retrieval missed {len(missed)} of {len(ids[::probe_every])} probes: {missed[:5]}"
    incomplete = {d: s for d, s in index.store.doc_states().items() if not s.complete}
    assert not incomplete, f"incomplete documents: {incomplete}"


__all__ = ["all_ids", "assert_same_as_clean"]


def _main() -> None:
    """``python _store_checks.py DATA_DIR CLEAN_DIR COLLECTION``: the check in a process of its own.

    A process that wrote the store (a live server in the test process) must not be the one that
    reads it back: its Chroma client may answer from its own cache.
    """
    import sys
    from pathlib import Path

    from sieve.retriever import CorpusIndex, RetrieverConfig
    from sieve.retriever.embeddings import Embedder

    data, clean, name = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    embedder = Embedder.from_config(RetrieverConfig(data_dir=data))
    index = CorpusIndex.open(RetrieverConfig(data_dir=data), name, embedder=embedder)
    reference = CorpusIndex.open(RetrieverConfig(data_dir=clean), name, embedder=embedder)
    assert_same_as_clean(index, reference)
    print(f"same as clean: {index.count()} chunks")


if __name__ == "__main__":
    _main()
