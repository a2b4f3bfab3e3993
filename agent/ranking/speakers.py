"""The closing ranking's preference, in a conversation, for the turns of the speaker a question names.

A reader asks about a speaker by name ("When did Caroline go to the support group?"), and the turn
that states the fact is nearly always that speaker's own. On locomo-dev's tuning half (192 questions),
91% of the gold turns in the agent's top 10 were spoken by someone the question names, against 65% of
the other turns there, and 95% of the gold turns it missed were. The ranker cannot learn this: its
features mean the same on any corpus, and the passage sets it is fitted on have no speakers.

So, after the ranker, a turn of a speaker the question does not name counts ``1 - discount`` of its
probability, when the pool is a conversation (:func:`sieve.retriever.turns.is_conversation`) and the
question names at least one of the pool's speakers; otherwise nothing changes. A chunk that holds
several turns counts as named when any of its speakers is; a chunk with no speaker keeps its own.

Example:
    >>> texts = ["Caroline: I went to a support group.", "Melanie: I went camping.", "Melanie: Nice!"]
    >>> speaker_weights("Where did Melanie go camping?", texts, 0.8)
    [0.2, 1.0, 1.0]
    >>> speaker_weights("Where did they go camping?", texts, 0.8)
    [1.0, 1.0, 1.0]
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

from sieve.retriever.turns import is_conversation, speakers

if TYPE_CHECKING:
    from collections.abc import Sequence


@cache
def _name_pattern(name: str) -> re.Pattern[str]:
    # The whole label or any of its names: "Dr. Jane Smith" is asked about as "Jane" or "Smith";
    # a title or an initial ("Dr.", "J.") names no one alone, nor does a one-letter label: an FAQ's
    # "Q:" and "A:" are no speakers, and "A" opens many a question.
    names = [n for n in (name, *(w for w in name.split() if not w.endswith("."))) if len(n) > 1]
    return re.compile(r"\b(?:" + "|".join(re.escape(n) for n in names) + r")\b" if names else r"(?!)")


def named(question: str, name: str) -> bool:
    """Whether ``question`` names the speaker ``name`` (the whole label or one of its names, case kept)."""
    return bool(_name_pattern(name).search(question))


def speaker_weights(question: str, texts: Sequence[str], discount: float) -> list[float]:
    """Per chunk text, the factor its ranker probability is multiplied by: ``1 - discount`` for a turn
    of a speaker ``question`` does not name, in a conversation where it names one; 1 otherwise."""
    ones = [1.0] * len(texts)
    if not discount or not is_conversation(texts):
        return ones
    said = [speakers(t) for t in texts]
    asked = [any(named(question, s) for s in who) for who in said]
    if not any(asked):
        return ones
    # A chunk with no speaker (a session's caption, a heading) is no one's turn: it keeps its probability.
    return [1.0 if a or not who else round(1.0 - discount, 6) for a, who in zip(asked, said)]


__all__ = ["named", "speaker_weights"]
