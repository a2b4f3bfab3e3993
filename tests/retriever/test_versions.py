"""Versions of a collection: re-embedding with another model into a new version, switched to in one step.

The other model is real: the bundled MiniLM with its weights nudged (so its vectors, and so every
dense score, differ from the shipped model's), saved as a sentence-transformers folder. A reader
searching in a loop while the collection is re-embedded and switched must see, for every search,
exactly the results of the old version or exactly those of the new one.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from _docs_pages import nudged_minilm

from sieve.core.errors import InvalidInput, UnknownCollection
from sieve.retriever import CorpusIndex, Document, RetrieverConfig
from sieve.retriever.reembed import activate_version, drop_old_versions, drop_version, reembed_version
from sieve.retriever.store import list_collections
from sieve.retriever.versions import split_version, version_name

TOPICS = ["caching", "logging", "plugins", "publishing", "testing", "security", "mirrors", "lockfiles"]
QUERIES = ["how do I clear the cache", "where are logs written", "publish a package", "pin versions in a lock file"]


@pytest.fixture(scope="module")
def other_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return nudged_minilm(tmp_path_factory.mktemp("nudged") / "model")


@pytest.fixture()
def docs_collection(tmp_path: Path, embedder) -> CorpusIndex:
    rc = RetrieverConfig(data_dir=tmp_path / "data")
    index = CorpusIndex.open(rc, "docs", create=True, embedder=embedder)
    index.writer.index_documents(
        [
            Document(f"{t}.md", f"# {t.title()}\n\nHow the tool handles {t}: settings, commands and errors.", title=t)
            for t in TOPICS
        ],
        progress=False,
    )
    return index


def _results(index: CorpusIndex) -> tuple:
    return tuple(tuple((h.chunk_id, round(h.score, 5)) for h in index.search(q, k=4, mode="dense")) for q in QUERIES)


def test_a_reader_sees_one_version_whole_during_the_switch(docs_collection, other_model):
    from sieve.retriever.embeddings import Embedder

    rc = docs_collection.config
    before = _results(docs_collection)
    other = Embedder.load(str(other_model), backend="torch")
    seen: list[tuple[str, tuple]] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        index = CorpusIndex.open(rc, "docs")  # its own handle on the collection, as another request's would be
        try:
            while not stop.is_set():
                if not index.is_current():
                    index = CorpusIndex.open(rc, "docs")
                seen.append((index.store.name, _results(index)))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        report = reembed_version(docs_collection, other, progress=False)
        for _ in range(200):  # let the reader search the new version a few times
            if sum(name == report.new for name, _ in seen) >= 2:
                break
            threading.Event().wait(0.05)
    finally:
        stop.set()
        thread.join()
    assert not errors, errors
    after = _results(CorpusIndex.open(rc, "docs"))
    assert report.old == "docs" and report.new == "docs--v2" and report.switched and report.chunks == len(TOPICS)
    assert after != before  # another model's vectors: the scores differ
    assert {name for name, _ in seen} == {"docs", "docs--v2"}
    for name, results in seen:  # each search saw one version whole: its results are that version's, exactly
        assert results == (before if name == "docs" else after), name
    # the name lists once, with the active version's chunks; the old version stays until dropped
    assert list_collections(rc) == {"docs": len(TOPICS)}
    reopened = CorpusIndex.open(rc, "docs")
    assert reopened.name == "docs" and reopened.store.name == "docs--v2"
    assert reopened.embedded_with(other_model) and not reopened.embedded_with(docs_collection.embedder.path)
    assert drop_old_versions(rc, "docs") == ["docs"]
    assert _results(CorpusIndex.open(rc, "docs")) == after  # the name still points at the kept version
    assert list_collections(rc) == {"docs": len(TOPICS)}


def test_switching_back_and_dropping_versions(docs_collection, other_model):
    from sieve.retriever.embeddings import Embedder

    rc = docs_collection.config
    before = _results(docs_collection)
    built = reembed_version(docs_collection, Embedder.load(str(other_model), backend="torch"), activate=False)
    assert not built.switched and _results(CorpusIndex.open(rc, "docs")) == before  # built, not switched to
    assert activate_version(rc, "docs", 2) == "docs--v2"
    assert CorpusIndex.open(rc, "docs").store.name == "docs--v2"
    with pytest.raises(InvalidInput, match="inactive version"):
        drop_version(rc, "docs", "docs--v2")
    assert activate_version(rc, "docs", 1) == "docs"  # back: the first version was kept
    assert _results(CorpusIndex.open(rc, "docs")) == before
    with pytest.raises(UnknownCollection, match="docs--v7"):
        activate_version(rc, "docs", 7)
    drop_version(rc, "docs", "docs--v2")
    assert drop_old_versions(rc, "docs") == []
    with pytest.raises(InvalidInput, match="--v<number>"):
        CorpusIndex.open(rc, "notes--v2", create=True)  # users' names never look like versions


def test_a_failed_reembedding_leaves_the_collection_as_it_was(docs_collection, embedder):
    rc = docs_collection.config
    before = _results(docs_collection)

    class Broken:  # a labelled fake: an embedder that fails half-way through the copy
        identity = embedder.identity

        def embed_passages(self, texts):
            raise RuntimeError("out of memory")

    with pytest.raises(RuntimeError, match="out of memory"):
        reembed_version(docs_collection, Broken(), progress=False)  # type: ignore[arg-type]
    from sieve.retriever.store import make_client

    names = sorted(c.name for c in make_client(rc).list_collections())
    assert names == ["docs"] and _results(CorpusIndex.open(rc, "docs")) == before


def test_version_names():
    assert [version_name("docs", n) for n in (1, 2, 10)] == ["docs", "docs--v2", "docs--v10"]
    assert split_version("my--vault") == ("my--vault", 1) and split_version("a-b--v3") == ("a-b", 3)
