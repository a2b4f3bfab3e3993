"""Weak (query, passage) pairs mined from a corpus's own structure, to adapt the embedder to its words.

A corpus already holds pairs written by people: a heading and the section under it, a page title
and the page's opening, a link's sentence and the section it points to, a conversation turn and
the turn after it, a question one speaker asks and the other speaker's answer, and (in any text) a
sentence and the passage around it (the inverse cloze task). Each miner in :data:`MINERS` turns
one of those into :class:`WeakPair` records; no language model writes anything. The passage side is the chunk's own text without its heading lines, so a
pair never teaches "find the line that repeats the query".

Filters (:func:`filter_pairs`) drop what teaches nothing: a query copied into its passage (anchor
text that repeats the target's words) and a pair BM25 alone ranks first by a wide margin. Hard
negatives (:func:`add_hard_negatives`) are the chunks the current retriever ranks highest for the
query, outside the positive's own section and its neighbours.

Example:
    >>> from sieve.retriever.types import Chunk
    >>> text = "## Cache\\n\\nEntries expire after one day unless a lock file pins them for the whole team."
    >>> c = Chunk("g.md#1", "g.md", 1, text,
    ...           title="Guide", heading_path="Cache")
    >>> [(p.kind, p.query) for p in mine_headings([c])]
    [('heading', 'Guide Cache')]
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from sieve.retriever.ingest import id_safe
from sieve.retriever.sections import find_headings
from sieve.retriever.turns import is_turn_context, speaker

if TYPE_CHECKING:
    from sieve.retriever.index import CorpusIndex
    from sieve.retriever.types import Chunk

_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}[ \t]+\S|^[=\-~^\"'`*+#:._<>]{3,}[ \t]*$")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(])")
_MD_LINK = re.compile(r"\[([^\]]{2,120})\]\(([^)\s]+)\)")
_RST_REF = re.compile(r":(?:ref|doc):`([^`<]{2,120})<([^`>]+)>`")
# A wiki's link (Obsidian, Foam, Logseq, MediaWiki): [[Page]], [[Page#Heading]], [[Page|the text shown]].
_WIKI_LINK = re.compile(r"\[\[([^\]|#\n]{1,120})(?:#([^\]|\n]{1,120}))?(?:\|([^\]\n]{1,120}))?\]\]")
_WORD = re.compile(r"\w+")
_NATURAL = re.compile(r"(\d+)")
MIN_PASSAGE_WORDS = 12
MIN_QUERY_WORDS = 2


@dataclass(frozen=True)
class WeakPair:
    """One mined pair: the query side, the chunk that answers it and its text; optionally a hard negative."""

    kind: str
    query: str
    positive_id: str
    positive: str
    negative: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def body(chunk: Chunk) -> str:
    """A chunk's text without its heading lines (an rst title's text line goes with its underline)."""
    lines = chunk.text.splitlines()
    keep = []
    for i, line in enumerate(lines):
        under = i + 1 < len(lines) and _HEADING_LINE.match(lines[i + 1]) and not lines[i + 1].lstrip().startswith("#")
        if _HEADING_LINE.match(line) or (under and line.strip()):
            continue
        keep.append(line)
    return "\n".join(keep).strip()


def _words(text: str) -> int:
    return len(_WORD.findall(text))


def _by_doc(chunks: Sequence[Chunk]) -> dict[str, list[Chunk]]:
    docs: dict[str, list[Chunk]] = {}
    for c in chunks:
        docs.setdefault(c.doc_id, []).append(c)
    for cs in docs.values():
        cs.sort(key=lambda c: c.position)
    return docs


def mine_headings(chunks: Sequence[Chunk]) -> list[WeakPair]:
    """Heading -> its section: the first chunk of each section, asked as ``title + its last two headings``."""
    out, seen = [], set()
    for c in chunks:
        key = (c.doc_id, c.heading_path)
        if not c.heading_path or key in seen:
            continue
        if is_turn_context(c):
            continue  # the turn before a conversation turn, no heading: that pair is the `turn` kind's
        text = body(c)
        if _words(text) < MIN_PASSAGE_WORDS:
            continue
        seen.add(key)
        query = " ".join(x for x in (c.title, " ".join(c.heading_path.split(" > ")[-2:])) if x)
        out.append(WeakPair("heading", query, c.chunk_id, text))
    return out


def mine_titles(chunks: Sequence[Chunk]) -> list[WeakPair]:
    """Page title -> the page's opening (its first chunk of text before any section)."""
    out = []
    for doc_id, cs in _by_doc(chunks).items():
        title = cs[0].title.strip()
        if len(cs) < 2 or not title or title == doc_id:
            continue  # a one-chunk page is all opening: the title would point at the whole page
        lead = next((c for c in cs if not c.heading_path and _words(body(c)) >= MIN_PASSAGE_WORDS), None)
        if lead is not None:
            out.append(WeakPair("title", title, lead.chunk_id, body(lead)))
    return out


def _slug(text: str) -> str:
    """A heading's anchor as Markdown renderers and Sphinx make it: lower case, words joined by '-'."""
    return "-".join(_WORD.findall(text.lower().replace("_", " ")))


def _section_index(chunks: Sequence[Chunk]) -> dict[tuple[str, str], Chunk]:
    """(page stem, heading slug) -> the first chunk of that section; (page stem, '') -> the page's first chunk."""
    index: dict[tuple[str, str], Chunk] = {}
    for doc_id, cs in _by_doc(chunks).items():
        stem = _page_stem(doc_id)
        index.setdefault((stem, ""), cs[0])
        for c in cs:
            if c.heading_path:
                index.setdefault((stem, _slug(c.heading_path.split(" > ")[-1])), c)
        for h in find_headings("\n".join(c.text for c in cs)):  # headings a path leaves out (the page title)
            index.setdefault((stem, _slug(h.title)), cs[0])
        for c in cs:  # a heading's own anchor ("## Cache directory {#cache-dir}": Hugo, Pandoc, rst labels)
            for h in find_headings(c.text):
                if h.anchor:
                    index.setdefault((stem, _slug(h.anchor)), c)
    return index


def _page_stem(ref: str) -> str:
    name = ref.rstrip("/").rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name else name


def _wiki_as_markdown(m: re.Match[str]) -> str:
    """``[[Page#Heading|text]]`` as the Markdown link ``[text](Page#Heading)``, the page named as
    ingestion names its file in a document id (:func:`~sieve.retriever.ingest.id_safe`: ``My Page.md``
    is ``My-Page.md``), so one resolver reads both.

    Example:
        >>> _WIKI_LINK.sub(_wiki_as_markdown, "see [[Cache Directory#Moving it|the cache]] or [[FAQ]]")
        'see [the cache](Cache-Directory#Moving-it) or [FAQ](FAQ)'
    """
    page, heading, shown = (g.strip() if g else "" for g in m.groups())
    target = id_safe(page) + ("#" + "-".join(heading.split()) if heading else "")
    return f"[{shown or (page + (' ' + heading if heading else ''))}]({target})"


def mine_links(chunks: Sequence[Chunk]) -> list[WeakPair]:
    """A link's sentence -> the section it points to (Markdown ``[text](page.md#anchor)``, rst
    ``:ref:``/``:doc:``, a wiki's ``[[Page#Heading|text]]``).

    The query is the whole sentence the link sits in, with the link's markup reduced to its text: how
    another page refers to the target, in that page's words."""
    sections = _section_index(chunks)
    folded: dict[tuple[str, str], Chunk] = {}  # a wiki's [[cache directory]] names "Cache Directory.md"
    for (stem, anchor), chunk in sections.items():
        folded.setdefault((stem.casefold(), anchor), chunk)
    out, seen = [], set()
    for c in chunks:
        text = _WIKI_LINK.sub(_wiki_as_markdown, body(c))
        for m in [*_MD_LINK.finditer(text), *_RST_REF.finditer(text)]:
            target = m.group(2).strip()
            if "://" in target or target.startswith("mailto:"):
                continue
            page, _, anchor = target.partition("#")
            stem = _page_stem(page) if page else _page_stem(c.doc_id)
            dest = sections.get((stem, _slug(anchor))) or (sections.get((stem, _slug(page))) if not anchor else None)
            if dest is None and page:
                dest = folded.get((stem.casefold(), _slug(anchor)))
            if dest is None and m.re is _RST_REF:
                dest = next((v for (s, a), v in sections.items() if a == _slug(_page_stem(target))), None)
            elif dest is None and not page:  # an rst :ref: read as [Title](#label): labels name sections site-wide
                dest = next((v for (s, a), v in sections.items() if a == _slug(anchor)), None)
            if dest is None or dest.chunk_id == c.chunk_id:
                continue
            sentence = next((s for s in _SENTENCE_SPLIT.split(text) if m.group(0) in s), m.group(1))
            query = " ".join(_MD_LINK.sub(r"\1", _RST_REF.sub(r"\1", sentence)).split())[:400]
            positive = body(dest)
            if (query, dest.chunk_id) in seen or _words(positive) < MIN_PASSAGE_WORDS:
                continue
            seen.add((query, dest.chunk_id))
            out.append(WeakPair("link", query, dest.chunk_id, positive))
    return out


def mine_sentences(chunks: Sequence[Chunk], seed: int = 0) -> list[WeakPair]:
    """A sentence -> the rest of its passage (the inverse cloze task): one prose sentence per chunk."""
    rng = random.Random(seed)
    out = []
    for c in chunks:
        text = body(c)
        sentences = [
            s.strip()
            for s in _SENTENCE_SPLIT.split(text)
            if 6 <= _words(s) <= 40 and not s.strip().startswith(("```", "{{", "|", "-", "*", ">", ".."))
        ]
        if len(sentences) < 2:
            continue
        pick = rng.choice(sentences)
        rest = text.replace(pick, " ").strip()
        if _words(rest) >= MIN_PASSAGE_WORDS:
            out.append(WeakPair("sentence", pick, c.chunk_id, rest))
    return out


def _natural(doc_id: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in _NATURAL.split(doc_id)]


def mine_turns(chunks: Sequence[Chunk]) -> list[WeakPair]:
    """A conversation turn -> the turn that follows it, where documents are turns: one-chunk documents
    that share their title (a session) with the next document in natural id order."""
    docs = _by_doc(chunks)
    singles = sorted((d for d, cs in docs.items() if len(cs) == 1), key=_natural)
    out = []
    for a, b in zip(singles, singles[1:]):
        ca, cb = docs[a][0], docs[b][0]
        if ca.title and ca.title == cb.title and _words(ca.text) >= 3 and _words(cb.text) >= 3:
            out.append(WeakPair("turn", ca.text, cb.chunk_id, cb.text))
    return out


_ASIDE = re.compile(r"\[[^\]]*\]")  # "[shared a photo of ...]": a caption, not what was said
_SECOND = re.compile(r"\b(you|your|yours|yourself)\b", re.IGNORECASE)
_FIRST = re.compile(r"\b(I|me|my|mine|myself)\b")
MIN_QUESTION_WORDS = 4


def _third_person(question: str, asker: str, addressee: str) -> str:
    """A question one speaker put to the other, asked about them by name ("How is your dog?" ->
    "How is Anna's dog?"): how a reader asks about a conversation, not how its speakers talk."""
    question = _SECOND.sub(lambda m: addressee + ("'s" if m.group(1).lower().startswith("your") else ""), question)
    return _FIRST.sub(lambda m: asker + ("'s" if m.group(1) in ("my", "mine") else ""), question)


def mine_questions(chunks: Sequence[Chunk]) -> list[WeakPair]:
    """A question one speaker asks -> the next turn, where the other speaker answers it.

    Documents are turns as for :func:`mine_turns`; the query is the question sentences of the asking
    turn (at least :data:`MIN_QUESTION_WORDS` words), captions removed and put in the third person with
    the speakers' names ("What did you name the dog?" -> "What did Anna name the dog?"), since readers'
    questions ask for the one turn that states a fact, about a speaker by name."""
    docs = _by_doc(chunks)
    singles = sorted((d for d, cs in docs.items() if len(cs) == 1), key=_natural)
    out = []
    for a, b in zip(singles, singles[1:]):
        ca, cb = docs[a][0], docs[b][0]
        (asker, said), (answerer, _) = speaker(ca.text), speaker(cb.text)
        if not ca.title or ca.title != cb.title or not asker or not answerer or asker == answerer:
            continue
        asked = [s.strip() for s in _SENTENCE_SPLIT.split(_ASIDE.sub(" ", said)) if s.strip().endswith("?")]
        query = " ".join(" ".join(asked).split())
        if _words(query) >= MIN_QUESTION_WORDS:
            out.append(WeakPair("question", _third_person(query, asker, answerer), cb.chunk_id, cb.text))
    return out


MINERS: dict[str, Callable[[Sequence[Chunk]], list[WeakPair]]] = {
    "heading": mine_headings,
    "title": mine_titles,
    "link": mine_links,
    "sentence": mine_sentences,
    "turn": mine_turns,
    "question": mine_questions,
}
"""Every kind of pair, by name: the registry ``sieve train embedder --pairs`` chooses from."""

OPT_IN: frozenset[str] = frozenset({"turn"})
"""Kinds mined only when named: on a conversation set (locomo-dev, tuning half) turn -> next-turn pairs
made the adapted embedder worse (neighbouring turns share a topic, not the fact a question asks for);
docs/experiments/embedder-adaptation.md has the figures."""


def default_kinds() -> tuple[str, ...]:
    """The kinds mined when none are named: every registered kind but the :data:`OPT_IN` ones."""
    return tuple(k for k in MINERS if k not in OPT_IN)


def register_miner(name: str, miner: Callable[[Sequence[Chunk]], list[WeakPair]]) -> None:
    """Add a kind of pair (``miner(chunks) -> pairs``); it is mined by default from then on."""
    if not name.isidentifier() or name in MINERS:
        raise ValueError(f"Expected a new identifier for a pair miner, got {name!r}")
    MINERS[name] = miner


def mine_pairs(chunks: Sequence[Chunk], kinds: Sequence[str] | None = None) -> list[WeakPair]:
    """Every pair of the named kinds (:func:`default_kinds` by default), in registry order."""
    names = list(default_kinds()) if kinds is None else list(kinds)
    unknown = [k for k in names if k not in MINERS]
    if unknown:
        raise ValueError(f"Expected pair kinds among {', '.join(MINERS)}, got {', '.join(unknown)}")
    return [p for k in names for p in MINERS[k](chunks)]


@dataclass(frozen=True)
class FilterReport:
    kept: int
    too_short: int
    copied: int
    bm25_trivial: int


def _normal(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def filter_pairs(
    pairs: Sequence[WeakPair], index: CorpusIndex | None = None, *, trivial_margin: float = 2.0
) -> tuple[list[WeakPair], FilterReport]:
    """Drop pairs that teach nothing: a short query or passage; a query found word for word in its
    passage (anchor text that copies its target); and, with ``index``, a pair whose positive BM25
    alone ranks first with a score at least ``trivial_margin`` times the runner-up's."""
    kept, short, copied, trivial = [], 0, 0, 0
    for p in pairs:
        if _words(p.query) < MIN_QUERY_WORDS or _words(p.positive) < MIN_PASSAGE_WORDS:
            short += 1
            continue
        if _normal(p.query) in _normal(p.positive):
            copied += 1
            continue
        if index is not None:
            top = index.scored_ids(p.query, 2, mode="bm25")
            if top and top[0][0] == p.positive_id and (len(top) < 2 or top[0][1] >= trivial_margin * top[1][1]):
                trivial += 1
                continue
        kept.append(p)
    return kept, FilterReport(len(kept), short, copied, trivial)


def add_hard_negatives(
    pairs: Sequence[WeakPair], index: CorpusIndex, chunks: Sequence[Chunk], *, depth: int = 10, seed: int = 0
) -> list[WeakPair]:
    """Each pair with one hard negative: a chunk drawn from the retriever's top ``depth`` for the query
    (hybrid), never the positive, its section, or its neighbours in the document (they may hold the
    answer too). Pairs with no such chunk keep in-batch negatives only."""
    rng = random.Random(seed)
    by_id = {c.chunk_id: c for c in chunks}
    out = []
    for p in pairs:
        pos = by_id.get(p.positive_id)
        cands = []
        for cid, _ in index.scored_ids(p.query, depth, mode="hybrid"):
            c = by_id.get(cid)
            if (
                c is None
                or pos is None
                or c.doc_id == pos.doc_id
                and (abs(c.position - pos.position) <= 1 or (c.heading_path and c.heading_path == pos.heading_path))
            ):
                continue
            if _words(body(c)) >= MIN_PASSAGE_WORDS:
                cands.append(c)
        neg = body(rng.choice(cands[:3])) if cands else ""
        out.append(WeakPair(p.kind, p.query, p.positive_id, p.positive, neg))
    return out


__all__ = [
    "MINERS",
    "OPT_IN",
    "FilterReport",
    "WeakPair",
    "add_hard_negatives",
    "body",
    "default_kinds",
    "filter_pairs",
    "mine_headings",
    "mine_links",
    "mine_pairs",
    "mine_questions",
    "mine_sentences",
    "mine_titles",
    "mine_turns",
    "register_miner",
]
