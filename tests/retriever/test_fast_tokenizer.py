"""The ONNX backend's tokenizer (``tokenizers`` alone) against the transformers tokenizer it stands in for."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from sieve.retriever.fast_tokenizer import BatchTokenizer
from sieve.retriever.onnx_backend import read_st_modules

LONG = " ".join(f"word{i} Zephyrine" for i in range(400))  # far past MiniLM's 256-token limit
TEXTS = [
    "Spirit of St. Louis",
    "",
    "   ",
    "Crème brûlée à l'Élysée — naïve café",
    "東京タワーは1958年に完成した",
    "Stanley Kubrick directed 2001: A Space Odyssey.\nNew line\ttab",
    "x" * 900,
    LONG,
    "hello",
    "ÅNGSTRÖM 😀 ok",
]


@pytest.fixture(scope="module")
def model_path(embedder) -> Path:
    return Path(embedder.path)


def test_ids_masks_and_type_ids_equal_transformers(model_path: Path) -> None:
    from transformers import AutoTokenizer

    fast = BatchTokenizer.load(model_path, read_st_modules(model_path).max_seq_length)
    assert fast is not None and fast.max_length == 256  # min(sentence_bert_config 256, tokenizer 512)
    hf = AutoTokenizer.from_pretrained(str(model_path), local_files_only=True)
    ref = hf(TEXTS, padding=True, truncation=True, max_length=fast.max_length, return_tensors="np")
    got = fast.pad(fast.encode(TEXTS))
    for name in ("input_ids", "attention_mask", "token_type_ids"):
        np.testing.assert_array_equal(got[name], ref[name], err_msg=name)
    assert got["input_ids"].shape == (len(TEXTS), 256) and got["input_ids"].dtype == np.int64


def test_onnx_vectors_equal_the_transformers_tokenizer_path(embedder) -> None:
    enc = embedder.encoder
    assert enc.fast is not None
    fast = enc.encode(TEXTS, batch_size=4)
    slow = enc._encode_hf(TEXTS, batch_size=4)
    np.testing.assert_allclose(fast, slow, atol=1e-6)


def test_a_folder_without_tokenizer_json_falls_back(model_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "no-fast"
    shutil.copytree(model_path, folder, ignore=shutil.ignore_patterns("*.safetensors", "tokenizer.json"))
    assert BatchTokenizer.load(folder, 256) is None


def test_a_pad_token_the_vocabulary_lacks_falls_back(model_path: Path, tmp_path: Path) -> None:
    folder = tmp_path / "odd-pad"
    shutil.copytree(model_path, folder, ignore=shutil.ignore_patterns("*.safetensors"))
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        path = folder / name
        path.write_text(path.read_text(encoding="utf-8").replace('"[PAD]"', '"<nope>"'), encoding="utf-8")
    assert BatchTokenizer.load(folder, 256) is None


def test_left_padding_puts_the_pads_first() -> None:
    from types import SimpleNamespace as Enc

    from tokenizers import Tokenizer, models

    bt = BatchTokenizer(
        Tokenizer(models.WordLevel({"[PAD]": 0, "a": 1})), 8, pad_id=0, pad_type_id=3, padding_left=True
    )
    out = bt.pad(
        [
            Enc(ids=[1, 1, 1], attention_mask=[1, 1, 1], type_ids=[0, 0, 0]),
            Enc(ids=[1], attention_mask=[1], type_ids=[0]),
        ]
    )
    assert out["input_ids"].tolist() == [[1, 1, 1], [0, 0, 1]]
    assert out["attention_mask"].tolist() == [[1, 1, 1], [0, 0, 1]]
    assert out["token_type_ids"].tolist() == [[0, 0, 0], [3, 3, 0]]
