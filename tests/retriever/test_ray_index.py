"""Integration: ``sieve index PATH --ray`` on a real local Ray cluster (2 worker processes) into a real ``chroma run``.

The same folder is indexed by the single-process path and by the Ray path into two collections of
one Chroma server; they must hold the same ids, texts, metadata and BM25, and vectors equal within
float tolerance (one ONNX float32 MiniLM in both: the actors run the same arithmetic). Ray is a CI
dependency (``.ci/install`` installs the ``[ray]`` extra), so this test never skips.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import numpy as np
import pytest

from _retriever_helpers import MULTI_DOCS
from _server_process import chroma_server

from sieve.core.errors import InvalidInput
from sieve.retriever import CorpusIndex, RetrieverConfig
from sieve.retriever.ray_index import RayOptions, index_path_ray

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = pytest.mark.slow

N_DOCS = 60 + len(MULTI_DOCS) + 1  # the corpus fixture's documents


@pytest.fixture(scope="module")
def local_ray() -> Iterator[object]:
    """A local Ray cluster of 2 CPUs with a small object store, shut down after the module.

    2 CPUs hold one chunking actor (0.5 CPU) and one embedding actor (1 CPU): two worker processes.
    """
    import ray

    ray.init(num_cpus=2, object_store_memory=128 << 20, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with chroma_server(tmp_path_factory.mktemp("chroma-ray")) as url:
        yield url


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory, sample_dir: Path) -> Path:
    """A folder of 60 sample passages (JSONL), the multi-chunk documents (JSONL) and one Markdown file."""
    root = tmp_path_factory.mktemp("ray-corpus")
    lines = (sample_dir / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:60]
    (root / "sample.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "multi.jsonl").write_text(
        "".join(
            json.dumps({"id": d.doc_id, "text": d.text, "title": d.title, "source": d.source, "metadata": d.metadata})
            + "\n"
            for d in MULTI_DOCS
        ),
        encoding="utf-8",
    )
    (root / "notes").mkdir()
    (root / "notes" / "ray.md").write_text(
        "# Ray notes\n\n" + " ".join(["Actors embed chunks in parallel."] * 40), encoding="utf-8"
    )
    return root


def _config(url: str, data: Path, model_dir: Path) -> RetrieverConfig:
    return RetrieverConfig(data_dir=data, chroma_url=url, model_dir=model_dir, chunk_tokens=64, chunk_overlap=8)


def _records(index: CorpusIndex) -> dict[str, tuple[str | None, dict]]:
    return {cid: (text, meta) for cid, text, meta in index.store.scan(include_text=True)}


def _bm25_by_id(index: CorpusIndex) -> tuple[dict[str, float], dict[str, float]]:
    bm = index.bm25_index()
    return dict(zip(bm.ids, bm.norm.tolist())), {t: float(bm.idf[j]) for t, j in bm.vocab.items()}


def test_ray_index_matches_the_single_process_path(local_ray, chroma_url, corpus, tmp_path, embedder, model_cache_dir):
    single = CorpusIndex.open(
        _config(chroma_url, tmp_path / "single", model_cache_dir), "single", create=True, embedder=embedder
    )
    expected = single.writer.index_path(corpus, progress=False)

    ray_index = CorpusIndex.open(_config(chroma_url, tmp_path / "ray", model_cache_dir), "on-ray", create=True)
    t0 = time.perf_counter()
    report = index_path_ray(ray_index, corpus, RayOptions(docs_per_block=16, embed_batch=64), progress=False)
    print(f"ray index: {report.chunks_written} chunks in {time.perf_counter() - t0:.1f}s")
    assert (
        (report.added, report.chunks_written, report.ingest.documents)
        == (expected.added, expected.chunks_written, expected.ingest.documents)
        == (N_DOCS, single.count(), N_DOCS)
    )
    assert not ray_index.embedder.is_loaded  # the driver read and wrote; only the actors embedded

    want, got = _records(single), _records(ray_index)
    assert sorted(got) == sorted(want)  # same chunk ids
    assert got == want  # same texts and metadata (doc hash, chunk count, offsets, the documents' own keys)
    assert ray_index.store.state().embedder == single.store.state().embedder  # same embedder stamp

    ids = sorted(want)
    a, b = single.get_vectors(ids), ray_index.get_vectors(ids)
    va, vb = np.stack([a[i] for i in ids]), np.stack([b[i] for i in ids])
    assert np.allclose(va, vb, atol=1e-5), float(np.abs(va - vb).max())

    assert _bm25_by_id(ray_index) == _bm25_by_id(single)  # same BM25: per-chunk norms, per-term IDF
    query = "Obadiah Quillfeather lighthouse keeper"
    assert [(h.chunk_id, round(h.score, 6)) for h in ray_index.search(query, 5, mode="bm25")] == [
        (h.chunk_id, round(h.score, 6)) for h in single.search(query, 5, mode="bm25")
    ]
    assert ray_index.search(query, 3, mode="hybrid")[0].doc_id == "lighthouse"

    # Idempotent and incremental as the single-process path: a second run writes nothing, and a
    # changed document replaces its chunks (the Ray cluster is only used for what changed).
    again = index_path_ray(ray_index, corpus, RayOptions(), progress=False)
    assert (again.unchanged, again.chunks_written) == (N_DOCS, 0)
    old_note = len(single.read_document("notes/ray.md"))
    assert old_note > 1
    (corpus / "notes" / "ray.md").write_text("# Ray notes\n\nOne short note now.", encoding="utf-8")
    changed = index_path_ray(ray_index, corpus, RayOptions(), progress=False)
    assert (changed.updated, changed.unchanged, changed.chunks_written) == (1, N_DOCS - 1, 1)
    assert [c.text for c in ray_index.read_document("notes/ray.md")] == ["# Ray notes\n\nOne short note now."]
    assert ray_index.count() == single.count() - old_note + 1 and "short" in ray_index.bm25_index().vocab

    # Another folder's file of an id this collection holds from a file that still exists: refused, nothing written.
    (tmp_path / "other" / "notes").mkdir(parents=True)
    (tmp_path / "other" / "notes" / "ray.md").write_text("Another file of the same relative path.", encoding="utf-8")
    with pytest.raises(InvalidInput, match="'notes/ray.md' is indexed from .* would replace it"):
        index_path_ray(ray_index, tmp_path / "other", RayOptions(), progress=False)
    # A file gone from the folder is listed, and removed only when asked (nothing to embed: no Ray work).
    (corpus / "notes" / "ray.md").unlink()
    gone = index_path_ray(ray_index, corpus, RayOptions(), progress=False)
    assert (gone.gone, gone.deleted) == (["notes/ray.md"], 0) and ray_index.read_document("notes/ray.md")
    gone = index_path_ray(ray_index, corpus, RayOptions(), progress=False, delete_missing=True)
    assert (gone.gone, gone.deleted) == (["notes/ray.md"], 1) and "notes/ray.md" not in ray_index.documents()


def test_ray_index_cli_flag_and_an_empty_folder(local_ray, chroma_url, tmp_path, model_cache_dir):
    from typer.testing import CliRunner

    from sieve.cli.main import app

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("Ray Data streams blocks between actor pools.", encoding="utf-8")
    args = ["--chroma-url", chroma_url, "--data-dir", str(tmp_path / "data"), "--collection", "cli-ray", "--json"]
    res = CliRunner().invoke(app, ["index", str(folder), "--ray", *args])  # a cluster already up is used
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert (out["added"], out["chunks_written"], out["device"]) == (1, 1, None)  # the driver loaded no model

    (tmp_path / "empty").mkdir()
    res = CliRunner().invoke(
        app,
        [
            "index",
            str(tmp_path / "empty"),
            "--ray",
            "--chroma-url",
            chroma_url,
            "--data-dir",
            str(tmp_path / "data"),
            "--collection",
            "none",
            "--json",
        ],
    )
    assert res.exit_code == 2 and "Expected at least one readable document" in res.output


def test_without_ray_installed_the_flag_says_how_to_install_it_and_creates_nothing(tmp_path, monkeypatch):
    import sys

    from typer.testing import CliRunner

    from sieve.retriever.store import list_collections
    from sieve.cli.main import app

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError, as where it is not installed
    (tmp_path / "a.txt").write_text("text", encoding="utf-8")
    res = CliRunner().invoke(
        app,
        [
            "index",
            str(tmp_path / "a.txt"),
            "--ray-address",
            "auto",
            "--data-dir",
            str(tmp_path / "data"),
            "--collection",
            "never",
        ],
    )
    said = " ".join(res.output.replace("│", " ").split())  # the error box wraps the line
    assert res.exit_code == 2 and 'pip install -e ".[ray]"' in said, res.output
    assert "never" not in list_collections(RetrieverConfig(data_dir=tmp_path / "data"))
