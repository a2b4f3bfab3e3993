"""Document ids of indexed files: another file's document is never silently replaced, and the same
file reads the same from any working directory (real Chroma, real BM25, the bundled MiniLM)."""

from __future__ import annotations

import pytest

from sieve.core.errors import InvalidInput

SMALL = dict(chunk_tokens=32, chunk_overlap=8)


def _tree(root, files: dict[str, str]):
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def test_a_second_folder_with_the_same_relative_paths_is_refused_and_writes_nothing(make_index, tmp_path):
    _tree(
        tmp_path,
        {
            "a/README.md": "Alpha stores its rows in Kestrel.",
            "a/NEWS.md": "Alpha 2.0 adds a command line.",
            "b/README.md": "Beta sends jobs to Falcon.",
        },
    )
    index = make_index(**SMALL)
    index.writer.index_path(tmp_path / "a", progress=False)
    gen = index.store.generation
    with pytest.raises(InvalidInput, match=r"'README.md' is indexed from .*a/README.md.*b/README.md") as err:
        index.writer.index_path(tmp_path / "b", progress=False)
    assert "Nothing was written" in err.value.message
    assert index.store.generation == gen and index.documents() == {"NEWS.md": 1, "README.md": 1}
    assert [h.chunk.text for h in index.search("Where does Alpha store its rows?", 1)] == [
        "Alpha stores its rows in Kestrel."
    ]
    # single files name their ids the same way: the same refusal
    with pytest.raises(InvalidInput, match="would replace"):
        index.writer.index_path(tmp_path / "b" / "README.md", progress=False)
    # the folder that holds both gives them distinct ids
    report = index.writer.index_path(tmp_path, progress=False)
    assert report.added == 3 and set(index.documents()) == {
        "NEWS.md",
        "README.md",
        "a/NEWS.md",
        "a/README.md",
        "b/README.md",
    }


def test_the_same_file_by_another_path_or_working_directory_is_unchanged(make_index, tmp_path, monkeypatch):
    _tree(tmp_path, {"docs/x.md": "Xylophones are tuned in pairs.", "docs/y.md": "Yodels carry across valleys."})
    index = make_index(**SMALL)
    monkeypatch.chdir(tmp_path)
    first = index.writer.index_path("docs", progress=False)
    assert first.added == 2
    assert index.read_document("x.md")[0].source == str(tmp_path / "docs" / "x.md")
    monkeypatch.chdir(tmp_path / "docs")
    again = index.writer.index_path(".", progress=False)
    assert (again.unchanged, again.updated, again.chunks_written) == (2, 0, 0)
    assert index.writer.index_path(tmp_path / "docs" / "x.md", progress=False).unchanged == 1


def test_a_moved_folder_updates_its_documents(make_index, tmp_path):
    _tree(tmp_path, {"old/notes.md": "Nightjars hunt at dusk."})
    index = make_index(**SMALL)
    index.writer.index_path(tmp_path / "old", progress=False)
    (tmp_path / "old").rename(tmp_path / "new")
    report = index.writer.index_path(tmp_path / "new", progress=False)  # the old file is gone: an update, no conflict
    assert (report.updated, report.added) == (1, 0)
    assert index.read_document("notes.md")[0].source == str(tmp_path / "new" / "notes.md")


def test_documents_of_deleted_files_are_reported_and_removed_on_request(make_index, tmp_path):
    _tree(
        tmp_path,
        {
            "docs/keep.md": "Kept notes about kestrels.",
            "docs/sub/drop.md": "Dropped notes about falcons.",
            "docs/also.md": "More notes about owls.",
            "other/elsewhere.md": "Notes from another folder.",
        },
    )
    index = make_index(**SMALL)
    index.writer.index_path(tmp_path / "docs", progress=False)
    index.writer.index_path(tmp_path / "other", progress=False)
    (tmp_path / "docs" / "sub" / "drop.md").unlink()
    report = index.writer.index_path(tmp_path / "docs", progress=False)
    # only this folder's files count: the other folder's document is not "gone"
    assert (report.gone, report.deleted, report.unchanged) == (["sub/drop.md"], 0, 2)
    assert "sub/drop.md" in index.documents()  # reported, not removed unasked
    report = index.writer.index_path(tmp_path / "docs", progress=False, delete_missing=True)
    assert (report.gone, report.deleted) == (["sub/drop.md"], 1)
    assert set(index.documents()) == {"keep.md", "also.md", "elsewhere.md"}
    assert index.writer.index_path(tmp_path / "docs", progress=False).gone == []
