"""Hard tasks from any text: keyphrase questions with chunk gold and, in long documents, span gold.

The template writer (:mod:`sieve.train.synth`) needs encyclopedic pages and the claims writer needs
sentences that report findings; documentation, filings and chat logs have neither, and the tasks
both write start far easier for plain RAG than users' questions do. This writer needs only
text, and picks what makes a question hard for a single search:

- **Phrases, not sentences.** A question names two *keyphrases* of its gold text: runs of one to
  three content words whose words are neither everywhere nor unique in this corpus (BM25 document
  share within ``[min_df, max_share]``). Nothing longer is copied, so no question repeats a run
  of more than ``max_quoted_words`` content words of its gold text.
- **Three kinds.** ``single``: both phrases from one chunk, which must not be the lexical top hit
  of the question. ``span``: a long document's two consecutive chunks, one phrase from each and
  each phrase in only that chunk of the document, so the evidence spans both (``gold_spans`` holds
  their character ranges). ``bridge``: two chunks of different documents linked by a phrase only
  they share, one further phrase from each (a two-hop chain the corpus itself makes).
- **Context.** A question names the source when one chunk cannot: the document's title when the
  document has several chunks ("the Amcor 2022 8K"), the speaker of a chat turn ("Caroline: ...").

Every draft is verified: the phrase combination holds only in the gold chunks (no ambiguity), each
gold chunk is findable (a hybrid search for the question, or for the context and one phrase,
ranks it within ``find_depth``), and a ``single`` gold chunk is not BM25's top hit for the whole
question. Rows follow ``shared/eval/*/tasks.jsonl`` with ``meta.gold_chunk_ids``; runs are seeded
and resumable like the other writers.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from sieve.core.errors import InvalidInput
from sieve.retriever.bm25 import passage_terms, tokenize
from sieve.retriever.turns import is_turn_context
from sieve.retriever.turns import speaker as turn_speaker
from sieve.train.task_io import all_chunks, read_task_ids
from sieve.train.synth_facts import STOPWORDS, clean_title, quoted_content_words

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sieve.retriever import CorpusIndex
    from sieve.retriever.bm25 import SparseBM25
    from sieve.retriever.bm25_segments import SegmentedBM25
    from sieve.retriever.types import Chunk

logger = logging.getLogger(__name__)

KINDS = ("single", "span", "bridge")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'’\-]*[A-Za-z0-9]|[A-Za-z]")
_CONTRACTION = re.compile(r"['’]")
# Words that carry no topic in questions about any text (beyond the writers' shared stop words).
_WEAK = STOPWORDS | frozenset(
    "i me my we our you your us just very really also can could would should will shall may might must "
    "get got gets go going gone went come came make made take took know think said says say like well yes "
    "oh ok okay hey hi thanks thank lot lots thing things something anything way much many more most some "
    "any all each every other such only own same own too here now then still even back new good great yet always "
    "never often sometimes maybe perhaps really quite rather almost already again ever soon later today tomorrow "
    "yesterday year years time times day days week weeks month months part parts include includes including "
    "based following used use uses using within without upon whether through across along around because "
    "since unless until while although though however therefore instead rather either neither single whole "
    "several various certain default usually simply simpler first second third last next once twice another "
    "others there where able unable need needs needed want wants wanted sure true false".split()
)
# A one-word keyphrase should name a thing: adverbs and most participles do not ("quickly", "considering").
_NOT_A_NAME = re.compile(r"(?:ly|ing|ed)$")
# In a small corpus a word may sit in this many chunks and still be a keyphrase's (5% of 40 chunks is 2).
_SMALL_CORPUS_WORD_DF = 4


@dataclass
class HardConfig:
    n: int = field(default=300, metadata={"help": "Verified tasks wanted in the output file."})
    seed: int = field(default=0, metadata={"help": "Seed of the chunk order (same seed, same tasks)."})
    kinds: tuple[str, ...] = field(default=KINDS, metadata={"help": "Task kinds to write, tried in turn."})
    min_df: int = field(
        default=2,
        metadata={
            "help": "A keyphrase's words must occur together in at least this many chunks (a unique phrase is a lexical give-away)."
        },
    )
    max_share: float = field(
        default=0.02, metadata={"help": "... and in at most this share of the chunks (else the phrase says nothing)."}
    )
    max_word_share: float = field(
        default=0.05,
        metadata={"help": "Each word of a keyphrase occurs in at most this share of the chunks (no common words)."},
    )
    max_phrase_words: int = field(default=3, metadata={"help": "Longest keyphrase, in words."})
    max_quoted_words: int = field(
        default=4, metadata={"help": "Reject a question that copies more content words of a gold chunk in a row."}
    )
    find_depth: int = field(
        default=50,
        metadata={
            "help": "Each gold chunk must rank within this depth of a hybrid search for the question or for one phrase."
        },
    )
    min_doc_chunks: int = field(default=3, metadata={"help": "span tasks: documents with at least this many chunks."})
    id_prefix: str = field(default="hard", metadata={"help": "Prefix of task ids."})

    def __post_init__(self) -> None:
        if self.n < 1:
            raise InvalidInput(f"Expected n >= 1, got {self.n}")
        bad = [k for k in self.kinds if k not in KINDS]
        if bad or not self.kinds:
            raise InvalidInput(f"Expected kinds among {KINDS}, got {self.kinds!r}")
        if self.min_df < 1 or not 0 < self.max_share <= 1 or self.max_phrase_words < 1 or self.find_depth < 1:
            raise InvalidInput(
                f"Expected min_df >= 1, 0 < max_share <= 1, max_phrase_words >= 1, find_depth >= 1, got "
                f"{self.min_df}, {self.max_share}, {self.max_phrase_words}, {self.find_depth}"
            )


@dataclass(frozen=True)
class HardWriter:
    """The hard writer as :func:`sieve.train.synth.make_writer` hands it out (``--generator hard``)."""

    name: str = "hard"
    base: HardConfig = field(default_factory=lambda: HardConfig(n=1))

    def config(self, n: int, seed: int) -> HardConfig:
        return replace(self.base, n=n, seed=seed)


@dataclass(frozen=True)
class Phrase:
    """A keyphrase as written in its chunk, its BM25 tokens and how many chunks hold them all."""

    text: str
    tokens: tuple[str, ...]
    df: int


@dataclass
class HardRun:
    tasks: list[dict[str, Any]] = field(default_factory=list)
    tried: int = 0
    rejected: Counter = field(default_factory=Counter)
    by_kind: Counter = field(default_factory=Counter)
    seconds: float = 0.0


@dataclass
class OwnWords:
    """BM25 as the writer reads it where a conversation's turns are indexed with the turn before them:
    a turn holds the words of its title and text, not those of the turn before (searched with it), so a
    phrase of one turn is still that turn's alone. Everything else is the index's own BM25."""

    bm25: SparseBM25 | SegmentedBM25
    own: dict[str, frozenset[str]]  # turn chunk id -> the tokens of its title and text

    def __len__(self) -> int:
        return len(self.bm25)

    def doc_share(self, term: str) -> float:
        return self.bm25.doc_share(term)

    def top_k(self, query_tokens: Sequence[str], k: int) -> list[tuple[str, float]]:
        return self.bm25.top_k(query_tokens, k)

    def ids_with_all(self, tokens: Sequence[str]) -> list[str]:
        return [i for i in self.bm25.ids_with_all(tokens) if i not in self.own or self.own[i].issuperset(tokens)]


def own_words(bm25: SparseBM25 | SegmentedBM25, chunks: Sequence[Chunk]) -> SparseBM25 | SegmentedBM25 | OwnWords:
    """``bm25`` itself, or :class:`OwnWords` over it when some chunks are turns indexed with their context."""
    own = {c.chunk_id: frozenset(passage_terms(c.title, c.text)) for c in chunks if is_turn_context(c)}
    return OwnWords(bm25, own) if own else bm25


def keyphrases(
    text: str, bm25: SparseBM25 | SegmentedBM25 | OwnWords, cfg: HardConfig, common: frozenset[str] = frozenset()
) -> list[Phrase]:
    """Candidate keyphrases of ``text``: runs of content words, longest run first at each start,
    kept when their words occur together in ``[min_df, max_share * N]`` chunks; most specific first.
    A one-word phrase must name a thing: no adverb or participle, and a ``common`` word (or an
    inflection of one, :func:`is_common`) only where a determiner or preposition stands right before
    it ("the battery", not "it takes")."""
    words = [(m.group(0), m.start()) for m in _WORD.finditer(text)]
    # Floors for small corpora, where a share of the chunks is less than a handful of them.
    cap = max(cfg.min_df + 1, int(cfg.max_share * len(bm25)))
    word_cap = max(_SMALL_CORPUS_WORD_DF, cfg.max_word_share * len(bm25))
    content = [_content(w, bm25, word_cap) for w, _ in words]
    seen: set[tuple[str, ...]] = set()
    out: list[Phrase] = []
    i = 0
    while i < len(words):
        if not content[i]:
            i += 1
            continue
        j = i
        while (
            j < len(words)
            and j - i < cfg.max_phrase_words
            and content[j]
            and (j == i or _adjacent(text, words[j - 1], words[j]))
        ):
            j += 1
        for end in range(j, i, -1):  # the longest run that passes, else shorter ones
            toks = tuple(dict.fromkeys(tokenize(" ".join(w for w, _ in words[i:end]))))
            if not toks or toks in seen:
                continue
            if end - i == 1 and (
                len(words[i][0]) < 5
                or _NOT_A_NAME.search(words[i][0].lower())
                or (is_common(words[i][0], common) and not _after_determiner(text, words, i))
            ):
                continue
            df = len(bm25.ids_with_all(toks))
            if cfg.min_df <= df <= cap:
                seen.add(toks)
                out.append(Phrase(text[words[i][1] : words[end - 1][1] + len(words[end - 1][0])], toks, df))
                break
        i = j if j > i else i + 1
    return sorted(out, key=lambda p: (p.df, -len(p.tokens), p.text))


def is_common(word: str, common: frozenset[str]) -> bool:
    """Whether ``word`` or the stem it inflects is in ``common`` (an embedder's :meth:`whole_words`).

    Why: a corpus-rare word is not yet a name. In a small folder "takes", "wrote" and "choose" are as
    rare as "pyenv", and "What do opt-in and takes have in common?" is no question a person asks.

    Example:
        >>> common = frozenset({"take", "parse", "install", "token"})
        >>> [w for w in ["takes", "parses", "installable", "Tokens", "pyenv", "FreeBSD"] if is_common(w, common)]
        ['takes', 'parses', 'installable', 'Tokens']
    """
    low = word.lower()
    return any(low.endswith(end) and low[: len(low) - len(end)] in common for end in _INFLECTIONS)


def _after_determiner(text: str, words: list[tuple[str, int]], i: int) -> bool:
    """Whether ``words[i]`` follows a determiner or preposition directly: then it is used as a noun."""
    return i > 0 and words[i - 1][0].lower() in _DETERMINERS and _adjacent(text, words[i - 1], words[i])


_DETERMINERS = frozenset(
    "the a an this that these those its their your our my his her each every any some no of for in on with by "
    "from about per into at".split()
)
# Endings stripped to find the word a one-word phrase inflects ("" first: the word itself).
# (-ed, -ing and -ly words are never one-word phrases: _NOT_A_NAME.)
_INFLECTIONS = ("", "s", "es", "d", "able")


def _content(word: str, bm25: SparseBM25 | SegmentedBM25 | OwnWords, max_df: float) -> bool:
    """A word a keyphrase may hold: not a stop or filler word, no contraction, in at most ``max_df`` chunks."""
    low = word.lower()
    return (
        len(word) >= 3
        and low not in _WEAK
        and not _CONTRACTION.search(word)
        and not low.isdigit()
        and bm25.doc_share(low) * len(bm25) <= max_df
    )


def _adjacent(text: str, a: tuple[str, int], b: tuple[str, int]) -> bool:
    """Two words are one phrase only when nothing but spaces or a hyphen separates them (no comma, no stop)."""
    gap = text[a[1] + len(a[0]) : b[1]]
    return gap.strip(" -") == "" and "\n" not in gap


def context_of(chunk: Chunk) -> tuple[str, bool]:
    """How a question names the source of ``chunk``, and whether that is a person: a chat turn's speaker,
    else its document's title (users name the filing, the page or the product they ask about), else
    nothing (also for a title of filler words only, e.g. a heading "Same as:")."""
    name = turn_speaker(chunk.text)[0]
    if name:
        return name, True
    title = clean_title(chunk.title).strip(" :;,.-") if chunk.title else ""
    if not any(w.lower() not in _WEAK for w in _WORD.findall(title)):
        return "", False
    return title, False


def question_for(kind: str, context: str, phrases: list[str], long_doc: bool = False, speaker: bool = False) -> str:
    """The question text; the wording depends only on the kind, the number of phrases and the context."""
    about = " and ".join(phrases) if kind != "span" else ", and about ".join(phrases)
    if kind == "bridge":  # the link is the answer: finding it takes both chunks
        return f"What do {phrases[0]} and {phrases[1]} have in common?"
    if context and speaker:
        return f"What did {context} say about {about}?"
    if context and (kind == "span" or long_doc):
        return f"In {context}, what is said about {about}?"
    if context:
        return f"What is said about {about} in connection with {context}?"
    return f"What is said about {about}?"


class _Writer:
    """One pass over the corpus's chunks; each ``try_*`` returns a task row or None (and counts why)."""

    def __init__(self, index: CorpusIndex, chunks: list[Chunk], cfg: HardConfig, run: HardRun) -> None:
        self.index, self.cfg, self.run = index, cfg, run
        self.bm25 = own_words(index.bm25_index(), chunks)
        self.common = index.embedder.whole_words()
        self.by_id = {c.chunk_id: c for c in chunks}
        self.by_doc: dict[str, list[Chunk]] = {}
        for c in chunks:
            self.by_doc.setdefault(c.doc_id, []).append(c)
        for cs in self.by_doc.values():
            cs.sort(key=lambda c: c.position)
        self._phrases: dict[str, list[Phrase]] = {}

    def phrases(self, chunk: Chunk) -> list[Phrase]:
        if chunk.chunk_id not in self._phrases:
            self._phrases[chunk.chunk_id] = keyphrases(chunk.text, self.bm25, self.cfg, self.common)
        return self._phrases[chunk.chunk_id]

    def _reject(self, why: str) -> dict[str, Any] | None:
        """Count why a draft was rejected; returns None (no task), for ``return self._reject(...)``."""
        self.run.rejected[why] += 1
        return None

    def _ranks(self, query: str) -> dict[str, int]:
        return {h.chunk_id: h.rank for h in self.index.search(query, k=self.cfg.find_depth, mode="hybrid")}

    def _findable(
        self, question: str, context: str, gold: list[Chunk], phrases: list[Phrase]
    ) -> dict[str, int | None] | None:
        """Single-shot ranks of the gold chunks for the question, or None when some gold chunk is out of reach
        of both the question and every one-phrase search (no policy could be trained to find it)."""
        ranks = self._ranks(question)
        for c in gold:
            if c.chunk_id in ranks:
                continue
            if not any(c.chunk_id in self._ranks(f"{context} {p.text}".strip()) for p in phrases):
                return None
        return {c.chunk_id: ranks.get(c.chunk_id) for c in gold}

    def _copies(self, question: str, gold: list[Chunk]) -> bool:
        return quoted_content_words(question, [c.text for c in gold]) > self.cfg.max_quoted_words

    def try_single(self, chunk: Chunk) -> dict[str, Any] | None:
        ps = self.phrases(chunk)
        context, speaker = context_of(chunk)
        long_doc = len(self.by_doc[chunk.doc_id]) > 1
        ctx = tuple(tokenize(context))
        # With a context (speaker, title) one phrase must pin the chunk down; without, two together.
        options: list[tuple[Phrase, ...]] = [(p,) for p in ps] if ctx else list(_pairs(ps))
        chosen = next(
            (
                o
                for o in options
                if self.bm25.ids_with_all(tuple(dict.fromkeys(t for p in o for t in (*p.tokens, *ctx))))
                == [chunk.chunk_id]
            ),
            None,
        )
        if chosen is None:
            return self._reject("single: no phrase that only this chunk holds")
        texts = [p.text for p in chosen]
        question = question_for("single", context, texts, long_doc, speaker)
        if self._copies(question, [chunk]):
            return self._reject("single: copies gold text")
        top = self.bm25.top_k(tokenize(question), 1)
        if top and top[0][0] == chunk.chunk_id:
            return self._reject("single: lexical top hit")
        ranks = self._findable(question, context, [chunk], list(chosen))
        if ranks is None:
            return self._reject("single: unfindable")
        return self._task("single", question, [chunk], ranks, texts, context)

    def try_span(self, chunk: Chunk) -> dict[str, Any] | None:
        doc = self.by_doc[chunk.doc_id]
        if len(doc) < self.cfg.min_doc_chunks or chunk.position + 1 >= len(doc):
            return self._reject("span: document too short")
        nxt = doc[chunk.position + 1] if doc[chunk.position + 1].position == chunk.position + 1 else None
        if nxt is None:
            return self._reject("span: document too short")
        in_doc = {c.chunk_id for c in doc}

        def only_here(p: Phrase, c: Chunk) -> bool:  # the phrase's words meet in no other chunk of the document
            return [i for i in self.bm25.ids_with_all(p.tokens) if i in in_doc] == [c.chunk_id]

        a = next((p for p in self.phrases(chunk) if only_here(p, chunk)), None)
        b = (
            next((p for p in self.phrases(nxt) if only_here(p, nxt) and not set(p.tokens) <= set(a.tokens)), None)
            if a
            else None
        )
        if a is None or b is None:
            return self._reject("span: no phrase of its own in each chunk")
        context, speaker = context_of(chunk)
        if not context or speaker:
            return self._reject("span: untitled document")
        question = question_for("span", context, [a.text, b.text])
        gold = [chunk, nxt]
        if self._copies(question, gold):
            return self._reject("span: copies gold text")
        ranks = self._findable(question, context, gold, [a, b])
        if ranks is None:
            return self._reject("span: unfindable")
        return self._task("span", question, gold, ranks, [a.text, b.text], context)

    def try_bridge(self, chunk: Chunk) -> dict[str, Any] | None:
        link = next((p for p in self.phrases(chunk) if p.df == 2), None)
        if link is None:
            return self._reject("bridge: no phrase shared with exactly one other chunk")
        other_id = next(i for i in self.bm25.ids_with_all(link.tokens) if i != chunk.chunk_id)
        other = self.by_id.get(other_id)
        if other is None or other.doc_id == chunk.doc_id:
            return self._reject("bridge: link within one document")
        a = next(
            (
                p
                for p in self.phrases(chunk)
                if not set(p.tokens) & set(link.tokens) and other_id not in self.bm25.ids_with_all(p.tokens)
            ),
            None,
        )
        b = next(
            (
                p
                for p in self.phrases(other)
                if not set(p.tokens) & set(link.tokens) and chunk.chunk_id not in self.bm25.ids_with_all(p.tokens)
            ),
            None,
        )
        if a is None or b is None:
            return self._reject("bridge: no phrase of its own in each chunk")
        question = question_for("bridge", "", [a.text, b.text])
        gold = [chunk, other]
        if self._copies(question, gold):
            return self._reject("bridge: copies gold text")
        ranks = self._findable(question, "", gold, [a, b])
        if ranks is None:
            return self._reject("bridge: unfindable")
        return self._task("bridge", question, gold, ranks, [a.text, b.text], "", answers=[link.text])

    def _task(
        self,
        kind: str,
        question: str,
        gold: list[Chunk],
        ranks: dict[str, int | None],
        phrases: list[str],
        context: str,
        answers: list[str] | None = None,
    ) -> dict[str, Any]:
        key = "|".join([kind, *(c.chunk_id for c in gold)])
        digest = hashlib.sha256(f"{key}|{question}".encode()).hexdigest()[:12]
        row: dict[str, Any] = {
            "id": f"{self.cfg.id_prefix}-{kind}-{digest}",
            "question": question,
            "answers": answers or [],
            "gold_ids": list(dict.fromkeys(c.doc_id for c in gold)),
            "meta": {
                "gold_chunk_ids": [c.chunk_id for c in gold],
                "hops": len(gold),
                "generator": "hard",
                "kind": kind,
                "phrases": phrases,
                "context": context,
                "seed": self.cfg.seed,
                # a bridge's answer is the phrase only its two chunks share (the link between them)
                "single_shot_rank": ranks,
                "source": "sieve train synth",
            },
        }
        if kind == "span":  # the evidence inside a long document: each gold chunk's characters
            row["gold_spans"] = [{"doc_id": c.doc_id, "start": c.char_start, "end": c.char_end} for c in gold]
        return row


def _pairs(ps: list[Phrase]) -> list[tuple[Phrase, Phrase]]:
    """Pairs of phrases with no word in common, most specific first (bounded: the first 8 phrases)."""
    head = ps[:8]
    return [(a, b) for i, a in enumerate(head) for b in head[i + 1 :] if not set(a.tokens) & set(b.tokens)]


def synthesize_hard(index: CorpusIndex, out: str | Path, cfg: HardConfig, *, progress: bool = True) -> HardRun:
    """Append up to ``cfg.n`` verified hard tasks to ``out`` (ids already there count and are skipped).

    Kinds are tried in turn on a seeded order of chunks, one task per gold chunk, so a corpus of long
    documents gets span tasks as often as single ones and a corpus of short passages mostly single and
    bridge ones.
    """
    t0 = time.perf_counter()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    existing = read_task_ids(out)
    run = HardRun()
    need = cfg.n - len(existing)
    if need <= 0:
        return run
    chunks = all_chunks(index)
    writer = _Writer(index, chunks, cfg, run)
    order = list(chunks)
    random.Random(cfg.seed).shuffle(order)
    used: set[str] = set()
    kinds = list(cfg.kinds)
    turn = 0
    bar = tqdm(total=need, desc="Writing hard tasks", unit="task", disable=not progress)
    with out.open("a", encoding="utf-8") as f:
        for chunk in order:
            if len(run.tasks) >= need:
                break
            if chunk.chunk_id in used:
                continue
            run.tried += 1
            # Each chunk is offered to the kinds starting from the one whose turn it is, so kinds alternate
            # where the corpus allows them all and fall back to what it allows.
            for kind in kinds[turn % len(kinds) :] + kinds[: turn % len(kinds)]:
                task = getattr(writer, f"try_{kind}")(chunk)
                if task is None or task["id"] in existing or set(task["meta"]["gold_chunk_ids"]) & used:
                    continue
                f.write(json.dumps(task, ensure_ascii=False) + "\n")
                f.flush()  # a killed run keeps every task written so far
                used.update(task["meta"]["gold_chunk_ids"])
                run.tasks.append(task)
                run.by_kind[kind] += 1
                turn += 1
                bar.update(1)
                break
    bar.close()
    run.seconds = time.perf_counter() - t0
    if len(run.tasks) < need:
        logger.warning(
            "Wrote %d of %d hard tasks: the corpus ran out of verifiable chunks (rejected: %s)",
            len(run.tasks),
            need,
            dict(run.rejected),
        )
    return run


__all__ = [
    "HardConfig",
    "HardRun",
    "HardWriter",
    "KINDS",
    "Phrase",
    "context_of",
    "is_common",
    "keyphrases",
    "question_for",
    "synthesize_hard",
]
