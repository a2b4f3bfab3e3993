"""A lock-folder file that is not what Sieve wrote is read past where safe, else named; ``--check`` repairs it.

Issue 42: a token of non-UTF-8 bytes, or a directory in its place, made every server request a 500
and every CLI command fail, and no write repaired it (the token is read before a new one is written).
Real files, a real store; the permission case needs a non-root user and is covered by the same
``OSError`` branch as the directory.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _retriever_helpers import MULTI_DOCS

from sieve.core.errors import StoreUnavailable
from sieve.retriever import CorpusIndex, RetrieverConfig
from sieve.retriever.handle import lock_folder_paths
from sieve.retriever.lockfolder import check_lock_folder


def _damage(path: Path, how: str) -> None:
    path.unlink(missing_ok=True)
    if how == "bytes":
        path.write_bytes(b"\xff\xfe\x00 not a token \x80")
    elif how == "empty-dir":
        path.mkdir()
    elif how == "dir":
        path.mkdir()
        (path / "notes.txt").write_text("someone's file")


def _store(tmp_path: Path, embedder) -> tuple[CorpusIndex, RetrieverConfig]:
    cfg = RetrieverConfig(data_dir=tmp_path / "data", write_lock_timeout_s=1)
    index = CorpusIndex.open(cfg, "damaged", create=True, embedder=embedder)
    index.writer.index_documents(MULTI_DOCS[:1], progress=False)
    return index, cfg


@pytest.mark.parametrize(("role", "how"), [("token", "bytes"), ("token", "empty-dir"), ("lock", "empty-dir")])
def test_what_is_safe_to_read_past_is_recovered_from_on_the_next_write(tmp_path, embedder, role, how) -> None:
    index, cfg = _store(tmp_path, embedder)
    path = lock_folder_paths(cfg)[role]
    _damage(path, how)
    assert index.search("x", 3, mode="bm25") is not None  # reads go on
    index.writer.index_documents(MULTI_DOCS[1:2], progress=False)  # and a write puts a token Sieve wrote back
    assert path.is_file()
    assert all(f.state == "ok" for f in check_lock_folder(cfg)), check_lock_folder(cfg)
    assert set(index.doc_states()) == {MULTI_DOCS[0].doc_id, MULTI_DOCS[1].doc_id}


@pytest.mark.parametrize("role", ["token", "lock"])
def test_a_directory_of_files_is_store_unavailable_naming_it_then_check_repairs(tmp_path, embedder, role) -> None:
    index, cfg = _store(tmp_path, embedder)
    path = lock_folder_paths(cfg)[role]
    _damage(path, "dir")
    with pytest.raises(StoreUnavailable) as err:
        index.writer.index_documents(MULTI_DOCS[1:2], progress=False)
    assert str(path) in err.value.message and "sieve collections --check --repair" in err.value.message
    assert (path / "notes.txt").exists()  # nothing of the user's was removed

    found = {f.role: f for f in check_lock_folder(cfg)}
    assert found[role].state == "damaged" and "directory" in found[role].problem and not found[role].repaired
    repaired = {f.role: f for f in check_lock_folder(cfg, repair=True)}
    assert repaired[role].repaired
    moved = list(path.parent.glob(f"{path.name}.damaged-*"))
    assert len(moved) == 1 and (moved[0] / "notes.txt").exists()  # moved aside, not deleted
    assert lock_folder_paths(cfg)["token"].is_file()  # a fresh token: every other process reopens

    index.writer.index_documents(MULTI_DOCS[1:2], progress=False)
    assert all(f.state == "ok" for f in check_lock_folder(cfg))
    assert set(index.doc_states()) == {MULTI_DOCS[0].doc_id, MULTI_DOCS[1].doc_id}


def test_check_names_a_token_of_foreign_bytes(tmp_path, embedder) -> None:
    _index, cfg = _store(tmp_path, embedder)
    _damage(lock_folder_paths(cfg)["token"], "bytes")
    token = {f.role: f for f in check_lock_folder(cfg)}["token"]
    assert token.state == "damaged" and "not a token Sieve wrote" in token.problem
