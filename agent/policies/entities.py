"""Cheap entity spotting for query reformulation: capitalised spans, no NLP model.

Multi-hop questions bridge through a named entity of the first passage (the director of a film,
the father of a bishop); its name, searched on its own, usually finds the second passage by
title. Spans of capitalised words (with inner connectors like "of" or "de") are a serviceable
stand-in for a named-entity tagger, in any Latin-script language, at microseconds per chunk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_WORD_RE = re.compile(r"[^\s]+")
_STRIP = "\"'“”‘’()[]{},.;:!?«»"
# Inner words allowed inside a name ("Bank of America", "Leonardo da Vinci").
_CONNECTORS = frozenset("of the de del della da di von van der den du la le y and & al bin el for in on".split())
# Capitalised words that are not names on their own (sentence starts, pronouns, months).
_STOP = frozenset("""a an the he she it its his her they their them this that these those there here in on at
for from by with of to as and or but if when where which who whom whose what why how was were is are be been
after before during while since until also however although though both either neither each every all some
many most more other such one two three first second third january february march april may june july august
september october november december monday tuesday wednesday thursday friday saturday sunday i we you our
film movie born died american british english french german italian spanish""".split())


@dataclass(frozen=True)
class Mention:
    text: str
    start: int  # character offset in the source text
    context: str  # the few words before the mention


def _is_cap(word: str) -> bool:
    w = word.strip(_STRIP)
    return bool(w) and (w[0].isupper() or (w[0].isdigit() and len(w) == 4 and w.isdigit()))


_ABBREV = frozenset("st mr mrs ms dr jr sr mt ft co inc ltd vs".split())


def _ends_name(word: str) -> bool:
    """Whether the punctuation after ``word`` closes a name (a period after an initial does not)."""
    if word[-1:] in ",;:!?)\"”":
        return True
    if word.endswith("."):
        core = word.rstrip(".").strip(_STRIP)
        return not (len(core) == 1 or core.lower() in _ABBREV)
    return False


def mentions(text: str) -> list[Mention]:
    """Capitalised spans of ``text`` in order of appearance (single stop words dropped).

    Example:
        >>> [m.text for m in mentions("The film was directed by Pál Gábor and starred Anna Kovács.")]
        ['Pál Gábor', 'Anna Kovács']
    """
    words = [(m.group(0), m.start()) for m in _WORD_RE.finditer(text)]
    out: list[Mention] = []
    i = 0
    while i < len(words):
        if not _is_cap(words[i][0]) or words[i][0][0].isdigit():
            i += 1
            continue
        j = i + 1
        while j < len(words):
            w = words[j][0]
            prev = words[j - 1][0]
            if _ends_name(prev):
                break  # punctuation ends a name ("Paris, France" is two)
            if w.startswith("("):
                # A one-word disambiguator belongs to the name: "James Stanley (Bishop)'s".
                if re.fullmatch(r"\([^\s()]+\)(?:'s|’s)?[,.;:!?]*", w) and _is_cap(w.lstrip("(")):
                    j += 1
                break
            if _is_cap(w):
                j += 1
                continue
            if w.lower() in _CONNECTORS and j + 1 < len(words) and _is_cap(words[j + 1][0]):
                j += 2
                continue
            break
        span = [w for w, _ in words[i:j]]
        # Trim stop words at the edges ("The Beatles" keeps "The" only inside a longer name).
        while span and span[0].strip(_STRIP).lower() in _STOP and len(span) > 1 and span[0].strip(_STRIP).lower() != "the":
            span = span[1:]
        name = re.sub(r"(?:'s|’s)?[,.;:!?]*$", "", " ".join(span))
        name = name.strip(_STRIP.replace(")", "")).strip()
        if name.endswith(")") and "(" not in name:
            name = name.rstrip(")")
        if name and not (len(span) == 1 and name.lower() in _STOP) and len(name) > 2:
            ctx_words = [w for w, _ in words[max(0, i - 6):i]]
            out.append(Mention(text=name, start=words[i][1], context=" ".join(ctx_words)))
        i = j
    return out


def normalise(name: str) -> str:
    """Lower-cased alphanumeric words, for comparing names and titles.

    Example:
        >>> normalise("The Zone (2017 Film)")
        'the zone 2017 film'
    """
    return " ".join(re.findall(r"\w+", name.lower()))


def name_match(name: str, title: str) -> float:
    """How well ``title`` names ``name``: share of the name's words in the title, 0..1.

    Example:
        >>> name_match("Shawn Levy", "Shawn Levy")
        1.0
        >>> name_match("Levy", "Shawn Levy")
        1.0
        >>> name_match("Shawn Levy", "Free Guy")
        0.0
    """
    return words_match(set(normalise(name).split()), set(normalise(title).split()))


def words_match(a: set[str] | frozenset[str], b: set[str] | frozenset[str]) -> float:
    """:func:`name_match` on already normalised word sets (for callers that compare one name many times)."""
    if not a or not b:
        return 0.0
    inter = len(a & b)
    # Containment of the shorter in the longer, damped when the title has many extra words.
    return inter / len(a) * min(1.0, (inter + 1) / len(b) + 0.5) if inter else 0.0


__all__ = ["Mention", "mentions", "name_match", "normalise", "words_match"]
