"""Integration: a real ``chroma run`` server on a loopback port, used through ``HttpClient``."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from _retriever_helpers import MULTI_DOCS, assert_consistent
from _server_process import chroma_server as start_chroma

from sieve.core.errors import InvalidPattern, NotFound, UnknownCollection
from sieve.retriever import CorpusIndex, Document, RetrieverConfig
from sieve.retriever.index import delete_collection
from sieve.retriever.store import list_collections

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``chroma run --path DIR --port P``; yields (url, DIR) once its heartbeat answers."""
    path = tmp_path_factory.mktemp("chroma-server")
    with start_chroma(path) as url:
        yield url, path


@pytest.fixture(scope="module")
def remote_docs(sample_dir) -> list[Document]:
    with (sample_dir / "corpus.jsonl").open(encoding="utf-8") as f:
        rows = [json.loads(line) for line, _ in zip(f, range(30))]
    return [
        Document(r["id"], r["text"], r["title"], r.get("source", ""), r.get("metadata") or {}) for r in rows
    ] + MULTI_DOCS


def test_index_search_grep_read_delete_through_a_chroma_server(chroma_server, remote_docs, tmp_path, embedder):
    url, server_dir = chroma_server
    cfg = RetrieverConfig(data_dir=tmp_path / "data", chroma_url=url, chunk_tokens=64, chunk_overlap=8)
    index = CorpusIndex.open(cfg, "remote-test", create=True, embedder=embedder)
    report = index.writer.index_documents(remote_docs, progress=False)
    assert report.added == len(remote_docs) and report.chunks_written == index.count() > len(remote_docs)
    assert not (tmp_path / "data" / "chroma").exists()  # nothing went to an embedded store
    assert list_collections(cfg) == {"remote-test": index.count()}
    assert_consistent(index)

    # A second client (as another process would) sees the same data and builds the same BM25.
    other = CorpusIndex.open(
        RetrieverConfig(data_dir=tmp_path / "other", chroma_url=url, chunk_tokens=64, chunk_overlap=8),
        "remote-test",
        embedder=embedder,
    )
    assert other.count() == index.count()
    assert other.bm25_index().ids == index.bm25_index().ids

    for mode in ("dense", "bm25", "hybrid"):
        hits = index.search("HAL 9000 supercomputer on a voyage to Jupiter", 5, mode=mode)
        assert hits[0].doc_id == "wiki-2001-a-space-odyssey", (mode, [h.chunk_id for h in hits])
        filtered = index.search(
            "Kubrick science fiction film", 5, mode=mode, where={"topic": "People"}, exclude={"wiki-stanley-kubrick#0"}
        )
        assert filtered and all(h.chunk.metadata["topic"] == "People" for h in filtered)
        assert "wiki-stanley-kubrick#0" not in {h.chunk_id for h in filtered}

    grep = index.grep(r"Zephyrine \w+", 5)
    assert [h.chunk_id for h in grep] == [c.chunk_id for c in index.read_document("orchard") if "Zephyrine" in c.text]
    with pytest.raises(InvalidPattern, match="look-around"):
        index.grep("(?=Zeph)Zephyrine", 5)

    n = index.documents()["lighthouse"]
    assert [c.position for c in index.read("lighthouse#1", 1)] == [0, 1, 2][: min(3, n)]
    assert "".join(c.text for c in index.read("orchard")).startswith("The orchard on the hill")

    assert index.writer.delete_documents(["orchard"]) == 1
    assert index.search("Zephyrine cider", 5, mode="bm25") == [] and index.grep("Zephyrine", 5) == []
    with pytest.raises(NotFound):
        index.read("orchard")
    assert_consistent(index)
    assert index.writer.index_documents(remote_docs, progress=False).added == 1  # only the deleted one comes back

    delete_collection(cfg, "remote-test")
    assert list_collections(cfg) == {}
    with pytest.raises(UnknownCollection):
        CorpusIndex.open(cfg, "remote-test", embedder=embedder)
    assert any(server_dir.iterdir())  # the server kept its data under --path
