"""Synthetic text for the benchmarks: pseudo-words with natural text's frequency law, and chunks of it.

One generator for every benchmark that needs a corpus larger than the shipped sample
(``scale``, ``retriever``, ``gpu_check``): BM25's posting lists and Chroma's documents then look
the same to each of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sieve.retriever.types import Chunk

VOCAB = 500_000
# 2-5 syllables from 30: far more combinations than any vocabulary here needs
_SYLLABLES = (
    "ka lo mi ren tus va por ji sel dan qua bri zo ne fi gu har mel ost pa ri sun te vol cam ber lin dor e ax".split()
)


class Vocabulary:
    """Pseudo-words with Zipf(1.07) frequencies, sampled in bulk with numpy."""

    def __init__(self, seed: int, size: int = VOCAB, stream: int = 0) -> None:
        """``seed`` fixes the words and their ranks; ``stream`` picks an independent sampling sequence
        (the serving stage draws queries from the same words as the indexed texts)."""
        rng = np.random.default_rng(seed)
        syllables = np.array(_SYLLABLES, dtype="<U15")
        n = 2 * size  # duplicates dropped below
        picks = syllables[rng.integers(0, len(syllables), size=(n, 5))]
        lengths = rng.integers(2, 6, size=n)
        words = np.char.add(picks[:, 0], picks[:, 1])
        for j in range(2, 5):
            words = np.where(lengths > j, np.char.add(words, picks[:, j]), words)
        unique = np.unique(words)[:size]  # sorted, so the seed alone fixes the list
        self.words = unique[rng.permutation(len(unique))].astype(object)  # str objects join fast
        weights = 1.0 / np.arange(1, len(self.words) + 1) ** 1.07
        self.cum = np.cumsum(weights / weights.sum())
        self.rng = np.random.default_rng([seed, stream])

    def passages(self, n: int) -> list[str]:
        """``n`` passages of 80-160 words (~ a 200-token chunk each)."""
        lengths = self.rng.integers(80, 161, size=n)
        ranks = np.minimum(np.searchsorted(self.cum, self.rng.random(int(lengths.sum()))), len(self.words) - 1)
        words = self.words[ranks]
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        return [" ".join(words[bounds[i] : bounds[i + 1]]) for i in range(n)]

    def query(self) -> str:
        """Content words of middling frequency, sometimes one very common word: what is left of a natural
        question once BM25's stop words are gone."""
        picks = [self.words[self.rng.integers(50, 5000)] for _ in range(self.rng.integers(3, 8))]
        if self.rng.random() < 0.5:
            picks.append(self.words[self.rng.integers(0, 50)])
        return " ".join(picks)


def synthetic_chunks(
    vocab: Vocabulary, start: int, n: int, *, marker: str = "", topics: Sequence[str] = ()
) -> list[Chunk]:
    """Chunks ``syn-{start}#0`` .. ``syn-{start + n - 1}#0``, one document each, of ``vocab``'s passages.

    ``marker`` is appended to every text (a word no other text holds, to find them); ``topics``, when
    given, are cycled through as each chunk's ``topic`` metadata (for filtered searches).
    """
    from sieve.retriever.types import Chunk

    return [
        Chunk(
            chunk_id=f"syn-{i}#0",
            doc_id=f"syn-{i}",
            position=0,
            text=f"{t} {marker}".strip(),
            title=f"Doc {i}",
            source="synthetic",
            char_end=len(t),
            metadata={"topic": topics[i % len(topics)]} if topics else {},
        )
        for i, t in zip(range(start, start + n), vocab.passages(n))
    ]


def unit_vectors(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    """``n`` random unit vectors of ``dim`` float32 dimensions (where embedding them all cannot run in time)."""
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs


__all__ = ["VOCAB", "Vocabulary", "synthetic_chunks", "unit_vectors"]
