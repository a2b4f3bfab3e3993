"""Question writers for task synthesis: a deterministic template writer and an LLM writer.

A writer gets a *link* (a bridge chunk that mentions the target chunk's subject) and drafts
questions that can only be answered by reading both: the bridge identifies the subject, the
target holds the answer. The template writer also drafts *comparisons* of two lead chunks.
Writers only draft; :mod:`sieve.train.synth` verifies every draft.
"""

from __future__ import annotations

import json
import logging
import random
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from sieve.train.synth_facts import Fact, Subject, clean_title, find_role, read_subject

if TYPE_CHECKING:
    from sieve.retriever.types import Chunk

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Link:
    """A bridge chunk whose text mentions the subject (title) of a target chunk.

    Attributes:
        bridge: the chunk that mentions the target's title (hop 1).
        target: a chunk of the mentioned document (hop 2; it should hold the answer).
        mention: the title as it occurs in the bridge's text.
        start: character offset of the mention in ``bridge.text``.
        end: end offset of the mention.
        via: how the link was found: ``"title"`` (title mention), ``"bm25"`` (keyword neighbour) or
            ``"compare"`` (a comparison pair: no mention).
        siblings: lead chunks of the other documents the bridge mentions (a phrase such as "the
            actor associated with X" must not fit one of them too).
        partner: a bridge comparison's second link (same cue from another bridge).
    """

    bridge: Chunk
    target: Chunk
    mention: str
    start: int
    end: int
    via: str = "title"
    siblings: tuple[Chunk, ...] = ()
    partner: Link | None = None


@dataclass(frozen=True)
class Draft:
    """A question proposal: text, accepted answers and the template/kind that produced it.

    ``evidence`` (comparisons): the value each of the two passages must state, in gold order.
    """

    question: str
    answers: tuple[str, ...]
    kind: str
    evidence: tuple[str, ...] = ()


@runtime_checkable  # synthesize() tells a question writer from a writer of no known route
class QuestionWriter(Protocol):
    name: str

    def drafts(self, link: Link) -> list[Draft]: ...


# -- deterministic templates ------------------------------------------------------------------------

# Question shapes per fact of the answer's subject; {ref} is how the question points at that subject.
_BRIDGE_TEMPLATES: dict[str, tuple[str, ...]] = {
    "born": ("When was {ref} born?", "What is the date of birth of {ref}?", "In what year was {ref} born?"),
    "died": ("When did {ref} die?", "What is the date of death of {ref}?", "In which year did {ref} die?"),
    "birthplace": ("Where was {ref} born?", "What is the place of birth of {ref}?"),
    "deathplace": ("Where did {ref} die?", "What is the place of death of {ref}?"),
    "nationality": ("What nationality is {ref}?", "What is the nationality of {ref}?"),
    "occupation": ("What is the occupation of {ref}?", "What does {ref} do for a living?"),
    "year": ("When was {ref} {verb}?", "In what year was {ref} {verb}?"),
    "founded": ("When was {ref} {verb}?", "In which year was {ref} {verb}?"),
    "location": ("Where is {ref} located?", "In which place is {ref} {verb}?"),
    "capital": ("What is the capital of {ref}?",),
}
_WHO = "Who {verb} {ref}?"
_GENERIC = ("the {btype} associated with {a}", "the {btype} connected to {a}", "the {btype} linked to {a}")
_COMPARE_TEMPLATES: dict[str, tuple[str, ...]] = {
    "born": ("Who was born first, {x} or {y}?", "Which of {x} and {y} was born earlier?", "Who is older, {x} or {y}?"),
    "died": ("Who died first, {x} or {y}?", "Which of {x} and {y} died earlier?"),
    "year": (
        "Which {type} was {verb} first, {x} or {y}?",
        "Which of {x} and {y} was {verb} earlier?",
        "Which came out first, {x} or {y}?",
    ),
    "founded": (
        "Which was {verb} first, {x} or {y}?",
        "Which of {x} and {y} was {verb} earlier?",
        "Which {type} is older, {x} or {y}?",
    ),
    "nationality": (
        "Are {x} and {y} of the same nationality?",
        "Do {x} and {y} have the same nationality?",
        "Were {x} and {y} from the same country?",
    ),
}
COMPARABLE = ("born", "died", "year", "founded", "nationality")
# Cues whose subject is a person, so two of them compare on born / died / nationality.
BRIDGE_COMPARE_ROLES = (
    "directed",
    "written",
    "composed",
    "produced",
    "founded",
    "created",
    "designed",
    "painted",
    "author",
    "playwright",
    "artist",
    "composer",
    "father",
    "mother",
    "spouse",
)
_BRIDGE_COMPARE_TEMPLATES: dict[str, tuple[str, ...]] = {
    "born": (
        "Which {type} has the {role} who was born first, {x} or {y}?",
        "Which {type} has the older {role}, {x} or {y}?",
    ),
    "died": (
        "Which {type} has the {role} who died first, {x} or {y}?",
        "Which {type}'s {role} died earlier, {x} or {y}?",
    ),
    "nationality": (
        "Are the {role}s of {x} and {y} from the same country?",
        "Do the {role}s of {x} and {y} have the same nationality?",
    ),
}


def _article(phrase: str) -> str:
    """Fix "a {btype}" when the noun starts with a vowel sound."""
    return re.sub(r"\ba (?=[aeiouAEIOU])", "an ", phrase)


def _verdicts(
    sx: Subject, sy: Subject, kinds: tuple[str, ...], rng: random.Random, names: tuple[str, str] | None = None
) -> list[tuple[str, Fact, Fact, str, list[str]]]:
    """For each kind both subjects state, comparably: (kind, x's fact, y's fact, the answer, the two names in
    question order). The answer is "yes" / "no" (same nationality) or the name of the earlier one;
    ``names`` default to the subjects' own (a bridge comparison names the bridges instead)."""
    nx, ny = names or (sx.name, sy.name)
    kinds_here = [k for k in kinds if sx.fact(k) and sy.fact(k)]
    rng.shuffle(kinds_here)
    out = []
    for kind in kinds_here:
        fx, fy = sx.fact(kind), sy.fact(kind)
        if fx is None or fy is None:
            continue
        if kind == "nationality":
            verdict = "yes" if fx.answers[0] == fy.answers[0] else "no"
        elif fx.year is None or fy.year is None or fx.year == fy.year:
            continue
        else:
            verdict = nx if fx.year < fy.year else ny
        order = [nx, ny]
        if rng.random() < 0.5:  # the answer is not always the first name
            order.reverse()
        out.append((kind, fx, fy, verdict, order))
    return out


class TemplateWriter:
    """2Wiki / HotpotQA-shaped questions from patterns, no model (deterministic, runs anywhere).

    *Bridge* drafts ask for a fact of the target's subject B, pointing at B only through the bridge's
    subject A and the cue that relates them: "When was the director of the film Lone Wolf McQuade born?",
    "What is the nationality of the filmmaker who directed the film X?"; with no cue, through B's kind
    ("the album associated with X"). *Comparison* drafts put the same fact of two subjects side by side:
    "Who was born first, X or Y?". Questions name subjects and use at most a few words of either passage
    (:func:`sieve.train.synth_facts.quoted_content_words` counts them; verification enforces the limit).
    """

    name = "heuristic"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self._subjects: dict[str, Subject] = {}

    def subject(self, chunk: Chunk) -> Subject | None:
        """What a document's lead chunk says about its subject (``None`` for later chunks)."""
        if chunk.position != 0:
            return None
        if chunk.chunk_id not in self._subjects:
            self._subjects[chunk.chunk_id] = read_subject(chunk.title or "", chunk.text)
        return self._subjects[chunk.chunk_id]

    def _type_of(self, chunk: Chunk) -> str | None:
        s = self.subject(chunk)
        return None if s is None else s.type_noun or ("person" if s.person else None)

    def _rng(self, *parts: str) -> random.Random:
        return random.Random("|".join([str(self.seed), *parts]))

    def drafts(self, link: Link) -> list[Draft]:
        """Bridge drafts for ``link``, most specific first (a cue-based phrase before the generic one)."""
        a = self.subject(link.bridge)
        b = self.subject(link.target)
        a_label = a.label if a else clean_title(link.bridge.title or "")
        if b is None or not b.facts or not a_label:
            return []
        rng = self._rng(link.bridge.chunk_id, link.target.chunk_id)
        btype = b.type_noun or ("person" if b.person else None)
        role = find_role(link.bridge.text, link.start, link.end, a)
        refs: list[tuple[str, str]] = []  # (phrase, how it was found)
        if role is not None:
            forms = [f for f in (role.noun, role.clause) if f and (btype or "{btype}" not in f)]
            rng.shuffle(forms)
            refs += [(_article(f.format(a=a_label, btype=btype)), role.kind) for f in forms]
        elif btype and not any(self._type_of(c) == btype for c in link.siblings):
            # Only when B is the one thing of its kind that A mentions: the phrase then singles it out.
            refs.append((_article(rng.choice(_GENERIC).format(a=a_label, btype=btype)), "generic"))
        out: list[Draft] = []
        facts = list(b.facts)
        rng.shuffle(facts)
        for phrase, how in refs:
            for fact in facts:
                if fact.kind == "occupation" and btype and btype in phrase.split():
                    continue  # "the director who ..." would give away "film director"
                q = self._bridge_question(fact, phrase, rng)
                if q:
                    answers = (fact.answers[-1],) if "year" in q.split() and fact.year else fact.answers
                    out.append(Draft(q, answers, f"bridge:{fact.kind}:{how}"))
        return out

    @staticmethod
    def _bridge_question(fact: Fact, ref: str, rng: random.Random) -> str | None:
        if fact.kind in _BRIDGE_TEMPLATES:
            template = rng.choice(_BRIDGE_TEMPLATES[fact.kind])
        elif fact.verb:  # directed, written, ... -> "Who directed the film that ...?"
            template = _WHO
        else:
            return None
        return template.format(ref=ref, verb=fact.verb or "located")

    def compare(self, x: Chunk, y: Chunk) -> list[Draft]:
        """Comparison drafts over two lead chunks (``evidence`` holds each one's value, in order)."""
        sx, sy = self.subject(x), self.subject(y)
        if sx is None or sy is None or sx.person != sy.person or sx.name == sy.name:
            return []
        rng = self._rng(x.chunk_id, y.chunk_id, "compare")
        out: list[Draft] = []
        for kind, fx, fy, verdict, names in _verdicts(sx, sy, COMPARABLE, rng):
            if kind in ("year", "founded") and (sx.type_noun != sy.type_noun or fx.verb != fy.verb):
                continue  # "which was released first" only between two films, two albums, ...
            template = rng.choice(_COMPARE_TEMPLATES[kind])
            q = template.format(x=names[0], y=names[1], verb=fx.verb, type=sx.type_noun or "one")
            out.append(Draft(q, (verdict,), f"comparison:{kind}", evidence=(fx.answers[-1], fy.answers[-1])))
        return out

    def compare_bridges(self, link: Link) -> list[Draft]:
        """Bridge-comparison drafts: ``link`` (A1 -> B1) and ``link.partner`` (A2 -> B2) share a cue;
        the question names A1 and A2 and compares B1 with B2 (``evidence``: B1's value, B2's)."""
        other = link.partner
        if other is None:
            return []
        a1, a2 = self.subject(link.bridge), self.subject(other.bridge)
        b1, b2 = self.subject(link.target), self.subject(other.target)
        if a1 is None or a2 is None or b1 is None or b2 is None:
            return []
        if not (b1.person and b2.person) or a1.type_noun != a2.type_noun or a1.name == a2.name:
            return []
        role = find_role(link.bridge.text, link.start, link.end, a1)
        m = re.fullmatch(r"the ([\w-]+) of \{a\}", role.noun) if role else None
        if m is None:
            return []
        rng = self._rng(link.bridge.chunk_id, other.bridge.chunk_id, "bridge-compare")
        out: list[Draft] = []
        for kind, f1, f2, verdict, names in _verdicts(
            b1, b2, tuple(_BRIDGE_COMPARE_TEMPLATES), rng, (a1.name, a2.name)
        ):
            q = rng.choice(_BRIDGE_COMPARE_TEMPLATES[kind]).format(
                type=a1.type_noun, role=m.group(1), x=names[0], y=names[1]
            )
            out.append(Draft(q, (verdict,), f"bridge_comparison:{kind}", evidence=(f1.answers[-1], f2.answers[-1])))
        return out

    def write(self, link: Link) -> Draft | None:
        """The first bridge draft (the :class:`QuestionWriter` protocol's single-draft form)."""
        drafts = self.drafts(link)
        return drafts[0] if drafts else None


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
        obj = json.loads(text[start : end + 1])
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
        user = (
            f"Passage 1 (title: {link.bridge.title}):\n{link.bridge.text}\n\n"
            f"Passage 2 (title: {link.target.title}):\n{link.target.text}\n\n"
            f'Passage 1 mentions "{link.mention}", the subject of passage 2.'
        )
        try:
            result = self.backend.chat(
                [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}],
                None,
                max_tokens=self.max_tokens,
                temperature=self.temperature,
            )
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

    def drafts(self, link: Link) -> list[Draft]:
        draft = self.write(link)
        return [draft] if draft else []

    def can_answer(self, question: str, answers: tuple[str, ...], chunk: Chunk) -> bool:
        """Reader check: does the model answer ``question`` correctly from ``chunk`` alone?"""
        from sieve.train.rewards.metrics import contains_answer

        msg = (
            f"Passage (title: {chunk.title}):\n{chunk.text}\n\nQuestion: {question}\n"
            "Answer with a short span only, or 'unknown' if the passage is not enough."
        )
        try:
            result = self.backend.chat([{"role": "user", "content": msg}], None, max_tokens=32, temperature=0.0)
        except Exception:  # noqa: BLE001 - treat as "cannot tell": the check then does not reject
            return False
        return contains_answer(result.text or "", answers)


__all__ = ["BRIDGE_COMPARE_ROLES", "COMPARABLE", "Draft", "LLMWriter", "Link", "QuestionWriter", "TemplateWriter"]
