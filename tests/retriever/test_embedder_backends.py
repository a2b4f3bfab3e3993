"""Embedding backends (torch / ONNX fp32 / ONNX int8) and the embedder identity each collection records."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import numpy as np
import pytest

from _retriever_helpers import MULTI_DOCS

from sieve.retriever import CorpusIndex, RetrieverConfig
from sieve.retriever.embeddings import Embedder, EmbedderIdentity
from sieve.core.errors import EmbedderMismatch, InvalidInput, ModelUnavailable
from sieve.retriever.onnx_backend import MODEL_FILE, _publish, read_st_modules
from sieve.retriever.store import EMBEDDER_KEY

TEXTS = [
    "Stanley Kubrick directed 2001: A Space Odyssey.",
    "hello",
    "The orchard on the hill grows Zephyrine apples, pressed into cider each autumn by the village.",
]


@pytest.fixture(scope="module")
def torch_fp32(model_cache_dir: Path) -> Embedder:
    return Embedder.from_config(RetrieverConfig(data_dir=model_cache_dir, embed_backend="torch"))


@pytest.fixture(scope="module")
def onnx_fp32(embedder) -> Embedder:
    assert (embedder.backend, embedder.dtype) == ("onnx", "float32")  # the default
    return embedder


@pytest.fixture(scope="module")
def onnx_int8(model_cache_dir: Path) -> Embedder:
    return Embedder.from_config(
        RetrieverConfig(
            data_dir=Path("/nonexistent-unused"), model_dir=model_cache_dir, embed_backend="onnx", embed_dtype="int8"
        )
    )


def test_default_is_onnx_fp32_and_bad_pairs_are_refused():
    cfg = RetrieverConfig(data_dir=Path("/tmp/unused"))
    assert (cfg.embed_backend, cfg.embed_dtype) == ("onnx", "float32")
    assert RetrieverConfig(data_dir=Path("/tmp/unused"), embed_backend="torch").embed_dtype == "float32"
    with pytest.raises(InvalidInput, match=r"Expected embed_dtype in \('float32', 'int8'\) .* got 'bfloat16'; valid"):
        RetrieverConfig(embed_backend="onnx", embed_dtype="bfloat16")
    with pytest.raises(InvalidInput, match="Expected embed_backend in"):
        RetrieverConfig(embed_backend="tensorrt")  # type: ignore[arg-type]


def test_onnx_vectors_match_torch(onnx_int8, onnx_fp32, torch_fp32):
    ref = torch_fp32.embed_passages(TEXTS)
    fp32 = onnx_fp32.embed_passages(TEXTS)
    int8 = onnx_int8.embed_passages(TEXTS)
    assert fp32.dtype == int8.dtype == np.float32 and fp32.shape == int8.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(int8, axis=1), 1.0, rtol=1e-5)
    assert (fp32 * ref).sum(axis=1).min() > 0.99999  # the same arithmetic
    assert (int8 * ref).sum(axis=1).min() > 0.97  # a quantised approximation
    # Length-sorted batching returns rows in input order, whatever the batch size.
    np.testing.assert_allclose(onnx_fp32.encoder.encode(TEXTS[::-1], batch_size=1), fp32[::-1], atol=1e-5)
    assert onnx_fp32.identity.space == torch_fp32.identity.space != onnx_int8.identity.space


def test_identity_roundtrip_and_message(onnx_int8, torch_fp32):
    ident = onnx_int8.identity
    assert EmbedderIdentity.from_json(ident.to_json()) == ident
    assert (ident.backend, ident.dtype, ident.dim, len(ident.fingerprint)) == ("onnx", "int8", 384, 64)
    with pytest.raises(
        EmbedderMismatch,
        match=r"Expected the embedder collection 'c' was indexed with, .*\(onnx, int8, "
        r"dim 384.*got .*\(torch, float32.*--embed-backend onnx --embed-dtype int8",
    ):
        torch_fp32.identity.check_compatible(ident, "c")


def test_collection_records_its_embedder_and_refuses_another(make_index, onnx_int8, torch_fp32, onnx_fp32):
    index = make_index("stamped", chunk_tokens=32, chunk_overlap=8)
    index = CorpusIndex.open(index.config, index.name, embedder=onnx_int8)
    index.writer.index_documents(MULTI_DOCS[:2], progress=False)
    meta = index.store.client.get_collection(index.name).metadata
    assert EmbedderIdentity.from_json(meta[EMBEDDER_KEY]) == onnx_int8.identity

    other = CorpusIndex.open(index.config, index.name, embedder=torch_fp32)
    n = other.count()
    for mode in ("dense", "hybrid"):
        with pytest.raises(EmbedderMismatch, match="Expected the embedder collection 'stamped' was indexed with"):
            other.search("orchard cider", 3, mode=mode)
    assert other.search("orchard cider", 3, mode="bm25")  # keyword search reads no vectors
    with pytest.raises(EmbedderMismatch):
        other.writer.index_documents(MULTI_DOCS[2:], progress=False)
    assert other.count() == n  # the refused run wrote nothing

    # fp32 torch and fp32 ONNX are one vector space: either may query and extend the other's collection.
    fp32_index = make_index("fp32", chunk_tokens=32, chunk_overlap=8)
    CorpusIndex.open(fp32_index.config, "fp32", create=True, embedder=onnx_fp32).writer.index_documents(
        MULTI_DOCS[:2], progress=False
    )
    via_torch = CorpusIndex.open(fp32_index.config, "fp32", embedder=torch_fp32)
    assert via_torch.search("orchard cider", 3, mode="dense")
    assert via_torch.writer.index_documents(MULTI_DOCS[2:], progress=False).added == len(MULTI_DOCS) - 2


def test_an_unstamped_collection_is_adopted_with_a_warning(make_index, embedder, caplog):
    index = make_index("legacy", chunk_tokens=32, chunk_overlap=8)
    chunks = index.writer.chunker.chunk(MULTI_DOCS[0])
    index.store.upsert(
        chunks,
        embedder.embed_passages([c.text for c in chunks]),
        {MULTI_DOCS[0].doc_id: "old"},
        {MULTI_DOCS[0].doc_id: len(chunks)},
    )  # as Sieve wrote before it stamped collections
    assert index.store.state().embedder is None
    caplog.set_level(logging.WARNING, logger="sieve.retriever.writer")
    index.writer.index_documents(MULTI_DOCS[1:2], progress=False)
    assert "records no embedder" in caplog.text
    assert index.store.state().embedder == embedder.identity.to_json()


def test_unsupported_modules_are_refused_for_onnx(tmp_path):
    (tmp_path / "modules.json").write_text(
        json.dumps(
            [
                {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
            ]
        )
    )
    with pytest.raises(ModelUnavailable, match=r"got \['Transformer', 'Pooling', 'Dense'\]; use --embed-backend torch"):
        read_st_modules(tmp_path)
    with pytest.raises(ModelUnavailable, match="Expected a local sentence-transformers model folder"):
        Embedder.load(str(tmp_path / "missing"), backend="onnx", dtype="int8", cache_dir=tmp_path)


def test_concurrent_exports_publish_one_complete_model(tmp_path):
    """Two exporters racing (here: threads with a stand-in build, labelled as such) leave one whole model."""
    target = tmp_path / "onnx" / "m-abc-int8"
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def build(tag: str, tmp: Path) -> None:
        barrier.wait()  # both are mid-export at once
        (tmp / MODEL_FILE).write_bytes(tag.encode() * 1000)

    def run(tag: str) -> None:
        try:
            _publish(target, lambda tmp: build(tag, tmp))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(t,)) for t in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert (target / MODEL_FILE).read_bytes() in (b"a" * 1000, b"b" * 1000)
    assert [p.name for p in target.parent.iterdir()] == [target.name]  # no temp folder left behind


def test_a_lazy_embedder_knows_its_identity_without_loading(model_cache_dir, onnx_int8, torch_fp32, onnx_fp32):
    """The identity a collection is checked against comes from the model folder, not the loaded model."""
    for loaded, backend, dtype in (
        (onnx_int8, "onnx", "int8"),
        (torch_fp32, "torch", "float32"),
        (onnx_fp32, "onnx", "float32"),
    ):
        lazy = Embedder.from_config(
            RetrieverConfig(
                data_dir=Path("/nonexistent-unused"),
                model_dir=model_cache_dir,
                embed_backend=backend,
                embed_dtype=dtype,
            ),
            lazy=True,
        )
        assert lazy.identity == loaded.identity
        assert not lazy.is_loaded


def test_bm25_on_a_stamped_collection_loads_no_embedder(make_index, onnx_int8, model_cache_dir):
    index = make_index("stamped-lazy", chunk_tokens=32, chunk_overlap=8)
    CorpusIndex.open(index.config, index.name, embedder=onnx_int8).writer.index_documents(
        MULTI_DOCS[:2], progress=False
    )
    lazy = Embedder.from_config(
        RetrieverConfig(data_dir=Path("/nonexistent-unused"), model_dir=model_cache_dir, embed_backend="torch"),
        lazy=True,
    )
    other = CorpusIndex.open(index.config, index.name, embedder=lazy)
    assert other.search("orchard cider", 3, mode="bm25")
    assert not lazy.is_loaded  # neither the search nor the (deferred) embedder check loaded the model
    with pytest.raises(EmbedderMismatch):
        other.search("orchard cider", 3, mode="dense")
    assert not lazy.is_loaded  # a mismatch is found from the identity alone, before any embedding


def test_the_fingerprint_is_cached_until_a_file_changes(tmp_path: Path) -> None:
    from sieve.retriever.embeddings import FINGERPRINT_CACHE, cached_model_fingerprint, model_fingerprint

    model, cache = tmp_path / "model", tmp_path / "cache"
    model.mkdir()
    (model / "config.json").write_text("{}", encoding="utf-8")
    (model / "weights.bin").write_bytes(b"\x00" * 1000)
    first = cached_model_fingerprint(model, cache)
    assert first == model_fingerprint(model) and (cache / FINGERPRINT_CACHE).is_file()
    entry = json.loads((cache / FINGERPRINT_CACHE).read_text(encoding="utf-8"))[str(model.resolve())]
    assert entry["sha256"] == first

    # A hit is served from the file: a planted value comes back while no file of the model changed.
    entry["sha256"] = "planted"
    (cache / FINGERPRINT_CACHE).write_text(json.dumps({str(model.resolve()): entry}), encoding="utf-8")
    assert cached_model_fingerprint(model, cache) == "planted"
    # Rewriting a file (same size) moves its change time: the folder is hashed again.
    (model / "weights.bin").write_bytes(b"\x01" * 1000)
    assert cached_model_fingerprint(model, cache) == model_fingerprint(model) != first
    assert cached_model_fingerprint(model, None) == model_fingerprint(model)


def test_the_onnx_export_hides_transformers_loading_bar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first export runs inside `sieve index`'s own bar: transformers' "Loading weights" bar is off
    while it loads (a labelled fake from_pretrained records the setting, then stops the export)."""
    import transformers
    from transformers.utils import logging as hf_logging

    from sieve.retriever import onnx_backend

    seen: list[bool] = []

    def fake_from_pretrained(*args: object, **kwargs: object) -> None:
        seen.append(hf_logging.is_progress_bar_enabled())
        raise RuntimeError("stop here")

    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", fake_from_pretrained)
    hf_logging.enable_progress_bar()
    with pytest.raises(RuntimeError, match="stop here"):
        onnx_backend._export_fp32(tmp_path / "model", tmp_path / "out")
    assert seen == [False]
    assert hf_logging.is_progress_bar_enabled()  # restored afterwards


def test_a_collection_indexed_with_another_model_is_opened_with_it(tmp_path: Path, make_index, embedder) -> None:
    """`sieve index --embedder RUN/embedder` once; later commands that name no embedder use the recorded one."""
    import shutil

    from sieve.retriever.config import default_embedder_path

    other = tmp_path / "adapted"
    shutil.copytree(default_embedder_path(), other, ignore=shutil.ignore_patterns("onnx"))
    cfg_file = other / "config_sentence_transformers.json"
    cfg_file.write_text(cfg_file.read_text().replace("{", '{"note": "a copy",', 1))  # another fingerprint
    index = make_index("adapted", chunk_tokens=32, chunk_overlap=8)
    own = Embedder.from_config(RetrieverConfig(data_dir=index.config.data_dir, embedder_path=str(other)))
    assert own.identity.fingerprint != embedder.identity.fingerprint and own.identity.path == str(other.resolve())
    CorpusIndex.open(index.config, "adapted", embedder=own).writer.index_documents(MULTI_DOCS[:2], progress=False)

    # no embedder named: the collection's own is used (same vectors here, so the top hit is the orchard)
    plain = CorpusIndex.open(index.config, "adapted", embedder=embedder)
    hits = plain.search("orchard cider", 3, mode="dense")
    assert hits and Path(plain.embedder.path) == other and plain.dense.embedder is plain.embedder
    assert plain.writer.index_documents(MULTI_DOCS[2:], progress=False).added == len(MULTI_DOCS) - 2

    # an explicit other model is never overridden
    third = tmp_path / "third"
    shutil.copytree(other, third)
    (third / "config_sentence_transformers.json").write_text(cfg_file.read_text().replace("a copy", "another"))
    chosen = Embedder.from_config(RetrieverConfig(data_dir=index.config.data_dir, embedder_path=str(third)))
    with pytest.raises(EmbedderMismatch, match=f"--embedder {other.resolve()}"):
        CorpusIndex.open(index.config, "adapted", embedder=chosen).search("orchard cider", 3, mode="dense")

    # the recorded folder gone (or changed): a mismatch that names it, as before
    shutil.rmtree(other)
    with pytest.raises(EmbedderMismatch, match="--embedder"):
        CorpusIndex.open(index.config, "adapted", embedder=embedder).search("orchard cider", 3, mode="dense")
