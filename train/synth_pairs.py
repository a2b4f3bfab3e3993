"""Comparison tasks for synthesis: which chunks to pair, and how to verify a comparison draft.

Two shapes, both as in 2WikiMultihopQA / HotpotQA:

- *comparison* (``Link.via == "compare"``): two lead chunks of one kind, compared on a fact each
  states ("Who was born first, A or B?"). Gold: both chunks.
- *bridge comparison* (``"bridge_compare"``): two bridge links with the same cue (film -> its
  director), compared on a fact of the linked subjects ("Which film has the director who was born
  first, A1 or A2?"). Gold: A1, B1, A2, B2; the question names A1 and A2 only.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, Protocol

from sieve.core.defaults import DEFAULT_K
from sieve.train.rewards.metrics import contains_answer
from sieve.train.synth_facts import clean_title, find_role
from sieve.train.synth_generators import COMPARABLE, BRIDGE_COMPARE_ROLES, Draft, Link, TemplateWriter

if TYPE_CHECKING:
    from sieve.retriever import CorpusIndex
    from sieve.retriever.types import Chunk


class CorpusLike(Protocol):
    """What pairing reads of :class:`sieve.train.synth.CorpusView` (a protocol: synth imports this module)."""

    lead: dict[str, Chunk]
    by_id: dict[str, Chunk]

    def title_mentions(self, chunk: Chunk) -> list[tuple[str, int, int, str]]: ...


def gold_chunks(link: Link) -> list[Chunk]:
    """The gold chunks of a link's task, in ``gold_ids`` order."""
    if link.via == "bridge_compare" and link.partner is not None:
        return [link.bridge, link.target, link.partner.bridge, link.partner.target]
    return [link.bridge, link.target]


def compared_chunks(link: Link) -> tuple[Chunk, Chunk]:
    """The two chunks whose values a comparison draft's ``evidence`` holds (they hold the answer)."""
    if link.via == "bridge_compare" and link.partner is not None:
        return link.target, link.partner.target
    return link.bridge, link.target


def _names(chunks: list[Chunk]) -> list[str]:
    titles = [c.title or "" for c in chunks]
    return [t for t in dict.fromkeys([*titles, *(clean_title(t) for t in titles)]) if len(t) >= 3]


def _named(question: str, chunk: Chunk) -> bool:
    return any(contains_answer(question, [t]) for t in {chunk.title, clean_title(chunk.title or "")} if t)


def verify_comparison(
    draft: Draft, link: Link, index: CorpusIndex, verify_k: int = DEFAULT_K, n_distractors: int = 10
) -> tuple[str | None, dict[str, Any]]:
    """Each compared chunk states its own value and not the other's; the question names what it compares
    (a bridge comparison: the bridges, never the linked subjects) and states neither value."""
    if len(draft.evidence) != 2 or (link.via == "bridge_compare" and link.partner is None):
        return "bad_evidence", {}
    (cx, cy), (ex, ey) = compared_chunks(link), draft.evidence
    if not contains_answer(cx.text, [ex]) or not contains_answer(cy.text, [ey]):
        return "unsupported", {}
    if ex != ey and (contains_answer(cy.text, [ex]) or contains_answer(cx.text, [ey])):
        return "value_in_both", {}  # one chunk would settle the comparison alone
    if contains_answer(draft.question, draft.evidence):
        return "answer_in_question", {}
    gold = gold_chunks(link)
    if link.via == "bridge_compare" and (_named(draft.question, cx) or _named(draft.question, cy)):
        return "target_named", {}
    hits = index.search(draft.question, k=verify_k, mode="hybrid")
    ranks = {h.chunk_id: h.rank for h in hits}
    # A bridge_compare link always has its partner.
    names = _names([link.bridge, link.target] if link.via == "compare" else [link.bridge, link.partner.bridge])  # type: ignore[union-attr]
    gold_ids = {c.chunk_id for c in gold}
    distractors = [h.chunk_id for h in hits if h.chunk_id not in gold_ids and not contains_answer(h.chunk.text, names)]
    return None, {
        "single_shot_rank": {c.chunk_id: ranks.get(c.chunk_id) for c in gold},
        "distractor_ids": list(dict.fromkeys(distractors))[:n_distractors],
    }


def _comparison_bucket(writer: TemplateWriter, lead: Chunk) -> str | None:
    """Which lead chunks can be compared with this one: people with people, films with films..."""
    s = writer.subject(lead)
    if s is None:
        return None
    if s.person:
        return "person" if any(s.fact(k) for k in COMPARABLE) else None
    for kind in ("year", "founded"):
        f = s.fact(kind)
        if f and s.type_noun:
            return f"{kind}:{s.type_noun}:{f.verb}"
    return None


class ComparisonPairs:
    """Partners for comparisons: lead chunks of the same bucket (BM25 neighbours first), and bridge links
    of the same cue from lead chunks of the same kind (for bridge comparisons)."""

    def __init__(
        self, view: CorpusLike, writer: TemplateWriter, index: CorpusIndex | None, seed: int = 0, per_chunk: int = 3
    ) -> None:
        self.view, self.index, self.seed, self.per_chunk = view, index, seed, per_chunk
        self.bucket: dict[str, str] = {}
        self.members: dict[str, list[str]] = {}
        self.role_links: dict[str, list[Link]] = {}  # lead chunk id -> its links with a comparable cue
        self.by_role: dict[tuple[str, str], list[Link]] = {}
        for doc_id, lead in sorted(view.lead.items()):
            key = _comparison_bucket(writer, lead)
            if key:
                self.bucket[doc_id] = key
                self.members.setdefault(key, []).append(doc_id)
            self._add_role_links(lead, writer)

    def _add_role_links(self, lead: Chunk, writer: TemplateWriter) -> None:
        a = writer.subject(lead)
        if a is None or not a.type_noun:
            return
        for doc, s, e, mention in self.view.title_mentions(lead):
            role = find_role(lead.text, s, e, a)
            if role is None or role.kind not in BRIDGE_COMPARE_ROLES or not role.noun.startswith("the "):
                continue
            link = Link(lead, self.view.lead[doc], mention, s, e, "title")
            self.role_links.setdefault(lead.chunk_id, []).append(link)
            self.by_role.setdefault((a.type_noun, role.kind), []).append(link)
            return  # one cue link per chunk: its main credit ("directed by")

    def partners(self, a: Chunk) -> list[Chunk]:
        key = self.bucket.get(a.doc_id) if a.position == 0 else None
        if key is None or len(self.members[key]) < 2:
            return []
        near: list[str] = []
        if self.index is not None:  # related pairs ("two films by one director") read like real questions
            query = f"{a.title}\n{a.text}"[:600]
            for cid, _ in self.index.bm25.scored_ids(query, 30, exclude={a.chunk_id}):
                c = self.view.by_id.get(cid)
                if c is not None and c.position == 0 and self.bucket.get(c.doc_id) == key and c.doc_id != a.doc_id:
                    near.append(c.doc_id)
        rng = random.Random(f"{self.seed}|{a.chunk_id}|partner")
        others = [d for d in self.members[key] if d != a.doc_id]
        picked = near[:2] + rng.sample(others, min(self.per_chunk, len(others)))
        return [self.view.lead[d] for d in list(dict.fromkeys(picked))[: self.per_chunk]]

    def bridge_partners(self, a: Chunk, writer: TemplateWriter) -> list[Link]:
        """Bridge-comparison links from ``a``: its cue link, paired with other bridges' links of the same cue."""
        out: list[Link] = []
        subject = writer.subject(a)
        for link in self.role_links.get(a.chunk_id, []):
            role = find_role(a.text, link.start, link.end, subject)
            if subject is None or role is None:
                continue
            same = [
                o
                for o in self.by_role.get((subject.type_noun or "", role.kind), [])
                if o.bridge.doc_id != a.doc_id
                and o.target.doc_id != link.target.doc_id
                and o.target.doc_id != a.doc_id
                and o.bridge.doc_id != link.target.doc_id
            ]
            rng = random.Random(f"{self.seed}|{a.chunk_id}|bridge-partner")
            for other in rng.sample(same, min(self.per_chunk, len(same))):
                out.append(Link(a, link.target, link.mention, link.start, link.end, "bridge_compare", partner=other))
        return out


__all__ = ["ComparisonPairs", "CorpusLike", "compared_chunks", "gold_chunks", "verify_comparison"]
