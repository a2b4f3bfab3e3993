"""Multi-hop task synthesis from an indexed corpus: link → write → verify → distractors → JSONL.

1. **Link**: a *bridge* chunk whose text mentions another document's title (exact, case-sensitive
   n-gram match) gives a *target*: that document's lead chunk. For LLM writers, a BM25 neighbour
   sharing a named entity (``index.bm25.scored_ids``) is a fallback link. For the template writer,
   a share of lead chunks is instead *paired* with a lead chunk of the same kind (two people, two
   films...) that BM25 finds near it, for a comparison question.
2. **Write**: a question writer (:mod:`sieve.train.synth_generators`) drafts questions that need
   both chunks: the bridge to identify the target, the target for the answer (comparisons: each
   chunk for its side).
3. **Verify** (every draft, whatever wrote it; the first draft that passes is kept): the answer is
   supported (occurs in the target's text); each gold chunk is necessary (the answer is in neither
   the bridge nor the question, and the question does not name the target; comparisons: each
   chunk states its own value and not the other's); the question quotes no more than
   ``max_quoted_words`` content words of either chunk in a row (names and numbers aside); no
   retrieval shortcut (a single hybrid search with the question must not put the target at the top
   without also finding the bridge); optionally a reader model must fail to answer from the bridge
   alone.
4. **Distractors**: chunks that search returns for the question or the target's title but that
   neither are gold nor hold the answer (``meta.distractor_ids``).

Output rows follow ``shared/eval/*/tasks.jsonl``. Runs are deterministic given ``seed`` and
resumable: ids already in the output file are skipped and count towards ``n``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from sieve.core.errors import InvalidInput
from sieve.train.rewards.metrics import contains_answer, normalize_answer
from sieve.train.synth_facts import clean_title, quoted_content_words
from sieve.train.synth_claims import ClaimWriter, single_shot_recall, synthesize_claims
from sieve.train.synth_generators import Draft, Link, LLMWriter, QuestionWriter, TemplateWriter
from sieve.train.synth_pairs import ComparisonPairs, compared_chunks, gold_chunks, verify_comparison
from sieve.train.task_io import all_chunks, read_written_tasks
from sieve.train.synth_config import GeneratorName, SynthConfig
from sieve.train.synth_writers import Writer, WriterOptions, build_writer

if TYPE_CHECKING:
    from sieve.retriever import CorpusIndex
    from sieve.train.synth_hard import HardWriter
    from sieve.retriever.types import Chunk

logger = logging.getLogger(__name__)

_WORD = re.compile(r"[A-Za-z0-9À-ÿ]+(?:['’][A-Za-z]+)?")
_CAPS = re.compile(r"\b[A-Z][a-zA-Z0-9À-ÿ]+(?:\s+(?:of|the|de|von|van|and|[A-Z][a-zA-Z0-9À-ÿ]+))*")


SINGLE_SHOT_K = 10  # the report's single_shot_recall_at_10 is recall at this cut-off, not a default k


@dataclass
class SynthReport:
    written: int = 0
    existing: int = 0
    bridges_tried: int = 0
    drafts: int = 0
    rejected: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    out: str = ""
    # claims: share of the file's tasks whose source document one hybrid search ranks in the top 10
    # (recorded at verification); how easy the tasks are for plain RAG, to set beside real claims.
    single_shot_recall_at_10: float | None = None  # at SINGLE_SHOT_K, the cut-off its name states

    def to_dict(self) -> dict[str, Any]:
        d = {
            "written": self.written,
            "existing": self.existing,
            "bridges_tried": self.bridges_tried,
            "drafts": self.drafts,
            "rejected": dict(self.rejected),
            "seconds": round(self.seconds, 2),
            "out": self.out,
        }
        if self.single_shot_recall_at_10 is not None:
            d["single_shot_recall_at_10"] = round(self.single_shot_recall_at_10, 4)
        return d


class CorpusView:
    """All chunks of a collection plus a title → document map for mention matching."""

    def __init__(self, chunks: list[Chunk], min_title_chars: int = 4, max_title_words: int = 8) -> None:
        self.chunks = sorted(chunks, key=lambda c: c.chunk_id)
        self.by_id = {c.chunk_id: c for c in self.chunks}
        self.lead: dict[str, Chunk] = {}
        for c in self.chunks:
            if c.doc_id not in self.lead or c.position < self.lead[c.doc_id].position:
                self.lead[c.doc_id] = c
        self.titles: dict[tuple[str, ...], str] = {}
        for doc_id, c in sorted(self.lead.items()):
            words = tuple(_WORD.findall(c.title or ""))
            if not words or len(words) > max_title_words or len(" ".join(words)) < min_title_chars:
                continue
            if len(words) == 1 and not words[0][0].isupper() and not words[0][0].isdigit():
                continue  # a lower-case single word ("mirror") matches too much running text
            self.titles.setdefault(words, doc_id)  # first doc wins for duplicate titles (sorted: stable)
        self.max_words = max((len(w) for w in self.titles), default=0)

    @classmethod
    def load(cls, index: CorpusIndex, **kwargs: Any) -> CorpusView:
        return cls(all_chunks(index), **kwargs)

    def title_mentions(self, chunk: Chunk) -> list[tuple[str, int, int, str]]:
        """(doc_id, start, end, mention) of other documents' titles occurring in ``chunk.text``; longest first."""
        toks = [(m.group(0), m.start(), m.end()) for m in _WORD.finditer(chunk.text)]
        found: dict[str, tuple[str, int, int, str]] = {}
        for i in range(len(toks)):
            for n in range(min(self.max_words, len(toks) - i), 0, -1):
                key = tuple(t for t, _, _ in toks[i : i + n])
                doc = self.titles.get(key)
                if doc and doc != chunk.doc_id and doc not in found:
                    s, e = toks[i][1], toks[i + n - 1][2]
                    found[doc] = (doc, s, e, chunk.text[s:e])
                    break
        return sorted(found.values(), key=lambda m: (-(m[2] - m[1]), m[1]))


def find_links(
    bridge: Chunk, view: CorpusView, index: CorpusIndex | None, cfg: SynthConfig, allow_bm25: bool
) -> list[Link]:
    """Links from ``bridge``: title mentions first, then (``allow_bm25``) BM25 neighbours sharing an entity."""
    mentions = view.title_mentions(bridge)
    leads = [view.lead[doc] for doc, *_ in mentions]
    links = [
        Link(bridge, view.lead[doc], mention, s, e, "title", tuple(c for c in leads if c.doc_id != doc))
        for doc, s, e, mention in mentions
    ][: cfg.links_per_bridge]
    if links or not allow_bm25 or index is None:
        return links
    query = f"{bridge.title}\n{bridge.text}"[:1000]
    own = {c.chunk_id for c in view.chunks if c.doc_id == bridge.doc_id}
    for cid, _score in index.bm25.scored_ids(query, cfg.bm25_neighbours, exclude=own):
        target = view.by_id.get(cid)
        if target is None:
            continue
        shared = [m for m in _CAPS.finditer(bridge.text) if len(m.group(0)) >= 4 and m.group(0) in target.text]
        if shared:
            m = max(shared, key=lambda x: len(x.group(0)))
            links.append(Link(bridge, target, m.group(0), m.start(), m.end(), "bm25"))
        if len(links) >= cfg.links_per_bridge:
            break
    return links


def task_id(link: Link, generator: str, prefix: str = "synth") -> str:
    # A pair may also be a bridge link: comparisons get distinct ids (and the old ids stay as they were).
    via = "" if link.via in ("title", "bm25") else "|" + "|".join([link.via, *(c.chunk_id for c in gold_chunks(link))])
    digest = hashlib.sha1(f"{link.bridge.chunk_id}|{link.target.chunk_id}|{generator}{via}".encode()).hexdigest()
    return f"{prefix}-{digest[:12]}"


def _mentions(text: str, phrase: str) -> bool:
    p = normalize_answer(phrase)
    return bool(p) and f" {p} " in f" {normalize_answer(text)} "


def verify(
    draft: Draft, link: Link, index: CorpusIndex, cfg: SynthConfig, reader: LLMWriter | None = None
) -> tuple[str | None, dict[str, Any]]:
    """Check a draft; returns (rejection reason or None, facts for ``meta``)."""
    answers = tuple(a for a in draft.answers if a.strip())
    if not answers or len(answers[0].split()) > cfg.max_answer_words:
        return "bad_answer", {}
    if quoted_content_words(draft.question, [c.text for c in gold_chunks(link)]) > cfg.max_quoted_words:
        return "quotes_passage", {}
    if link.via in ("compare", "bridge_compare"):
        return verify_comparison(draft, link, index, cfg.verify_k, cfg.n_distractors)
    if not contains_answer(link.target.text, answers):
        return "unsupported", {}
    if contains_answer(link.bridge.text, answers):
        return "answer_in_bridge", {}
    if contains_answer(draft.question, answers):
        return "answer_in_question", {}
    if any(_mentions(draft.question, t) for t in {link.target.title, clean_title(link.target.title)} if t):
        return "target_named", {}
    hits = index.search(draft.question, k=cfg.verify_k, mode="hybrid")
    ranks = {h.chunk_id: h.rank for h in hits}
    t_rank, b_rank = ranks.get(link.target.chunk_id), ranks.get(link.bridge.chunk_id)
    if t_rank is not None and t_rank <= cfg.shortcut_rank and b_rank is None:
        return "shortcut", {}
    if reader is not None and cfg.reader_check and reader.can_answer(draft.question, answers, link.bridge):
        return "reader_answers_from_bridge", {}
    gold = {link.bridge.chunk_id, link.target.chunk_id}
    extra = index.search(link.target.title, k=cfg.verify_k, mode="hybrid") if link.target.title else []
    distractors = [
        h.chunk_id for h in [*hits, *extra] if h.chunk_id not in gold and not contains_answer(h.chunk.text, answers)
    ]
    facts = {
        "single_shot_rank": {"bridge": b_rank, "target": t_rank},
        "distractor_ids": list(dict.fromkeys(distractors))[: cfg.n_distractors],
    }
    return None, facts


def make_task(draft: Draft, link: Link, facts: dict[str, Any], cfg: SynthConfig, writer_name: str) -> dict[str, Any]:
    return {
        "id": task_id(link, writer_name, cfg.id_prefix),
        "question": draft.question,
        "answers": list(draft.answers),
        "gold_ids": [c.doc_id for c in gold_chunks(link)],
        "meta": {
            "gold_chunk_ids": [c.chunk_id for c in gold_chunks(link)],
            "answer_chunk_ids": (
                [c.chunk_id for c in compared_chunks(link)] if draft.evidence else [link.target.chunk_id]
            ),
            "distractor_ids": facts.get("distractor_ids", []),
            "hops": len(gold_chunks(link)),
            "generator": writer_name,
            "kind": draft.kind,
            "link": link.via,
            "seed": cfg.seed,
            "single_shot_rank": facts.get("single_shot_rank", {}),
            "source": "sieve train synth",
        },
    }


def make_writer(
    generator: GeneratorName,
    *,
    model_path: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    models_dir: Path | None = None,
    seed: int = 0,
    claim_max_words: int = 20,
) -> Writer:
    """The task writer registered as ``generator`` (:data:`sieve.train.synth_writers.WRITERS`; models load lazily).

    ``models_dir`` is where the default local model is converted once (``RetrieverConfig.models_dir``);
    ``seed`` picks the template writer's phrasings.
    """
    return build_writer(
        generator,
        WriterOptions(
            model_path=model_path,
            base_url=base_url,
            model=model,
            api_key=api_key,
            models_dir=models_dir,
            seed=seed,
            claim_max_words=claim_max_words,
        ),
    )


def _drafts(writer: QuestionWriter, link: Link, cfg: SynthConfig) -> list[Draft]:
    if link.via == "compare" and isinstance(writer, TemplateWriter):
        return writer.compare(link.bridge, link.target)[: cfg.drafts_per_link]
    if link.via == "bridge_compare" and isinstance(writer, TemplateWriter):
        return writer.compare_bridges(link)[: cfg.drafts_per_link]
    return writer.drafts(link)[: cfg.drafts_per_link]


def _first_verified(
    drafts: list[Draft], link: Link, index: CorpusIndex, cfg: SynthConfig, reader: LLMWriter | None, report: SynthReport
) -> tuple[Draft, dict[str, Any]] | None:
    """The first draft that passes :func:`verify`, with its facts; rejections are counted in ``report``."""
    for draft in drafts:
        report.drafts += 1
        reason, facts = verify(draft, link, index, cfg, reader)
        if reason is None:
            return draft, facts
        report.rejected[reason] += 1
    return None


@dataclass
class _Run:
    """One synthesis run's state, rebuilt from the output file on resume."""

    index: CorpusIndex
    view: CorpusView
    cfg: SynthConfig
    writer: QuestionWriter
    reader: LLMWriter | None
    pairs: ComparisonPairs | None
    existing: set[str]
    per_target: Counter
    report: SynthReport
    compared: int = 0
    total: int = 0

    def try_links(self, links: list[Link]) -> tuple[Draft, Link, dict[str, Any]] | None:
        """The first link with a verified draft (and that draft), or ``None``."""
        for link in links:
            if task_id(link, self.writer.name, self.cfg.id_prefix) in self.existing:
                continue
            if self.per_target[link.target.doc_id] >= self.cfg.tasks_per_target:
                continue
            drafts = _drafts(self.writer, link, self.cfg)
            if not drafts:
                self.report.rejected["no_draft"] += 1
                continue
            verified = _first_verified(drafts, link, self.index, self.cfg, self.reader, self.report)
            if verified is not None:
                return verified[0], link, verified[1]
        return None

    def comparison_links(self, chunk: Chunk) -> list[Link]:
        if self.pairs is None or not isinstance(self.writer, TemplateWriter):
            return []
        # A bridge comparison first where the chunk has a cue link ("which film has the older director"):
        # few chunks do, and plain comparisons are possible for almost any chunk.
        bridged = self.pairs.bridge_partners(chunk, self.writer)
        return bridged + [Link(chunk, b, "", 0, 0, "compare") for b in self.pairs.partners(chunk)]

    def from_chunk(self, chunk: Chunk, fill: bool) -> dict[str, Any] | None:
        """A verified task from one chunk: for a ``comparison_share`` of chunks a comparison first (while
        comparisons stay within that share), then a bridge (``fill``: comparisons only)."""
        compare_ok = fill or (
            self.compared < self.cfg.comparison_share * (self.total + 1)
            and random.Random(f"{self.cfg.seed}|{chunk.chunk_id}|kind").random() < self.cfg.comparison_share
        )
        got = self.try_links(self.comparison_links(chunk)) if compare_ok else None
        if got is None and not fill:
            got = self.try_links(find_links(chunk, self.view, self.index, self.cfg, allow_bm25=self.reader is not None))
        if got is None:
            return None
        draft, link, facts = got
        task = make_task(draft, link, facts, self.cfg, self.writer.name)
        task["meta"]["pass"] = 2 if fill else 1
        self.existing.add(task["id"])
        self.per_target[link.target.doc_id] += 1
        self.compared += link.via in ("compare", "bridge_compare")
        self.total += 1
        return task


def _resume_point(order: list[Chunk], tasks: list[dict[str, Any]]) -> tuple[int, int]:
    """(pass, position in ``order``) after the last task already written: a resumed run goes on from there
    with the same state, so it writes what an uninterrupted run would have."""
    pos = {c.chunk_id: i for i, c in enumerate(order)}
    done = [
        (int(t["meta"].get("pass", 1)), pos[t["meta"]["gold_chunk_ids"][0]])
        for t in tasks
        if (t.get("meta") or {}).get("gold_chunk_ids") and t["meta"]["gold_chunk_ids"][0] in pos
    ]
    if not done:
        return 1, 0
    last_pass, last_pos = max(done)
    return last_pass, last_pos + 1


def synthesize(
    index: CorpusIndex,
    out: str | Path,
    config: SynthConfig | None = None,
    writer: Writer | None = None,
    *,
    progress: bool = True,
) -> SynthReport:
    """Write up to ``config.n`` verified tasks to ``out`` (appending; resumable).

    One pass over the chunks (in seeded order) tries each as a bridge, and as one side of a comparison
    while comparisons stay within ``comparison_share`` of the tasks; when bridges run out before ``n``,
    a second pass fills up with comparisons (``meta.pass`` 2). The claims writer instead writes one
    single-hop claim per document (:func:`sieve.train.synth_claims.synthesize_claims`).

    Args:
        index: the indexed collection to build tasks from.
        out: JSONL path (created, or appended to: ids present are skipped and counted).
        config: synthesis knobs (defaults: 500 tasks, template writer, seed 0).
        writer: a task writer (its class picks the route); default :func:`make_writer` of ``config.generator``.
        progress: show a tqdm bar.

    Returns:
        A :class:`SynthReport` (written, rejected by reason...).
    """
    cfg = config or SynthConfig()
    writer = writer or make_writer(
        cfg.generator, models_dir=index.config.models_dir, seed=cfg.seed, claim_max_words=cfg.claim_max_words
    )
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    existing_tasks = read_written_tasks(out)
    report = SynthReport(existing=len(existing_tasks), out=str(out))
    need = cfg.n - len(existing_tasks)
    if need <= 0:
        report.seconds = time.perf_counter() - t0
        return report
    from sieve.train.synth_hard import HardWriter

    if isinstance(writer, HardWriter):
        _synthesize_hard(index, out, cfg, writer, report, progress)
        return _finish(report, out, existing_tasks, need, t0, "chunks with verifiable keyphrases")
    if isinstance(writer, ClaimWriter):
        _synthesize_claims(index, out, cfg, writer, report, existing_tasks, need, progress)
        return _finish(report, out, existing_tasks, need, t0, "documents with a findable finding")
    if not isinstance(writer, QuestionWriter):
        raise InvalidInput(f"Expected a question, claim or hard writer, got {type(writer).__name__} (no drafts(link))")
    run, order = _link_run(index, cfg, writer, report, existing_tasks)
    _synthesize_links(run, order, out, existing_tasks, need, progress)
    return _finish(report, out, existing_tasks, need, t0, "verifiable links")


def _synthesize_hard(
    index: CorpusIndex, out: Path, cfg: SynthConfig, writer: HardWriter, report: SynthReport, progress: bool
) -> None:
    """Keyphrase questions with span gold (:func:`sieve.train.synth_hard.synthesize_hard`), into ``report``."""
    from sieve.train.synth_hard import synthesize_hard

    hard = synthesize_hard(index, out, writer.config(cfg.n, cfg.seed), progress=progress)
    report.written, report.bridges_tried, report.drafts = len(hard.tasks), hard.tried, hard.tried
    report.rejected.update(hard.rejected)


def _synthesize_claims(
    index: CorpusIndex,
    out: Path,
    cfg: SynthConfig,
    writer: ClaimWriter,
    report: SynthReport,
    existing_tasks: dict[str, Any],
    need: int,
    progress: bool,
) -> None:
    """One single-hop claim per document (:func:`sieve.train.synth_claims.synthesize_claims`), into ``report``,
    with how often one hybrid search finds the claims' sources."""
    claims = synthesize_claims(
        index,
        out,
        need,
        existing_tasks,
        seed=cfg.seed,
        id_prefix=cfg.id_prefix,
        search_depth=cfg.claim_search_depth,
        writer=writer,
        progress=progress,
    )
    report.written, report.bridges_tried, report.drafts = len(claims.tasks), claims.documents_tried, claims.drafts
    report.rejected.update(claims.rejected)
    report.single_shot_recall_at_10 = single_shot_recall([*existing_tasks.values(), *claims.tasks], k=SINGLE_SHOT_K)


def _link_run(
    index: CorpusIndex, cfg: SynthConfig, writer: QuestionWriter, report: SynthReport, existing_tasks: dict[str, Any]
) -> tuple[_Run, list[Chunk]]:
    """The state of a run of linked (multi-hop) tasks, rebuilt from the tasks already written, and the
    chunks in the seeded order the passes visit them."""
    view = CorpusView.load(index, min_title_chars=cfg.min_title_chars, max_title_words=cfg.max_title_words)
    order = list(view.chunks)
    random.Random(cfg.seed).shuffle(order)
    pairs = (
        ComparisonPairs(view, writer, index, cfg.seed)
        if isinstance(writer, TemplateWriter) and cfg.comparison_share > 0
        else None
    )
    run = _Run(
        index,
        view,
        cfg,
        writer,
        writer if isinstance(writer, LLMWriter) else None,
        pairs,
        set(existing_tasks),
        Counter(t["gold_ids"][-1] for t in existing_tasks.values() if t.get("gold_ids")),
        report,
        compared=sum(
            (t.get("meta") or {}).get("link") in ("compare", "bridge_compare") for t in existing_tasks.values()
        ),
        total=len(existing_tasks),
    )
    return run, order


def _synthesize_links(
    run: _Run, order: list[Chunk], out: Path, existing_tasks: dict[str, Any], need: int, progress: bool
) -> None:
    """The passes over ``order`` (bridges and comparisons, then comparisons to fill up), appending each
    verified task to ``out`` as it is found; a resumed run goes on where the last task was written."""
    report = run.report
    start_pass, start = _resume_point(order, list(existing_tasks.values()))
    used = {
        t["meta"]["gold_chunk_ids"][0] for t in existing_tasks.values() if (t.get("meta") or {}).get("gold_chunk_ids")
    }
    bar = tqdm(total=need, desc="Synthesizing tasks", unit="task", disable=not progress)
    tried: set[str] = set()
    with out.open("a", encoding="utf-8") as f:
        for fill in (False, True) if run.pairs is not None else (False,):
            if fill and start_pass == 1:
                start = 0
            elif not fill and start_pass == 2:
                continue
            for chunk in order[start:]:
                if report.written >= need:
                    break
                if chunk.chunk_id in used:
                    continue  # one task per chunk keeps tasks diverse
                if chunk.chunk_id not in tried:  # the fill pass visits chunks again: count each once
                    tried.add(chunk.chunk_id)
                    report.bridges_tried += 1
                task = run.from_chunk(chunk, fill)
                if task is None:
                    continue
                f.write(json.dumps(task, ensure_ascii=False) + "\n")
                f.flush()  # a killed run keeps every task written so far
                used.add(chunk.chunk_id)
                report.written += 1
                bar.update(1)
    bar.close()


def _finish(
    report: SynthReport, out: Path, existing_tasks: dict[str, Any], need: int, t0: float, what: str
) -> SynthReport:
    report.seconds = time.perf_counter() - t0
    if not existing_tasks and report.written == 0 and out.exists() and out.stat().st_size == 0:
        out.unlink()  # nothing was written: leave no empty tasks file behind for a later step to trip on
    if report.written < need:
        logger.warning(
            "Synthesized %d of %d tasks: the corpus ran out of %s (rejected: %s)",
            report.written,
            need,
            what,
            dict(report.rejected),
        )
    return report


def no_tasks_message(report: SynthReport, generator: str, source: str) -> str | None:
    """Why a synthesis run is unusable (no task at all in the output), with what to do instead; else None."""
    if report.written + report.existing > 0:
        return None
    why = (
        (
            " The template writer asks about encyclopedic passages: a subject's facts in a lead sentence and "
            "pages that mention other pages' titles (scientific abstracts, for one, have neither). For text "
            "that reports findings, write single-hop claims (`sieve train synth --generator claims`); else write "
            "tasks with a model (`--generator local|openai`), or bring labelled tasks "
            "(`sieve train rl --tasks FILE`)."
        )
        if generator == "heuristic"
        else ""
    )
    return (
        f"Expected synthesized tasks from {source}, got none ({report.bridges_tried} chunks tried, "
        f"{report.drafts} drafts, rejected: {dict(report.rejected) or 'none'}).{why}"
    )


__all__ = [
    "CorpusView",
    "GeneratorName",
    "SynthConfig",
    "SynthReport",
    "find_links",
    "make_task",
    "make_writer",
    "no_tasks_message",
    "synthesize",
    "task_id",
    "verify",
]
