"""Re-indexing is idempotent; updates and deletes keep Chroma and BM25 consistent; torn documents resume."""

from __future__ import annotations

import logging

import pytest

from sieve.retriever import CorpusIndex, Document
from sieve.retriever.bm25_segments import SegmentedBM25

from _retriever_helpers import MULTI_DOCS, assert_consistent

SMALL = dict(chunk_tokens=32, chunk_overlap=8)


def _bm25_ids(index: CorpusIndex, query: str) -> list[str]:
    return [cid for cid, _ in index.bm25.scored_ids(query, 50)]


def test_second_run_writes_nothing_and_keeps_the_generation(make_index):
    index = make_index(**SMALL)
    first = index.writer.index_documents(MULTI_DOCS, progress=False)
    assert (first.added, first.updated, first.unchanged) == (3, 0, 0)
    assert first.chunks_written == index.count() > len(MULTI_DOCS)
    gen = index.store.generation
    second = index.writer.index_documents(MULTI_DOCS, progress=False)
    assert (second.added, second.updated, second.unchanged, second.resumed, second.chunks_written) == (0, 0, 3, 0, 0)
    assert index.store.generation == gen  # no write, so the BM25 cache stays valid
    assert index.count() == first.chunks_written
    assert_consistent(index)


def test_new_chunk_settings_rechunk_every_document_once(make_index):
    index = make_index(**SMALL, chunk_split="window")
    index.writer.index_documents(MULTI_DOCS, progress=False)
    windows = {d: index.read_document(d) for d in index.documents()}
    index = make_index(**SMALL)  # the same collection, opened with the structure split
    report = index.writer.index_documents(MULTI_DOCS, progress=False)
    assert (report.updated, report.unchanged) == (3, 0)  # the content did not change, the chunking did
    assert {d: index.read_document(d) for d in index.documents()} != windows
    again = index.writer.index_documents(MULTI_DOCS, progress=False)
    assert (again.updated, again.unchanged, again.chunks_written) == (0, 3, 0)
    assert_consistent(index)


def test_update_replaces_old_chunks_in_chroma_and_bm25(make_index):
    index = make_index(**SMALL)
    index.writer.index_documents(MULTI_DOCS, progress=False)
    old_n = index.documents()["lighthouse"]
    assert old_n >= 3 and _bm25_ids(index, "Quillfeather")
    others = {d: n for d, n in index.documents().items() if d != "lighthouse"}

    new = Document(
        "lighthouse",
        "A short new text about a foghorn named Gondwanix.",
        title="Lighthouse",
        source="synthetic",
        metadata={"topic": "coast", "year": 1890},
    )
    report = index.writer.index_documents([new, *MULTI_DOCS[1:]], progress=False)
    assert (report.updated, report.unchanged, report.chunks_written) == (1, 2, 1)
    assert index.documents() == {**others, "lighthouse": 1}
    assert index.count() == sum(others.values()) + 1
    stale = [f"lighthouse#{i}" for i in range(1, old_n)]
    assert index.get_chunks(stale) == []
    assert [c.text for c in index.read_document("lighthouse")] == [new.text]
    assert _bm25_ids(index, "Quillfeather lamp keeper") == []  # words only the old version had
    assert _bm25_ids(index, "Gondwanix") == ["lighthouse#0"]
    assert index.search("Quillfeather", 5, mode="bm25") == []
    assert index.search("foghorn Gondwanix", 1, mode="dense")[0].chunk_id == "lighthouse#0"
    assert_consistent(index)


def test_metadata_only_change_counts_as_update(make_index):
    index = make_index(**SMALL)
    index.writer.index_documents(MULTI_DOCS[1:2], progress=False)
    d = MULTI_DOCS[1]
    changed = Document(d.doc_id, d.text, title=d.title, source=d.source, metadata={"topic": "orchard"})
    report = index.writer.index_documents([changed], progress=False)
    assert report.updated == 1
    assert {c.metadata["topic"] for c in index.read_document("orchard")} == {"orchard"}
    assert all("year" not in c.metadata for c in index.read_document("orchard"))


def test_delete_keeps_chroma_and_bm25_consistent(make_index):
    index = make_index(**SMALL)
    index.writer.index_documents(MULTI_DOCS, progress=False)
    n_orchard = index.documents()["orchard"]
    total = index.count()
    assert index.writer.delete_documents(["orchard", "never-indexed"]) == 1
    assert "orchard" not in index.documents()
    assert index.count() == total - n_orchard
    assert _bm25_ids(index, "Zephyrine cider") == []
    assert index.search("Zephyrine cider", 5, mode="bm25") == []
    assert all(h.doc_id != "orchard" for h in index.search("apple orchard cider", 10, mode="hybrid"))
    assert index.grep("Zephyrine", 5) == []
    assert_consistent(index)
    gen = index.store.generation
    assert index.writer.delete_documents(["orchard"]) == 0
    assert index.store.generation == gen  # deleting nothing writes nothing


def test_bm25_cache_is_reused_when_fresh_and_rebuilt_when_stale(make_index, embedder, caplog):
    index = make_index(**SMALL)
    index.writer.index_documents(MULTI_DOCS, progress=False)
    saved = SegmentedBM25.load(index.bm25_dir)
    assert saved is not None and saved[1] == index.store.generation

    caplog.set_level(logging.INFO, logger="sieve.retriever.bm25_cache")
    reopened = CorpusIndex.open(index.config, index.name, embedder=embedder)
    assert sorted(reopened.bm25_index().ids) == sorted(saved[0].ids)
    assert "Rebuilt BM25" not in caplog.text  # loaded from disk

    # Another writer changes Chroma behind this cache's back: the generation no longer matches.
    index.store.bump_generation()
    index.store.delete_docs(["observatory"])
    fresh = CorpusIndex.open(index.config, index.name, embedder=embedder)
    assert "Vellichor" not in " ".join(fresh.bm25_index().vocab)
    assert "Rebuilt BM25" in caplog.text
    assert_consistent(fresh)


def test_torn_document_is_detected_and_rewritten(make_index):
    index = make_index(**SMALL)
    index.writer.index_documents(MULTI_DOCS, progress=False)
    n = index.documents()["observatory"]
    # What a kill between two Chroma writes can leave: a document missing some chunks.
    index.store.bump_generation()
    index.store.delete_ids([f"observatory#{n - 1}"])
    assert not index.store.doc_states()["observatory"].complete

    report = index.writer.index_documents(MULTI_DOCS, progress=False)
    assert (report.resumed, report.unchanged, report.added, report.chunks_written) == (1, 2, 0, n)
    assert index.documents()["observatory"] == n
    assert_consistent(index)


def test_documents_without_tokens_are_reported_not_counted(make_index, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "ok.txt").write_text("A perfectly ordinary sentence.", encoding="utf-8")
    (folder / "invisible.txt").write_text("\u200b\u200b\u200b\n", encoding="utf-8")  # text, but no tokens
    index = make_index()
    report = index.writer.index_path(folder, progress=False)
    assert index.documents() == {"ok.txt": 1}
    assert report.added == 1
    assert [w for w, _ in report.ingest.skipped] == ["invisible.txt"]


def test_duplicate_ids_in_one_run_are_rejected(make_index):
    from sieve.core.errors import InvalidInput

    index = make_index()
    with pytest.raises(InvalidInput, match="twice"):
        index.writer.index_documents([Document("a", "one"), Document("a", "two")], progress=False)
