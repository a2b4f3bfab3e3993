"""Tokenizing ahead in a thread (the CUDA path of the torch embedder) computes what ``encode`` computes.

Only the CPU is here, so the path is forced on the CPU: same batches, same forward pass, vectors
in input order equal to ``SentenceTransformer.encode``'s.
"""

from __future__ import annotations

import numpy as np
import pytest

from sieve.retriever.embeddings import Embedder
from sieve.retriever.prefetch import encode_prefetched, length_sorted_batches

TEXTS = [
    "short",
    "a somewhat longer passage about lighthouses and their keepers on stormy nights",
    "",
    "Ray Data streams blocks between actor pools",
    "x " * 300,
    "medium length text here",
]


@pytest.fixture(scope="module")
def torch_embedder() -> Embedder:
    from sieve.retriever.config import default_embedder_path

    return Embedder.load(default_embedder_path(), backend="torch", device="cpu")


def test_prefetched_vectors_equal_encode_in_input_order(torch_embedder):
    model = torch_embedder.loaded().model
    want = model.encode(TEXTS, batch_size=2, normalize_embeddings=True, convert_to_numpy=True)
    got = encode_prefetched(model, TEXTS, 2, depth=2)
    assert got.dtype == np.float32 and got.shape == want.shape
    assert np.allclose(got, want, atol=1e-5), float(np.abs(got - want).max())
    assert np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)
    assert encode_prefetched(model, [], 4).shape == (0, want.shape[1])


def test_the_encoder_prefetches_on_cuda_only_unless_told(torch_embedder):
    from sieve.retriever.embeddings import TorchEncoder

    enc = torch_embedder.loaded()
    assert enc.device.device == "cpu" and not enc.prefetch  # on the CPU the tokenizer would compete for the cores
    forced = TorchEncoder(enc.model, enc.device, prefetch=True)
    assert np.allclose(forced.encode(TEXTS, 4), enc.encode(TEXTS, 4), atol=1e-5)


def test_batches_are_length_sorted_longest_first():
    order, batches = length_sorted_batches(TEXTS, 4)
    assert [len(b) for b in batches] == [4, 2]
    assert [len(TEXTS[i]) for i in order] == sorted(map(len, TEXTS), reverse=True)
