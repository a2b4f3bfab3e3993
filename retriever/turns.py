"""A conversation's turns: who speaks in a chunk of a chat log.

Chat logs are written one turn a line, the speaker first: ``Caroline: I went to a support group
yesterday.`` A speaker is one to three capitalised words before a colon and a space at the start of
a line. Only the shape of the line is read, so a label that opens a line of any other text ("Note:
...") reads as a speaker too; callers decide when a text is a conversation (most of its chunks open
with a speaker, :func:`is_conversation`).

Example:
    >>> speaker("Caroline: I went to a support group.")
    ('Caroline', 'I went to a support group.')
    >>> sorted(speakers("Jon: Hi Gina!\\nGina: Hey Jon, long time no see."))
    ['Gina', 'Jon']
    >>> speaker("no speaker here: lower case")
    ('', 'no speaker here: lower case')
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

_SPEAKER = re.compile(r"^\s*([A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}):\s+", re.MULTILINE)


def speaker(text: str) -> tuple[str, str]:
    """(speaker, what they said) of a turn written ``Name: words``; ('', text) when it names no speaker."""
    m = _SPEAKER.match(text)
    return (m.group(1), text[m.end() :]) if m else ("", text)


def speakers(text: str) -> set[str]:
    """Every speaker that opens a line of ``text`` (a chunk may hold several turns)."""
    return {m.group(1) for m in _SPEAKER.finditer(text)}


def is_conversation(texts: Iterable[str]) -> bool:
    """Whether at least half of ``texts`` (and at least two) open with a speaker: chunks of a chat log."""
    opened = [bool(speaker(t)[0]) for t in texts]
    return len(opened) >= 2 and sum(opened) * 2 >= len(opened)


__all__ = ["is_conversation", "speaker", "speakers"]
