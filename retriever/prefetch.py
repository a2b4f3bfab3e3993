"""Sentence-transformers encoding with tokenization off the GPU's critical path.

``SentenceTransformer.encode`` tokenizes a batch, copies it to the device, runs the model, and
only then tokenizes the next batch: on an H200 the fast tokenizer, not the GPU, limited MiniLM
(issue 26: float16 at batch 1,024 was *slower* than float32 at 256). Here one worker thread
tokenizes the next ``depth`` batches while the device runs the current one (the Rust tokenizer
releases the GIL), into pinned host memory so the copy to the GPU overlaps too, as a
``DataLoader`` with a worker and ``pin_memory=True`` would, without its process start-up.

The arithmetic is ``encode``'s: the same length-sorted batches (longest first), the same
``preprocess`` and forward pass, unit-normalised, returned in input order as float32.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence
    from concurrent.futures import Future


def length_sorted_batches(texts: Sequence[str], batch_size: int) -> tuple[np.ndarray, list[list[str]]]:
    """Input order sorted longest first (as ``encode`` does) and the batches in that order.

    Example:
        >>> order, batches = length_sorted_batches(["a", "ccc", "bb"], 2)
        >>> order.tolist(), batches
        ([1, 2, 0], [['ccc', 'bb'], ['a']])
    """
    order = np.argsort([-len(t) for t in texts], kind="stable")
    ordered = [texts[i] for i in order]
    return order, [ordered[i : i + batch_size] for i in range(0, len(ordered), batch_size)]


def _tokenize(model: Any, batch: list[str], pin: bool) -> dict[str, Any]:
    features = model.preprocess(batch)
    if pin:  # page-locked host memory: the host-to-device copy runs asynchronously
        features = {k: v.pin_memory() if hasattr(v, "pin_memory") else v for k, v in features.items()}
    return features


def encode_prefetched(model: Any, texts: Sequence[str], batch_size: int, *, depth: int = 2) -> np.ndarray:
    """Unit float32 embeddings of ``texts`` (input order), tokenizing ``depth`` batches ahead in a thread.

    Args:
        model: a loaded ``SentenceTransformer`` (on any device).
        texts: the passages.
        batch_size: passages per forward pass.
        depth: batches tokenized ahead of the one on the device.
    """
    import torch

    device = next(model.parameters()).device
    pin = device.type == "cuda"
    order, batches = length_sorted_batches(texts, batch_size)
    parts: list[torch.Tensor] = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="sieve-tokenize") as pool:
        ahead: deque[Future] = deque(pool.submit(_tokenize, model, b, pin) for b in batches[:depth])
        for i in range(len(batches)):
            features = ahead.popleft().result()
            if i + depth < len(batches):
                ahead.append(pool.submit(_tokenize, model, batches[i + depth], pin))
            features = {k: v.to(device, non_blocking=True) if hasattr(v, "to") else v for k, v in features.items()}
            with torch.inference_mode():
                emb = model(features)["sentence_embedding"]
            # Normalised in float32: a float16 model's norms would round before the division.
            parts.append(torch.nn.functional.normalize(emb.float(), dim=-1))
    if not parts:
        return np.zeros((0, model.get_embedding_dimension()), dtype=np.float32)
    sorted_vecs = torch.cat(parts).cpu().numpy().astype(np.float32, copy=False)
    out = np.empty_like(sorted_vecs)
    out[order] = sorted_vecs
    return out


__all__ = ["encode_prefetched", "length_sorted_batches"]
