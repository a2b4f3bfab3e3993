"""Single-hop *claim* tasks from text that states findings (scientific abstracts, reports, notes).

The template writer of :mod:`sieve.train.synth` asks multi-hop questions about encyclopedic pages (a
subject's facts in a lead sentence, pages that mention other pages' titles); scientific abstracts have
neither, and it writes no task from them. This writer follows the shape of SciFact's claims instead:
a short declarative statement of one finding, whose evidence is the document that reports it.

1. **Pick**: in each document, the sentence that most reads like a finding (:func:`finding_score`:
   result verbs and comparatives, later in the text, of claim length, not a table of statistics).
2. **Write** (:func:`write_claim`): drop the framing ("Our results suggest that", "In conclusion,"),
   brackets, statistics and hedges, put it in the present tense, keep one clause of at most
   ``max_words`` words. Deterministic, no model.
3. **Verify** (:func:`verify_claim`): enough content words, each of them in the source document;
   no *other* document holds all of them (else the gold set would be ambiguous); a single hybrid
   search for the claim finds the source document within ``search_depth`` documents (else no
   policy could, and the task only adds noise).

One task per document, in seeded order; resumable like :func:`sieve.train.synth.synthesize`: ids
already in the output file are skipped and their documents are not used again.

Wording stays close to the source sentence, so these claims are easier for single-shot search than
hand-written ones: ``sieve train synth`` reports it, and the README gives the measured gap.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm.auto import tqdm

from sieve.core.defaults import DEFAULT_K
from sieve.eval.metrics import doc_id_of
from sieve.retriever.bm25 import tokenize

if TYPE_CHECKING:
    from sieve.retriever import CorpusIndex
    from sieve.retriever.types import Chunk

logger = logging.getLogger(__name__)

# A sentence ends at . ! ? followed by a space and a capital or digit; abbreviations like "e.g." and
# "vs." are kept whole because a lower-case word follows them.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")
_WORDS = re.compile(r"\S+")
# Words that say a sentence reports a result, not a method or a background fact.
_FINDING_CUES = frozenset(
    "associated association increase increased increases increasing decrease decreased decreases reduce reduced "
    "reduces reduction higher lower greater improved improves impaired inhibits inhibited inhibition induces "
    "induced promotes promoted required requires essential correlated correlates correlation predicts predicted "
    "risk effective prevents prevented enhances enhanced suppresses suppressed causes caused leads led results "
    "regulates regulated mediates mediated activates activated blocks blocked protects protected".split()
)
_FRAMING_CUES = (
    "we show",
    "we found",
    "we find",
    "we demonstrate",
    "we report",
    "results",
    "findings",
    "data",
    "conclusion",
    "suggest",
    "indicate",
    "demonstrate",
    "reveal",
    "taken together",
)
# A leading phrase that frames the finding rather than states it, in the order they are stripped.
_LEADS = (
    # a structured abstract's section heading run into the sentence ("RESULTS There are ...")
    re.compile(
        r"^(?:(?:AND|OF|RESULTS?|CONCLUSIONS?|FINDINGS|INTERPRETATION|SIGNIFICANCE|DISCUSSION|"
        r"OBJECTIVES?|PURPOSE|SUMMARY|MAIN|PRINCIPAL|OUTCOMES?|MEASURES?)\b[\s:.,]*)+"
    ),
    re.compile(
        r"^(?:in conclusion|conclusions?|taken together|together|overall|thus|therefore|collectively|hence|"
        r"first|second|third|conversely|similarly|accordingly|specifically|however|"
        r"finally|here|moreover|furthermore|additionally|in addition|in summary|importantly|notably|consequently|"
        r"in this study|in contrast|interpretation|significance)\s*[,:]?\s+",
        re.I,
    ),
    re.compile(
        r"^(?:these|our|the(?:se)? present|the|this)\s+(?:results?|findings?|data|observations?|studies|"
        r"study|work|analysis|analyses|experiments?)\s+(?:also\s+)?(?:strongly\s+)?(?:suggests?|indicates?|"
        r"shows?|showed|demonstrates?|demonstrated|reveals?|revealed|supports?|establish(?:es)?|"
        r"provides? evidence|imply|implies|confirms?|confirmed)\s+(?:that\s+)?",
        re.I,
    ),
    re.compile(
        r"^we\s+(?:also\s+)?(?:have\s+)?(?:show|showed|shown|find|found|demonstrate|demonstrated|report|reported|suggest|"
        r"observed?|conclude|concluded|propose|identified|identify|establish|established|reveal|"
        r"revealed|provide evidence)\s+that\s+",
        re.I,
    ),  # without "that" what follows is an object, not a claim
    re.compile(r"^(?:it\s+(?:is|was)\s+(?:shown|found|concluded|demonstrated)\s+that\s+)", re.I),
    # framing in mid-sentence: "Through a genome-wide screen ..., we found that X" keeps X
    re.compile(
        r"^.*?\b(?:we|our (?:results|data|findings)|these (?:results|data|findings)|the (?:results|data))\s+"
        r"(?:also\s+)?(?:have\s+)?(?:show|showed|shown|found|find|demonstrate[sd]?|suggest|indicate|reveal(?:ed)?|"
        r"conclude[d]?|propose)\s+that\s+",
        re.I,
    ),
)
# A claim must state something, not open a subordinate clause or trail off.
_OPENERS = frozenset(
    "in through by as although when while for with to after before despite because if since "
    "during using upon from among within whether".split()
)
_DANGLING = frozenset("and or of the a an for to with in by on at as that from than among between into within".split())
_BRACKETS = re.compile(r"\s*[(\[][^()\[\]]*[)\]]")
# Statistics written inline: p values, confidence intervals, ratios with numbers, percentages.
_STATS = re.compile(r"[,;]?\s*(?:\b[pP]\s*[<=>]|\b95\s*%|\bCI\b|\bOR\b|\bHR\b|\bRR\b)[^,;]*,?")
_HEDGES = re.compile(
    r"\b(?:significantly|markedly|substantially|strongly|dramatically|also|further|"
    r"statistically|respectively)\s+",
    re.I,
)
_TENSE = ((re.compile(r"\bwas\b"), "is"), (re.compile(r"\bwere\b"), "are"))
# A clause boundary the claim is cut at (the finding is what comes before it).
# Not ", which": a non-restrictive clause often sits between subject and verb, and a cut there leaves
# a subject with no predicate ("Conversely, the toxin GsMTx-4, which inhibits ..., had no effect").
_CLAUSE = re.compile(
    r"\s*(?:;|,\s+(?:whereas|while|but|although|and thus|thereby|suggesting|indicating|"
    r"as well as)\b|\s+whereas\b|\s+while\b)",
    re.I,
)
_CONTENT_MIN_CHARS = 3


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` (a regex split: good enough for picking one finding per document)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def content_words(text: str) -> list[str]:
    """BM25 tokens of ``text`` that carry meaning: no stop words, no short tokens, no bare numbers."""
    return [t for t in dict.fromkeys(tokenize(text)) if len(t) >= _CONTENT_MIN_CHARS and not t.isdigit()]


def finding_score(sentence: str, position: float) -> float:
    """How much ``sentence`` reads like a reported finding (higher is better; <= 0: not one).

    ``position`` is where it starts in its document (0 first, 1 last): abstracts put background
    first and results last.
    """
    words = [w.strip(".,;:()").lower() for w in _WORDS.findall(sentence)]
    if not 8 <= len(words) <= 60:
        return 0.0
    cues = sum(w in _FINDING_CUES for w in words)
    framing = any(c in sentence.lower() for c in _FRAMING_CUES)
    digits = sum(any(ch.isdigit() for ch in w) for w in words) / len(words)
    if cues == 0 and not framing:
        return 0.0
    return cues + 0.5 * framing + position - 3.0 * digits - 0.02 * max(0, len(words) - 25)


def write_claim(sentence: str, max_words: int = 20) -> str | None:
    """A short present-tense claim from a finding sentence, or ``None`` when none fits in ``max_words``.

    Example:
        >>> write_claim("In conclusion, our data suggest that vitamin D deficiency was significantly "
        ...             "associated with higher mortality (p < 0.01) in dialysis patients.")
        'Vitamin D deficiency is associated with higher mortality in dialysis patients.'
    """
    s = sentence.strip().rstrip(".!? ")
    s = _BRACKETS.sub("", s)
    for _ in range(2):  # "In conclusion, our data suggest that ..." needs two leads stripped
        for lead in _LEADS:
            s = lead.sub("", s, count=1)
    s = _STATS.sub("", s)
    s = _CLAUSE.split(s, maxsplit=1)[0]
    s = _HEDGES.sub("", s)
    for pattern, repl in _TENSE:
        s = pattern.sub(repl, s)
    s = re.sub(r"\s+", " ", s).strip(" ,;:")
    words = s.split()
    # Too long is refused, not cut: a cut at a comma mostly leaves a fragment ("the association of X with Y, Lp").
    if not 5 <= len(words) <= max_words or not s[0].isalnum():
        return None
    if words[0].lower() in _OPENERS or words[-1].lower() in _DANGLING or s.count("(") != s.count(")"):
        return None
    # Keep an acronym's case ("ALDH1 ..."); capitalise a lower-case first word.
    return s[0].upper() + s[1:] + "."


class ClaimWriter:
    """The claim writer: picks each document's finding and writes it as a claim (no model)."""

    name = "claims"

    def __init__(self, max_words: int = 20) -> None:
        self.max_words = max_words

    def best_sentence(self, chunks: list[Chunk]) -> tuple[str, Chunk] | None:
        """The document's most finding-like sentence with the chunk it is in (chunks in reading order)."""
        located = [(s, c) for c in chunks for s in sentences(c.text)]
        scored = [(finding_score(s, i / max(1, len(located) - 1)), i, s, c) for i, (s, c) in enumerate(located)]
        scored = [x for x in scored if x[0] > 0]
        if not scored:
            return None
        _, _, s, c = max(scored, key=lambda x: (x[0], -x[1]))
        return s, c

    def draft(self, chunks: list[Chunk]) -> tuple[str, str, Chunk] | None:
        """(claim, source sentence, its chunk) for a document, or ``None``."""
        picked = self.best_sentence(chunks)
        if picked is None:
            return None
        claim = write_claim(picked[0], self.max_words)
        return (claim, picked[0], picked[1]) if claim else None


def verify_claim(
    claim: str, doc_id: str, doc_text: str, index: CorpusIndex, *, search_depth: int = 50, min_content_words: int = 3
) -> tuple[str | None, dict[str, Any]]:
    """Check a claim against its source document; returns (rejection reason or None, facts for ``meta``)."""
    words = content_words(claim)
    if len(words) < min_content_words:
        return "too_few_content_words", {}
    source = set(tokenize(doc_text))
    if any(w not in source for w in words):
        return "unsupported", {}
    # Chunk-level co-occurrence is enough: a chunk is part of a document, so any chunk of another document
    # holding every word makes the claim's evidence ambiguous.
    others = {doc_id_of(cid) for cid in index.bm25_index().ids_with_all(words)} - {doc_id}
    if others:
        return "ambiguous", {}
    hits = index.search_documents(claim, search_depth, mode="hybrid")
    ranks = {h.doc_id: i + 1 for i, h in enumerate(hits)}
    if doc_id not in ranks:
        return "not_findable", {}
    distractors = [h.chunk_id for h in hits[:10] if h.doc_id != doc_id]
    return None, {"single_shot_rank": ranks[doc_id], "distractor_ids": distractors}


def claim_task_id(doc_id: str, sentence: str, prefix: str) -> str:
    digest = hashlib.sha1(f"{doc_id}|{sentence}|claims".encode()).hexdigest()
    return f"{prefix}-{digest[:12]}"


def claim_task(
    claim: str, sentence: str, chunk: Chunk, facts: dict[str, Any], seed: int, prefix: str
) -> dict[str, Any]:
    """One task row in the ``shared/eval/*/tasks.jsonl`` shape (SciFact's: the claim is the question)."""
    return {
        "id": claim_task_id(chunk.doc_id, sentence, prefix),
        "question": claim,
        # No answer string: the task is to find the evidence. SciFact puts its verdict ("SUPPORT") in
        # ``answers``, but the reward's answer term matches answer strings against returned text, and
        # "support" is a common word in abstracts; the evidence chunk is named in meta instead.
        "answers": [],
        "gold_ids": [chunk.doc_id],
        "meta": {
            "gold_chunk_ids": [chunk.chunk_id],
            "answer_chunk_ids": [chunk.chunk_id],
            "distractor_ids": facts.get("distractor_ids", []),
            "hops": 1,
            "generator": "claims",
            "kind": "claim",
            "verdict": "SUPPORT",  # a claim written from its source sentence is supported by it
            "link": "claim",
            "source_sentence": sentence,
            "seed": seed,
            "single_shot_rank": facts.get("single_shot_rank"),
            "source": "sieve train synth",
        },
    }


@dataclass
class ClaimsRun:
    """What one :func:`synthesize_claims` call did (``sieve.train.synth`` folds it into its report)."""

    tasks: list[dict[str, Any]] = field(default_factory=list)  # the tasks appended, in order
    documents_tried: int = 0
    drafts: int = 0
    rejected: Counter = field(default_factory=Counter)


def synthesize_claims(
    index: CorpusIndex,
    out: Path,
    need: int,
    existing: dict[str, dict[str, Any]],
    *,
    seed: int = 0,
    id_prefix: str = "synth",
    search_depth: int = 50,
    writer: ClaimWriter | None = None,
    progress: bool = True,
) -> ClaimsRun:
    """Append up to ``need`` verified claim tasks to ``out``, one per document not already used in
    ``existing`` (the file's tasks by id), documents in ``seed``-shuffled order."""
    from sieve.core.errors import EmptyCorpus

    writer = writer or ClaimWriter()
    run = ClaimsRun()
    docs = index.documents()
    if not docs:
        raise EmptyCorpus(f"Expected an indexed collection, got {index.name!r} with no chunks")
    used = {g for t in existing.values() for g in t.get("gold_ids") or []}
    order = sorted(docs)
    random.Random(seed).shuffle(order)
    bar = tqdm(total=need, desc="Writing claims", unit="task", disable=not progress)
    with out.open("a", encoding="utf-8") as f:
        for doc_id in order:
            if len(run.tasks) >= need:
                break
            if doc_id in used:
                continue
            run.documents_tried += 1
            chunks = sorted(index.read_document(doc_id), key=lambda c: c.position)
            drafted = writer.draft(chunks)
            if drafted is None:
                run.rejected["no_finding"] += 1
                continue
            claim, sentence, chunk = drafted
            if claim_task_id(doc_id, sentence, id_prefix) in existing:
                continue
            run.drafts += 1
            reason, facts = verify_claim(
                claim, doc_id, " ".join(c.text for c in chunks), index, search_depth=search_depth
            )
            if reason is not None:
                run.rejected[reason] += 1
                continue
            task = claim_task(claim, sentence, chunk, facts, seed, id_prefix)
            f.write(json.dumps(task, ensure_ascii=False) + "\n")
            f.flush()  # a killed run keeps every task written so far
            used.add(doc_id)
            run.tasks.append(task)
            bar.update(1)
    bar.close()
    return run


def single_shot_recall(tasks: list[dict[str, Any]], k: int = DEFAULT_K) -> float:
    """Share of claim tasks whose source document single-shot hybrid search ranked within ``k``
    (from ``meta.single_shot_rank``, recorded at verification): how easy the tasks are for plain RAG."""
    # Only claim tasks: other writers record one rank per gold chunk (a dict), and a run that filled
    # up hard tasks with claims passes both kinds here.
    metas = [t.get("meta") or {} for t in tasks]
    ranks = [m.get("single_shot_rank") for m in metas if m.get("generator") == "claims"]
    return float(np.mean([r is not None and r <= k for r in ranks])) if ranks else 0.0


__all__ = [
    "ClaimWriter",
    "ClaimsRun",
    "claim_task",
    "content_words",
    "finding_score",
    "sentences",
    "single_shot_recall",
    "synthesize_claims",
    "verify_claim",
    "write_claim",
]
