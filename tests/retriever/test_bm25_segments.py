"""Segmented BM25 against a full rebuild over the same live chunks: same scores, bit for bit, and same rankings."""

from __future__ import annotations

import logging
import threading

import numpy as np
import pytest
from sieve.retriever.bm25 import BM25Builder, SparseBM25, tokenize
from sieve.retriever.bm25_segments import (
    MAX_SEGMENTS,
    SegmentedBM25,
    segment_from_builder,
)
from sieve.retriever.types import Document

WORDS = [
    "river",
    "delta",
    "city",
    "harbour",
    "opera",
    "composer",
    "film",
    "painter",
    "tower",
    "bridge",
    "census",
    "island",
    "mountain",
    "valley",
    "castle",
    "garden",
    "museum",
    "library",
    "station",
    "forest",
]
QUERIES = [
    ["river", "delta"],
    ["opera", "opera", "composer"],
    ["common"],
    ["island", "common", "castle"],
    ["zzz-unknown"],
    ["film"],
    ["rare17"],
]


def _docs(start: int, n: int, version: int = 0) -> dict[str, list[str]]:
    """Deterministic token lists; "common" is in most documents, so its IDF goes negative and is floored."""
    rng = np.random.default_rng(1000 * version + start)
    out = {}
    for i in range(start, start + n):
        toks = list(rng.choice(WORDS, size=int(rng.integers(3, 12))))
        if i % 5:
            toks.append("common")
        toks.append(f"rare{i}")
        out[f"d{i}#0"] = toks
    return out


def _builder(docs: dict[str, list[str]]) -> BM25Builder:
    b = BM25Builder()
    for cid, toks in docs.items():
        b.add(cid, toks)
    return b


def _assert_same(seg: SegmentedBM25, live: dict[str, list[str]]) -> None:
    ref = SparseBM25.from_tokens(list(live), list(live.values()))
    assert seg.ids == ref.ids and len(seg) == len(ref)
    rows = [
        seg.row_ids.index(cid)
        if seg.live is None
        else next(i for i, c in enumerate(seg.row_ids) if c == cid and seg.live[i])
        for cid in ref.ids
    ]
    for q in QUERIES:
        np.testing.assert_array_equal(seg.scores(q)[rows], ref.scores(q))  # bit for bit
        assert seg.top_k(q, 10) == ref.top_k(q, 10)
        assert seg.ids_with_all(q) == ref.ids_with_all(q)
        assert seg.doc_share(q[0]) == ref.doc_share(q[0])


def test_segments_score_as_a_rebuild_through_adds_replacements_merges_and_reloads(tmp_path):
    live = _docs(0, 40)
    index = SegmentedBM25.from_segments([segment_from_builder(_builder(live), {})])
    _assert_same(index, live)

    added = _docs(40, 15)  # a second run: new documents only
    index = index.changed(_builder(added), [])
    live.update(added)
    _assert_same(index, live)

    # A third run replaces d3 and d41 (new text, same ids) and deletes d7: their old rows die.
    replaced = {**_docs(3, 1, version=1), **_docs(41, 1, version=1)}
    dead = index.rows_of_ids(set(replaced) | {"d7#0"})
    index = index.changed(_builder(replaced), dead)
    for cid in [*replaced, "d7#0"]:
        live.pop(cid)
    live.update(replaced)  # new rows come last, as Chroma returns re-written chunks
    _assert_same(index, live)
    assert "rare7" in index.vocab and index.doc_share("rare7") == 0.0  # a term with no live chunk: no weight

    index.save(tmp_path, fingerprint="g3")
    loaded, fingerprint = SegmentedBM25.load(tmp_path)
    assert fingerprint == "g3" and len(loaded.segments) == 3
    _assert_same(loaded, live)
    again, _ = SegmentedBM25.load(tmp_path, reuse=loaded)
    assert all(a is b for a, b in zip(again.segments, loaded.segments))  # held segments are not read again

    merged = index.merged()
    assert len(merged.segments) == 1 and merged.live is None and "rare7" not in merged.vocab
    _assert_same(merged, live)


def test_many_small_runs_merge_down_to_the_limit():
    live = _docs(0, 10)
    index = SegmentedBM25.from_segments([segment_from_builder(_builder(live), {})])
    for run in range(MAX_SEGMENTS + 3):
        added = _docs(100 + 3 * run, 3)
        index = index.changed(_builder(added), [])
        live.update(added)
        assert len(index.segments) <= MAX_SEGMENTS
    _assert_same(index, live)


def test_an_empty_index_grows_from_its_first_segment():
    empty = SegmentedBM25.from_segments([])
    assert len(empty) == 0 and empty.top_k(["river"], 5) == []
    live = _docs(0, 5)
    _assert_same(empty.changed(_builder(live), []), live)


DOCS = [
    Document(doc_id=f"note{i}", text=f"Note {i} about the {w} near the harbour; keyword{i}.", title=f"N{i}")
    for i, w in enumerate(["lighthouse", "bridge", "castle", "museum", "garden", "station"])
]


def _rebuilt(index) -> SparseBM25:
    """The full rebuild a reader would do: every chunk streamed back from Chroma."""
    from sieve.retriever.types import passage_text

    ids, toks = [], []
    for cid, text, meta in index.store.scan(include_text=True):
        ids.append(cid)
        toks.append(tokenize(passage_text(str(meta.get("title") or ""), text or "")))
    return SparseBM25.from_tokens(ids, toks)


def test_index_runs_add_segments_that_rank_as_a_rebuild(make_index, caplog):
    index = make_index()
    index.writer.index_documents(DOCS[:3], progress=False)
    index.writer.index_documents(DOCS[3:], progress=False)
    changed = Document(doc_id="note1", text="The bridge was rebuilt in stone; keyword1 harbour.", title="N1")
    index.writer.index_documents([*DOCS[:1], changed, *DOCS[2:]], progress=False)
    bm25 = index.bm25_index()
    assert len(bm25.segments) == 3 and sorted(bm25.ids) == sorted(c for c, _, _ in index.store.scan())
    ref = _rebuilt(index)
    for q in ["harbour bridge", "keyword1", "castle museum harbour", "stone"]:
        assert {c for c, _ in bm25.top_k(tokenize(q), 10)} == {c for c, _ in ref.top_k(tokenize(q), 10)}
        got = dict(bm25.top_k(tokenize(q), 10))
        assert got == pytest.approx(dict(ref.top_k(tokenize(q), 10)), rel=0, abs=0)

    before = index.writer.optimize()
    assert before == 3 and len(index.bm25_index().segments) == 1
    assert dict(index.bm25_index().top_k(tokenize("harbour"), 10)) == dict(ref.top_k(tokenize("harbour"), 10))


def test_a_reader_serves_the_last_complete_segments_while_a_writer_runs(make_index, caplog):
    from sieve.retriever import CorpusIndex

    writing = make_index()
    writing.writer.index_documents(DOCS[:3], progress=False)
    reader = CorpusIndex.open(writing.config, writing.name, embedder=writing.embedder)
    served = reader.bm25_index()
    holding, release = threading.Event(), threading.Event()

    def write_in_progress() -> None:
        with writing.write_lock.hold():
            writing.store.bump_generation()  # what a run does before its first chunk
            holding.set()
            release.wait(30)

    t = threading.Thread(target=write_in_progress)
    t.start()
    try:
        holding.wait(30)
        caplog.set_level(logging.INFO, logger="sieve.retriever.bm25_cache")
        assert reader.bm25_index() is served  # the last complete set, not a rebuild mid-write
        assert "Rebuilt BM25" not in caplog.text
    finally:
        release.set()
        t.join()
    assert reader.bm25_index() is not served  # the writer is gone and left a stale generation: rebuilt
    assert "Rebuilt BM25" in caplog.text
