"""A failed index run leaves nothing half-done; metadata is stored as given or rejected, never stringified."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from sieve.core.errors import InvalidInput, NotFound
from sieve.retriever import CorpusIndex, Document
from sieve.retriever.store import list_collection_names

from _retriever_helpers import MULTI_DOCS, assert_consistent

if TYPE_CHECKING:
    from collections.abc import Iterator

SMALL = dict(chunk_tokens=32, chunk_overlap=8, index_batch_size=8)


def _names(index: CorpusIndex) -> list[str]:
    return list_collection_names(index.store.client)


def test_missing_path_creates_no_collection(make_index, tmp_path):
    index = make_index("never-filled")
    assert index.store.created and "never-filled" in _names(index)
    with pytest.raises(NotFound, match="does not exist"):
        index.writer.index_path(tmp_path / "does-not-exist", progress=False)
    assert "never-filled" not in _names(index)
    assert not index.bm25_dir.exists()


def test_nothing_readable_creates_no_collection_and_says_why(make_index, tmp_path):
    folder = tmp_path / "junk"
    folder.mkdir()
    (folder / "photo.png").write_bytes(b"\x89PNG")
    (folder / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    index = make_index("junk")
    with pytest.raises(InvalidInput) as err:
        index.writer.index_path(folder, progress=False)
    msg = err.value.message
    assert "got none" in msg and "1 skipped" in msg and "UTF-8" in msg and "1 ignored" in msg and "photo.png" in msg
    assert "junk" not in _names(index)


def test_failure_after_some_batches_removes_the_new_collection(make_index):
    index = make_index("half", **SMALL)

    def stream() -> Iterator[Document]:
        yield from MULTI_DOCS  # several batches of 8 chunks are written before ...
        yield Document("lighthouse", "the same id again")  # ... this fails the run

    with pytest.raises(InvalidInput, match="twice"):
        index.writer.index_documents(stream(), progress=False)
    assert "half" not in _names(index)


def test_failure_on_an_existing_collection_keeps_it_consistent(make_index):
    index = make_index("kept", **SMALL)
    index.writer.index_documents(MULTI_DOCS[:1], progress=False)
    before = index.documents()
    bad = Document("bad", "text", metadata={"nested": {"a": 1}})  # type: ignore[dict-item]
    with pytest.raises(InvalidInput, match="Document 'bad'.*'nested'"):
        index.writer.index_documents([MULTI_DOCS[1], bad], progress=False)  # a list is checked whole first
    assert index.documents() == before  # nothing of the batch was written
    assert "kept" in _names(index)
    assert_consistent(index)


def test_interrupt_keeps_written_work_for_resume_but_not_an_empty_collection(make_index):
    index = make_index("interrupted", **SMALL)

    def interrupted_after(n: int) -> Iterator[Document]:
        yield from MULTI_DOCS[:n]
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        index.writer.index_documents(interrupted_after(0), progress=False)
    assert "interrupted" not in _names(index)

    again = make_index("interrupted", **SMALL)
    with pytest.raises(KeyboardInterrupt):
        again.writer.index_documents(interrupted_after(3), progress=False)
    assert "interrupted" in _names(again) and again.count() > 0  # what was written stays; a rerun resumes


def test_list_metadata_round_trips_and_filters_with_contains(make_index):
    index = make_index("listmeta", **SMALL)
    docs = [
        Document("a", "Alpha text about granite.", metadata={"tags": ["rock", "grey"], "years": [1990, 2020]}),
        Document("b", "Beta text about marble.", metadata={"tags": ["rock", "white"]}),
        Document("c", "Gamma text about chalk.", metadata={"tags": ["rock", "white"]}),
    ]
    index.writer.index_documents(docs, progress=False)
    [chunk] = index.read_document("a")
    assert chunk.metadata == {"tags": ["rock", "grey"], "years": [1990, 2020]}  # lists, not "['rock', 'grey']"
    for mode in ("bm25", "dense"):  # BM25 masks with Chroma's ids_where; dense passes `where` to Chroma's query
        hits = index.search("marble", 1, mode=mode, where={"tags": {"$contains": "white"}})
        assert [h.doc_id for h in hits] == ["b"]
        assert all(h.doc_id == "a" for h in index.search("marble", 3, mode=mode, where={"tags": {"$contains": "grey"}}))


def test_jsonl_with_bad_lines_indexes_the_rest_and_lists_them(make_index, tmp_path):
    f = tmp_path / "mixed.jsonl"
    rows = [
        {"id": "ok1", "text": "First good record about otters."},
        {"id": "ok1", "text": "A repeated id."},
        {"id": "bad-meta", "text": "Nested metadata.", "metadata": {"a": {"b": 1}}},
        {"id": "ok2", "text": "Second good record about badgers.", "metadata": {"tags": ["x"]}},
    ]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n{not json\n", encoding="utf-8")
    index = make_index("mixed")
    report = index.writer.index_path(f, progress=False)
    assert set(index.documents()) == {"ok1", "ok2"}
    assert [w.rsplit(":", 1)[-1] for w, _ in report.ingest.skipped] == ["2", "3", "5"]
    assert index.read_document("ok2")[0].metadata == {"tags": ["x"]}
