"""One store, one lock, whatever the spelling; one store, born once, whoever creates it.

Before, the lock file was named after the store's path *as spelled*: ``SIEVE_DATA_DIR=/abs/S``, ``S``
(relative) and a symlink to ``S`` gave three locks and concurrent writers (issue 24, item 3). And a
new store's Chroma schema and collection were created outside the lock, so two first writers failed
with "table collections already exists" or "database is locked" (item 6). Real processes throughout.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from _retriever_helpers import MULTI_DOCS, RESUME_CONFIG
from test_writers import _go, _spawn, _wait_line

from sieve.core.errors import StoreLocked
from sieve.retriever import CorpusIndex, RetrieverConfig
from sieve.retriever.handle import store_write_lock


def _spellings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    real = tmp_path / "store"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    return {
        "absolute": real,
        "relative": Path("store"),
        "symlink": tmp_path / "link",
        "dotted": tmp_path / "link" / ".." / "store",
    }


def test_every_spelling_of_a_data_folder_names_one_lock(tmp_path, monkeypatch) -> None:
    paths = {
        k: store_write_lock(RetrieverConfig(data_dir=p)).path for k, p in _spellings(tmp_path, monkeypatch).items()
    }
    assert len(set(paths.values())) == 1, paths
    assert paths["absolute"].is_absolute()


@pytest.mark.slow
def test_a_writer_through_another_spelling_waits_for_the_holder(tmp_path, monkeypatch, embedder) -> None:
    spell = _spellings(tmp_path, monkeypatch)
    index = CorpusIndex.open(
        RetrieverConfig(data_dir=spell["absolute"], **RESUME_CONFIG), "spelled", create=True, embedder=embedder
    )
    index.writer.index_documents(MULTI_DOCS[:1], progress=False)
    holder = _spawn("hold", str(spell["symlink"]))  # a real process holds the lock, found through the symlink
    try:
        _wait_line(holder, "held")
        for name in ("relative", "absolute", "dotted"):
            cfg = RetrieverConfig(data_dir=spell[name], write_lock_timeout_s=0.2, **RESUME_CONFIG)
            other = CorpusIndex.open(cfg, "spelled", embedder=embedder)
            with pytest.raises(StoreLocked) as info:
                other.writer.index_documents(MULTI_DOCS[1:2], progress=False)
            assert f"pid {holder.pid}" in info.value.message, (name, info.value.message)
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(30)
    assert set(index.documents()) == {MULTI_DOCS[0].doc_id}  # nothing was written beside the holder


@pytest.mark.slow
def test_first_writers_of_a_new_store_all_succeed(tmp_path) -> None:
    """Five processes create one new store and collection at the same instant, twice over."""
    n = 5
    for trial in range(2):
        data = tmp_path / f"new-{trial}"
        procs = [_spawn("create", str(data), str(2 * i), str(2 * i + 2)) for i in range(n)]
        for p in procs:
            _wait_line(p, "ready")
        for p in procs:
            _go(p)
        results = [p.communicate(timeout=120) for p in procs]
        failed = [err.strip().splitlines()[-1] for p, (_out, err) in zip(procs, results) if p.returncode != 0]
        assert not failed, f"trial {trial}: {len(failed)} of {n} first writers failed: {failed}"
        assert all("done 2" in out for out, _err in results)
        index = CorpusIndex.open(RetrieverConfig(data_dir=data, **RESUME_CONFIG), "writers")
        assert set(index.documents()) == {f"new-{i}" for i in range(2 * n)}
        assert len(index.get_vectors([f"new-{i}#0" for i in range(2 * n)])) == 2 * n


def test_a_foreign_write_reopens_the_client_once_the_sessions_in_progress_end(tmp_path) -> None:
    """The handle's protocol, without Chroma's side: another process's token means a fresh client;
    this process's own writes do not; a reopen never pulls a client from under a session."""
    import threading

    from sieve.retriever.handle import open_store

    handle = open_store(RetrieverConfig(data_dir=tmp_path / "data"))
    with handle.session() as first:
        handle.mark_written()  # our own write: no reopen
    with handle.session() as same:
        assert same is first and handle.reopens == 0
    got: dict = {}

    def reader() -> None:
        with handle.session() as client:
            got["client"] = client

    with handle.session() as held:
        handle._token_path.write_text("written-by-another-process")  # as another writer would
        thread = threading.Thread(target=reader)
        thread.start()
        thread.join(0.5)
        assert thread.is_alive() and "client" not in got  # it waits: our session's client stays open
        with handle.session() as nested:  # a nested session of ours never waits (nor reopens)
            assert nested is held
    thread.join(10)
    assert got["client"] is not first and handle.reopens == 1
    assert got["client"].heartbeat()  # the fresh client works


def test_a_reader_reopens_once_the_other_writer_is_done_not_after_each_of_its_batches(tmp_path) -> None:
    import threading

    from sieve.retriever.handle import open_store, store_write_lock

    cfg = RetrieverConfig(data_dir=tmp_path / "data")
    handle = open_store(cfg)
    first = handle.client
    held, release = threading.Event(), threading.Event()

    def writer() -> None:  # another thread holds the lock as another process would (filelock is per thread)
        with store_write_lock(cfg).hold():
            handle._token_path.write_text("batch-1")
            held.set()
            release.wait(10)
            handle._token_path.write_text("done")

    thread = threading.Thread(target=writer)
    thread.start()
    assert held.wait(10)
    assert handle.client is first and handle.reopens == 0  # mid-write: keep answering from what we had
    release.set()
    thread.join(10)
    assert handle.client is not first and handle.reopens == 1  # the write is over: one reopen
