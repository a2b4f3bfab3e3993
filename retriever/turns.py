"""A conversation's turns: who speaks in a chunk of a chat log.

Chat logs are written one turn a line, the speaker first: ``Caroline: I went to a support group
yesterday.`` A speaker is one to three capitalised words before a colon and a space at the start of
a line, after the time stamp an exported log may put first (``[09:15] Caroline: ...``, WhatsApp's
``12/31/23, 9:15 PM - Caroline: ...``). Only the shape of the line is read, so a label that opens a line of any other text ("Note:
...") reads as a speaker too; callers decide when a text is a conversation (most of its chunks open
with a speaker, :func:`is_conversation`).

Example:
    >>> speaker("Caroline: I went to a support group.")
    ('Caroline', 'I went to a support group.')
    >>> sorted(speakers("Jon: Hi Gina!\\nGina: Hey Jon, long time no see."))
    ['Gina', 'Jon']
    >>> speaker("no speaker here: lower case")
    ('', 'no speaker here: lower case')
    >>> speaker("12/31/23, 9:15 PM - Jon Smith: Happy new year!"), speaker("[2023-12-31 09:15] Élodie: You too.")
    (('Jon Smith', 'Happy new year!'), ('Élodie', 'You too.'))
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from sieve.retriever.types import Chunk, Document

# What exported chat logs put before the speaker: "[09:15]", "[2023-12-31 09:15:02]" (Slack and
# Discord copies, iOS WhatsApp), "12/31/23, 9:15 PM - " (Android WhatsApp), "2023-12-31 09:15 - ".
_STAMP = r"(?:\[[^\]\n]{0,40}\d[^\]\n]{0,40}\]\s*|\d[\d/.,: -]{2,30}\d(?:\s?[APap]\.?[Mm]\.?)?\s+[-\u2013]\s+)?"
# A name is one to three words opening in a letter; each must be a capital (checked in _named: re has
# no class for upper-case letters beyond ASCII, and "Élodie" or "Łukasz" are names too).
_SPEAKER = re.compile(r"^\s*" + _STAMP + r"([^\W\d_][\w.'-]*(?: [^\W\d_][\w.'-]*){0,2}):\s+", re.MULTILINE)


def _named(m: re.Match[str] | None) -> bool:
    return m is not None and all(word[0].isupper() for word in m.group(1).split())


def speaker(text: str) -> tuple[str, str]:
    """(speaker, what they said) of a turn written ``Name: words``; ('', text) when it names no speaker."""
    m = _SPEAKER.match(text)
    return (m.group(1), text[m.end() :]) if m and _named(m) else ("", text)


def speakers(text: str) -> set[str]:
    """Every speaker that opens a line of ``text`` (a chunk may hold several turns)."""
    return {m.group(1) for m in _SPEAKER.finditer(text) if _named(m)}


def is_conversation(texts: Iterable[str]) -> bool:
    """Whether at least half of ``texts`` (and at least two) open with a speaker: chunks of a chat log."""
    opened = [bool(speaker(t)[0]) for t in texts]
    return len(opened) >= 2 and sum(opened) * 2 >= len(opened)


# The most of a previous turn searched with the next one, its end kept (where its question is): the
# embedder reads 256 word pieces, and the turn's own words must stay within them.
TURN_CONTEXT_CHARS = 400


def with_turn_context(docs: Iterable[Document]) -> Iterator[Document]:
    """``docs`` in order, each conversation turn given the turn before it as its ``context``.

    A turn is a document whose text opens with a speaker (``Name: ...``); the turn before it is the
    previous document when that one opens with a speaker too and has the same, non-empty title (a
    chat log written one turn a record, the session in the title). A document that already has a
    context (sent with it: a turn sent alone) keeps it, cut as a turn's is (:func:`cut_context`). The
    context is embedded and searched with the turn (its chunk's heading path) and never returned.

    Why: an answer is often elliptical and its question sits in the other speaker's turn ("What's
    up with you? Anything new?" / "Caroline: I went to a LGBTQ support group yesterday"); the
    question a user asks later is worded like that question (docs/experiments/turn-context.md).

    Example:
        >>> from sieve.retriever.types import Document
        >>> docs = [Document("1", "Anna: What did you cook?", "s1"), Document("2", "Ben: Chili!", "s1"),
        ...         Document("3", "Ben: Hi.", "s2")]
        >>> [d.context for d in with_turn_context(docs)]
        ['', 'Anna: What did you cook?', '']
    """
    prev: Document | None = None
    for doc in docs:
        if doc.context:
            yield replace(doc, context=cut_context(doc.context))
        elif (
            prev is not None
            and doc.title
            and prev.title == doc.title
            and speaker(doc.text)[0]
            and speaker(prev.text)[0]
        ):
            yield replace(doc, context=cut_context(prev.text))
        else:
            yield doc
        prev = doc


def cut_context(text: str) -> str:
    """``text`` in at most :data:`TURN_CONTEXT_CHARS` characters: its speaker (when it opens with one),
    then its end from a word's start, where a turn's question is.

    Example:
        >>> cut_context("Anna: " + "la " * 200 + "What did you cook?")[-30:]
        'la la la la What did you cook?'
        >>> len(cut_context("Anna: " + "la " * 200)) <= TURN_CONTEXT_CHARS
        True
    """
    text = text.strip()
    if len(text) <= TURN_CONTEXT_CHARS:
        return text
    name = speaker(text)[0]
    lead = f"{name}: " if name else ""
    cut = text[-(TURN_CONTEXT_CHARS - len(lead)) :]
    return lead + (cut.split(" ", 1)[-1] if " " in cut else cut)


def is_turn_context(chunk: Chunk) -> bool:
    """Whether ``chunk``'s heading path is the turn before it (:func:`with_turn_context`), not headings:
    both its text and its heading path open with a speaker."""
    return bool(chunk.heading_path and speaker(chunk.text)[0] and speaker(chunk.heading_path)[0])


__all__ = ["TURN_CONTEXT_CHARS", "is_conversation", "is_turn_context", "speaker", "speakers", "with_turn_context"]
