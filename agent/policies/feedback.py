"""Pseudo-relevance feedback: the question searched again with the words that set its best chunks apart.

A question is written in the asker's words; the evidence is written in the corpus's. After one
search, the chunks the episode keeps share words the question lacks — "current assets" and
"current liabilities" for a question about a "quick ratio", the other speaker's name in a
conversation — and the question with those words added reaches pages the question alone ranks
lower (RM3's idea, with the corpus's own document shares as the weights, no model).

A feedback word must be rare on this corpus (held by at most ``FEEDBACK_MAX_SHARE`` of its chunks,
so "company" in filings or "npm" in npm's docs never qualifies), absent from the question, not a
bare number, and held by at least two of the kept chunks: a word of one chunk describes that chunk,
a word of several describes what they have in common.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from sieve.retriever.bm25 import passage_terms, rarity, tokenize

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sieve.retriever.types import Chunk

FEEDBACK_MAX_SHARE = 0.05  # a word held by more of the corpus's chunks says nothing of these chunks
FEEDBACK_MIN_CHUNKS = 2  # a feedback word is held by at least this many of the kept chunks
FEEDBACK_WORDS = 6
FEEDBACK_CHUNKS = 5  # the best chunks read for feedback words


def feedback_terms(
    question: str, chunks: Sequence[Chunk], share: Callable[[str], float] | None, most: int = FEEDBACK_WORDS
) -> list[str]:
    """Words of the kept ``chunks`` (titles included) that set them apart, most telling first.

    Each candidate word scores ``(chunks holding it) * log(1 + 1/share)``; see the module docstring
    for which words qualify. ``share`` maps a BM25 token to its share of the corpus's chunks; without
    it there are no feedback words.

    Example:
        >>> from sieve.retriever.types import Chunk
        >>> share = {"current": 0.03, "liabilities": 0.02, "assets": 0.04, "company": 0.3, "amcor": 0.01}.get
        >>> kept = [Chunk("a#1", "a", 1, "Total current assets and total current liabilities", title="Amcor"),
        ...         Chunk("a#2", "a", 2, "Current liabilities exceed current assets; the company", title="Amcor")]
        >>> feedback_terms("Has Amcor's quick ratio improved?", kept, lambda w: share(w, 0.0))
        ['liabilities', 'current', 'assets']
    """
    if share is None or most <= 0:
        return []
    asked = set(tokenize(question))
    held: Counter[str] = Counter()
    for chunk in chunks:
        held.update(set(passage_terms(chunk.title, chunk.text, chunk.heading_path)))
    scored: list[tuple[float, str]] = []
    for word, n in held.items():
        if n < FEEDBACK_MIN_CHUNKS or word in asked or word.isdigit() or len(word) < 3:
            continue
        s = share(word)
        if 0.0 < s <= FEEDBACK_MAX_SHARE:
            scored.append((n * rarity(s), word))
    scored.sort(key=lambda sw: (-sw[0], sw[1]))
    return [w for _, w in scored[:most]]


def feedback_query(question: str, chunks: Sequence[Chunk], share: Callable[[str], float] | None) -> str | None:
    """The question followed by its :func:`feedback_terms` from ``chunks`` (the first ``FEEDBACK_CHUNKS``),
    or None when no word qualifies.

    Example:
        >>> from sieve.retriever.types import Chunk
        >>> kept = [Chunk(f"a#{i}", "a", i, "Current assets, current liabilities", title="Amcor") for i in (1, 2)]
        >>> share = {"current": 0.03, "liabilities": 0.02}.get
        >>> feedback_query("Amcor's quick ratio?", kept, lambda w: share(w, 0.0))
        "Amcor's quick ratio? liabilities current"
    """
    terms = feedback_terms(question, chunks[:FEEDBACK_CHUNKS], share)
    return f"{question} {' '.join(terms)}" if terms else None


__all__ = [
    "FEEDBACK_CHUNKS",
    "FEEDBACK_MAX_SHARE",
    "FEEDBACK_MIN_CHUNKS",
    "FEEDBACK_WORDS",
    "feedback_query",
    "feedback_terms",
]
