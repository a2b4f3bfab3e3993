"""Set-retrieval metric maths for the rewards (precision, recall, F-beta, answer matching).

The F-beta formula is :func:`sieve.eval.metrics.fbeta`, so rewards and evaluation cannot disagree on
it; what is added here is the *set* view the reward needs (eval's functions score ranked lists
cut at ``k``; a returned evidence set is scored whole) and SQuAD-style answer matching.
"""

from __future__ import annotations

import re
import string
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable


def precision(returned: Collection[str], gold: Collection[str]) -> float:
    """Share of ``returned`` ids that are gold (0.0 for an empty returned set).

    Example:
        >>> precision({"a", "b"}, {"a"})
        0.5
    """
    r = set(returned)
    return len(r & set(gold)) / len(r) if r else 0.0


def recall(returned: Collection[str], gold: Collection[str]) -> float:
    """Share of ``gold`` ids found in ``returned`` (0.0 when there is no gold).

    Example:
        >>> recall(["a", "x"], ["a", "b"])
        0.5
    """
    g = set(gold)
    return len(set(returned) & g) / len(g) if g else 0.0


def f_beta(returned: Collection[str], gold: Collection[str], beta: float = 1.0) -> float:
    """F-beta over sets: ``(1+β²)·P·R / (β²·P + R)``; β > 1 weighs recall more.

    Args:
        returned: ids the system returned (duplicates are ignored).
        gold: the gold ids.
        beta: recall weight; must be > 0.

    Returns:
        The score in [0, 1]; 0.0 when either side is empty or nothing matches.

    Raises:
        ValueError: if ``beta`` is not positive.

    Example:
        >>> round(f_beta({"a", "b"}, {"a"}, beta=1.0), 4)
        0.6667
    """
    from sieve.eval.metrics import fbeta

    return fbeta(precision(returned, gold), recall(returned, gold), beta)


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans({c: " " for c in string.punctuation})


def normalize_answer(text: str) -> str:
    """SQuAD-style normalisation: lowercase, drop punctuation and articles, squeeze spaces.

    Example:
        >>> normalize_answer("The  New-Hollywood era!")
        'new hollywood era'
    """
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCT)).split())


def contains_answer(text: str, answers: Iterable[str]) -> bool:
    """Whether any (normalised) answer occurs in ``text`` on word boundaries.

    Example:
        >>> contains_answer("Puccini was a leading exponent of verismo.", ["Verismo"])
        True
    """
    hay = f" {normalize_answer(text)} "
    for a in answers:
        na = normalize_answer(a)
        if na and f" {na} " in hay:
            return True
    return False


__all__ = ["contains_answer", "f_beta", "normalize_answer", "precision", "recall"]
