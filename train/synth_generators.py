"""Question writers for task synthesis: a deterministic template writer and an LLM writer.

A writer gets a *link* (a bridge chunk that mentions the target chunk's subject) and drafts a
question that can only be answered by reading both: the bridge identifies the subject, the
target holds the answer. Writers only draft; :mod:`sieve.train.synth` verifies every draft.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sieve.retriever.types import Chunk

logger = logging.getLogger(__name__)

BLANK = "___"


@dataclass(frozen=True)
class Link:
    """A bridge chunk whose text mentions the subject (title) of a target chunk.

    Attributes:
        bridge: the chunk that mentions the target's title (hop 1).
        target: a chunk of the mentioned document (hop 2; it should hold the answer).
        mention: the title as it occurs in the bridge's text.
        start: character offset of the mention in ``bridge.text``.
        end: end offset of the mention.
        via: how the link was found: ``"title"`` (title mention) or ``"bm25"`` (keyword neighbour).
    """

    bridge: Chunk
    target: Chunk
    mention: str
    start: int
    end: int
    via: str = "title"


@dataclass(frozen=True)
class Draft:
    """A question proposal: text, accepted answers and the template/kind that produced it."""

    question: str
    answers: tuple[str, ...]
    kind: str


class QuestionWriter(Protocol):
    name: str

    def write(self, link: Link) -> Draft | None: ...


# -- deterministic templates ------------------------------------------------------------------------

_SENT_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
# "X is/was a/an/the DESCRIPTION" up to the first clause boundary.
_DESCRIPTION = re.compile(
    r"\b(?:is|was|are|were)\s+(?:an?|the)\s+(?P<d>[^,;.()]{3,90}?)"
    r"(?=\s*(?:[,;.()]|\s(?:who|which|that|whose|best known|known|founded|located|based|from|in|of|by|with|for|"
    r"produced|directed|written|released|starring|developed|published|created|made|composed|designed|"
    r"and is|and was)\b))"
)


def bridge_snippet(link: Link, max_words: int = 32) -> str:
    """The bridge sentence that holds the mention, with the mention blanked out (``___``)."""
    text = link.bridge.text
    starts = [0] + [m.end() for m in _SENT_END.finditer(text)]
    s0 = max(s for s in starts if s <= link.start)
    following = [s for s in starts if s > link.start]
    s1 = following[0] if following else len(text)
    sentence = text[s0:link.start] + BLANK + text[link.end:s1]
    words = sentence.split()
    if len(words) > max_words:  # keep a window around the blank
        at = next((i for i, w in enumerate(words) if BLANK in w), 0)
        lo = max(0, min(at - max_words // 2, len(words) - max_words))
        words = words[lo:lo + max_words]
    return " ".join(words).strip()


def first_description(text: str) -> str | None:
    """The noun phrase after "is a / was an / is the" in the first sentence, if any.

    Example:
        >>> first_description("Stanley Kubrick was an American filmmaker and photographer. He ...")
        'American filmmaker and photographer'
    """
    first = _SENT_END.split(text, maxsplit=1)[0]
    m = _DESCRIPTION.search(first)
    if not m:
        return None
    words = m.group("d").split()
    while words and words[-1].lower().endswith("ly"):  # "a country primarily" -> "country"
        words.pop()
    return " ".join(words) if 2 <= len(words) <= 8 else None


class TemplateWriter:
    """Bridge questions from templates, no model needed (deterministic, runs anywhere).

    Two kinds: ``description`` (how the target's own article describes the blanked entity) and
    ``year`` (the first year the target's text mentions). The question quotes the bridge's
    sentence with the target's title blanked, so the bridge must be found to name the target,
    and the target must be read for the answer.
    """

    name = "heuristic"

    def write(self, link: Link) -> Draft | None:
        snippet = bridge_snippet(link)
        if BLANK not in snippet or len(snippet.split()) < 6:
            return None
        where = f'The article "{link.bridge.title}" says: "{snippet}"' if link.bridge.title else f'A text says: "{snippet}"'
        desc = first_description(link.target.text) if link.target.position == 0 else None
        if desc:
            return Draft(f"{where}. How does the article about the entity written as {BLANK} describe it in its "
                         f"first sentence?", (desc,), "description")
        years = _YEAR.findall(link.target.text)
        # The first year only: a later one would make "the first year" false.
        if years and years[0] not in link.bridge.text and years[0] not in snippet:
            return Draft(f"{where}. What is the first year mentioned in the article about the entity written as "
                         f"{BLANK}?", (years[0],), "year")
        return None


# -- LLM writer ------------------------------------------------------------------------------------

_SYSTEM = (
    "You write multi-hop questions for testing a search engine. You get two passages. Passage 1 mentions the "
    "subject of passage 2. Write ONE question whose answer is a short span copied exactly from passage 2, and "
    "which names the subject of passage 2 only indirectly, through what passage 1 says about it, so that both "
    "passages are needed. Never write the title of passage 2 in the question. Reply with JSON only: "
    '{"question": "...", "answer": "..."}'
)


def _parse_json_object(text: str) -> dict[str, Any] | None:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        obj = json.loads(text[start:end + 1])
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


class LLMWriter:
    """Questions written by any agent chat backend (OpenAI-compatible / vLLM / local transformers)."""

    def __init__(self, backend: Any, name: str = "llm", max_tokens: int = 200, temperature: float = 0.0) -> None:
        self.backend = backend
        self.name = name
        self.max_tokens = max_tokens
        self.temperature = temperature

    def write(self, link: Link) -> Draft | None:
        user = (f"Passage 1 (title: {link.bridge.title}):\n{link.bridge.text}\n\n"
                f"Passage 2 (title: {link.target.title}):\n{link.target.text}\n\n"
                f"Passage 1 mentions \"{link.mention}\", the subject of passage 2.")
        try:
            result = self.backend.chat([{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}],
                                       None, max_tokens=self.max_tokens, temperature=self.temperature)
        except Exception as exc:  # a backend failure skips this link; synthesis goes on  # noqa: BLE001
            logger.warning("Question writer failed on %s -> %s: %s", link.bridge.chunk_id, link.target.chunk_id, exc)
            return None
        obj = _parse_json_object(result.text or "")
        if not obj:
            return None
        q, a = obj.get("question"), obj.get("answer")
        if not isinstance(q, str) or not isinstance(a, (str, int, float)) or not q.strip() or not str(a).strip():
            return None
        return Draft(" ".join(q.split()), (str(a).strip(),), "llm")

    def can_answer(self, question: str, answers: tuple[str, ...], chunk: Chunk) -> bool:
        """Reader check: does the model answer ``question`` correctly from ``chunk`` alone?"""
        from sieve.train.rewards.metrics import contains_answer

        msg = (f"Passage (title: {chunk.title}):\n{chunk.text}\n\nQuestion: {question}\n"
               "Answer with a short span only, or 'unknown' if the passage is not enough.")
        try:
            result = self.backend.chat([{"role": "user", "content": msg}], None, max_tokens=32, temperature=0.0)
        except Exception:  # noqa: BLE001 - treat as "cannot tell": the check then does not reject
            return False
        return contains_answer(result.text or "", answers)


__all__ = ["BLANK", "Draft", "LLMWriter", "Link", "QuestionWriter", "TemplateWriter", "bridge_snippet",
           "first_description"]
