"""Multi-hop task synthesis from an indexed corpus: link → write → verify → distractors → JSONL.

1. **Link**: a *bridge* chunk whose text mentions another document's title (exact, case-sensitive
   n-gram match) gives a *target*: that document's lead chunk. For LLM writers, a BM25 neighbour
   sharing a named entity (``index.bm25.scored_ids``) is a fallback link.
2. **Write**: a question writer (:mod:`sieve.train.synth_generators`) drafts a question that needs
   both chunks: the bridge to identify the target, the target for the answer.
3. **Verify** (every draft, whatever wrote it): the answer is supported (occurs in the target's
   text); each gold chunk is necessary (the answer is in neither the bridge nor the question, and
   the question does not name the target); no retrieval shortcut (a single hybrid search with the
   question must not put the target at the top without also finding the bridge); optionally a
   reader model must fail to answer from the bridge alone.
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
from typing import TYPE_CHECKING, Any, Literal

from tqdm.auto import tqdm

from sieve.errors import EmptyCorpus, InvalidInput
from sieve.train.rewards.metrics import contains_answer, normalize_answer
from sieve.train.synth_generators import Draft, Link, LLMWriter, QuestionWriter, TemplateWriter

if TYPE_CHECKING:
    from sieve.retriever import CorpusIndex
    from sieve.retriever.types import Chunk

logger = logging.getLogger(__name__)

GeneratorName = Literal["heuristic", "local", "openai"]
_WORD = re.compile(r"[A-Za-z0-9À-ÿ]+(?:['’][A-Za-z]+)?")
_CAPS = re.compile(r"\b[A-Z][a-zA-Z0-9À-ÿ]+(?:\s+(?:of|the|de|von|van|and|[A-Z][a-zA-Z0-9À-ÿ]+))*")


@dataclass
class SynthConfig:
    n: int = field(default=500, metadata={"help": "Number of verified tasks wanted in the output file."})
    seed: int = field(default=0, metadata={"help": "Seed of the bridge-chunk order (same seed, same tasks)."})
    generator: GeneratorName = field(default="heuristic", metadata={
        "help": "Question writer: heuristic (templates, no model), local (transformers) or openai (endpoint)."})
    links_per_bridge: int = field(default=2, metadata={"help": "Most links tried per bridge chunk."})
    tasks_per_target: int = field(default=2, metadata={"help": "Most tasks whose answer lies in one document."})
    min_title_chars: int = field(default=4, metadata={"help": "Shorter titles are not matched as mentions."})
    max_title_words: int = field(default=8, metadata={"help": "Longer titles are not matched as mentions."})
    bm25_neighbours: int = field(default=5, metadata={"help": "BM25 neighbours tried when no title link (LLM writers)."})
    verify_k: int = field(default=10, metadata={"help": "Depth of the single-shot search used by verification."})
    shortcut_rank: int = field(default=1, metadata={
        "help": "Reject when single-shot search ranks the target within this rank but misses the bridge."})
    n_distractors: int = field(default=10, metadata={"help": "Hard distractors recorded per task."})
    reader_check: bool = field(default=False, metadata={
        "help": "LLM writers: also reject when the model answers from the bridge chunk alone."})
    max_answer_words: int = field(default=10, metadata={"help": "Longer answers are rejected."})
    id_prefix: str = field(default="synth", metadata={"help": "Prefix of task ids."})

    def __post_init__(self) -> None:
        if self.n < 1:
            raise InvalidInput(f"Expected n >= 1, got {self.n}")
        if self.generator not in ("heuristic", "local", "openai"):
            raise InvalidInput(f"Expected generator in ('heuristic', 'local', 'openai'), got {self.generator!r}")
        if self.verify_k < 1 or self.shortcut_rank < 0 or self.n_distractors < 0:
            raise InvalidInput(f"Expected verify_k >= 1, shortcut_rank >= 0, n_distractors >= 0, got "
                             f"{self.verify_k}, {self.shortcut_rank}, {self.n_distractors}")


@dataclass
class SynthReport:
    written: int = 0
    existing: int = 0
    bridges_tried: int = 0
    drafts: int = 0
    rejected: Counter = field(default_factory=Counter)
    seconds: float = 0.0
    out: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"written": self.written, "existing": self.existing, "bridges_tried": self.bridges_tried,
                "drafts": self.drafts, "rejected": dict(self.rejected), "seconds": round(self.seconds, 2),
                "out": self.out}


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
        docs = index.documents()
        if not docs:
            raise EmptyCorpus(f"Expected an indexed collection, got {index.name!r} with no chunks")
        ids = [f"{d}#{i}" for d, n in sorted(docs.items()) for i in range(n)]
        chunks: list[Chunk] = []
        for i in range(0, len(ids), 1000):
            chunks.extend(index.get_chunks(ids[i:i + 1000]))
        return cls(chunks, **kwargs)

    def title_mentions(self, chunk: Chunk) -> list[tuple[str, int, int, str]]:
        """(doc_id, start, end, mention) of other documents' titles occurring in ``chunk.text``; longest first."""
        toks = [(m.group(0), m.start(), m.end()) for m in _WORD.finditer(chunk.text)]
        found: dict[str, tuple[str, int, int, str]] = {}
        for i in range(len(toks)):
            for n in range(min(self.max_words, len(toks) - i), 0, -1):
                key = tuple(t for t, _, _ in toks[i:i + n])
                doc = self.titles.get(key)
                if doc and doc != chunk.doc_id and doc not in found:
                    s, e = toks[i][1], toks[i + n - 1][2]
                    found[doc] = (doc, s, e, chunk.text[s:e])
                    break
        return sorted(found.values(), key=lambda m: (-(m[2] - m[1]), m[1]))


def find_links(bridge: Chunk, view: CorpusView, index: CorpusIndex | None, cfg: SynthConfig,
               allow_bm25: bool) -> list[Link]:
    """Links from ``bridge``: title mentions first, then (``allow_bm25``) BM25 neighbours sharing an entity."""
    links = [Link(bridge, view.lead[doc], mention, s, e, "title")
             for doc, s, e, mention in view.title_mentions(bridge)][: cfg.links_per_bridge]
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
    digest = hashlib.sha1(f"{link.bridge.chunk_id}|{link.target.chunk_id}|{generator}".encode()).hexdigest()
    return f"{prefix}-{digest[:12]}"


def _mentions(text: str, phrase: str) -> bool:
    p = normalize_answer(phrase)
    return bool(p) and f" {p} " in f" {normalize_answer(text)} "


def verify(draft: Draft, link: Link, index: CorpusIndex, cfg: SynthConfig,
           reader: LLMWriter | None = None) -> tuple[str | None, dict[str, Any]]:
    """Check a draft; returns (rejection reason or None, facts for ``meta``)."""
    answers = tuple(a for a in draft.answers if a.strip())
    if not answers or len(answers[0].split()) > cfg.max_answer_words:
        return "bad_answer", {}
    if not contains_answer(link.target.text, answers):
        return "unsupported", {}
    if contains_answer(link.bridge.text, answers):
        return "answer_in_bridge", {}
    if contains_answer(draft.question, answers):
        return "answer_in_question", {}
    if link.target.title and _mentions(draft.question, link.target.title):
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
    distractors = [h.chunk_id for h in [*hits, *extra]
                   if h.chunk_id not in gold and not contains_answer(h.chunk.text, answers)]
    facts = {"single_shot_rank": {"bridge": b_rank, "target": t_rank},
             "distractor_ids": list(dict.fromkeys(distractors))[: cfg.n_distractors]}
    return None, facts


def make_task(draft: Draft, link: Link, facts: dict[str, Any], cfg: SynthConfig, writer_name: str) -> dict[str, Any]:
    return {
        "id": task_id(link, writer_name, cfg.id_prefix),
        "question": draft.question,
        "answers": list(draft.answers),
        "gold_ids": [link.bridge.doc_id, link.target.doc_id],
        "meta": {
            "gold_chunk_ids": [link.bridge.chunk_id, link.target.chunk_id],
            "answer_chunk_ids": [link.target.chunk_id],
            "distractor_ids": facts.get("distractor_ids", []),
            "hops": 2,
            "generator": writer_name,
            "kind": draft.kind,
            "link": link.via,
            "seed": cfg.seed,
            "single_shot_rank": facts.get("single_shot_rank", {}),
            "source": "sieve train synth",
        },
    }


def read_written_tasks(path: Path) -> dict[str, dict[str, Any]]:
    """Tasks this writer already wrote to ``path``, by id (missing file: none); a torn last line is ignored.

    Lenient on purpose, unlike :func:`sieve.eval.data.read_tasks`: it reads back a file that an
    interrupted run may have left half-written, to resume it.
    """
    tasks: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return tasks
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                row = json.loads(line)
                tasks[row["id"]] = row
            except (json.JSONDecodeError, KeyError, TypeError):
                continue
    return tasks


def read_task_ids(path: Path) -> set[str]:
    """Ids already in a tasks file."""
    return set(read_written_tasks(path))


def make_writer(generator: GeneratorName, *, model_path: str | None = None, base_url: str | None = None,
                model: str | None = None, api_key: str | None = None,
                models_dir: Path | None = None) -> QuestionWriter:
    """The question writer named ``generator`` (models load lazily, only for local / openai).

    ``models_dir`` is where the default local model is converted once (``RetrieverConfig.models_dir``).
    """
    if generator == "heuristic":
        return TemplateWriter()
    if generator == "local":
        from sieve.agent.backends.local import LocalBackend
        from sieve.agent.backends.models import smollm2_path

        return LLMWriter(LocalBackend.load(model_path or smollm2_path(models_dir)), name="local")
    if generator == "openai":
        from sieve.agent.backends.openai import OpenAIBackend

        if not base_url or not model:
            raise InvalidInput(f"Expected --base-url and --model for the openai generator, got {base_url!r}, {model!r}")
        return LLMWriter(OpenAIBackend(base_url, model, api_key=api_key), name="openai")
    raise InvalidInput(f"Expected generator in ('heuristic', 'local', 'openai'), got {generator!r}")


def synthesize(index: CorpusIndex, out: str | Path, config: SynthConfig | None = None,
               writer: QuestionWriter | None = None, *, progress: bool = True) -> SynthReport:
    """Write up to ``config.n`` verified tasks to ``out`` (appending; resumable).

    Args:
        index: the indexed collection to build tasks from.
        out: JSONL path (created, or appended to: ids present are skipped and counted).
        config: synthesis knobs (defaults: 500 tasks, template writer, seed 0).
        writer: a question writer; default :func:`make_writer` of ``config.generator``.
        progress: show a tqdm bar.

    Returns:
        A :class:`SynthReport` (written, rejected by reason...).
    """
    cfg = config or SynthConfig()
    writer = writer or make_writer(cfg.generator, models_dir=index.config.models_dir)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    existing_tasks = read_written_tasks(out)
    existing = set(existing_tasks)
    report = SynthReport(existing=len(existing), out=str(out))
    need = cfg.n - len(existing)
    if need <= 0:
        report.seconds = time.perf_counter() - t0
        return report
    view = CorpusView.load(index, min_title_chars=cfg.min_title_chars, max_title_words=cfg.max_title_words)
    order = list(view.chunks)
    random.Random(cfg.seed).shuffle(order)
    reader = writer if isinstance(writer, LLMWriter) else None
    # Rebuilt from the file, so a resumed run makes the same choices as an uninterrupted one.
    per_target: Counter = Counter(t["gold_ids"][-1] for t in existing_tasks.values() if t.get("gold_ids"))
    bar = tqdm(total=need, desc="Synthesizing tasks", unit="task", disable=not progress)
    with out.open("a", encoding="utf-8") as f:
        for bridge in order:
            if report.written >= need:
                break
            report.bridges_tried += 1
            for link in find_links(bridge, view, index, cfg, allow_bm25=reader is not None):
                tid = task_id(link, writer.name, cfg.id_prefix)
                if tid in existing:
                    break  # this bridge's task was written by an earlier run
                if per_target[link.target.doc_id] >= cfg.tasks_per_target:
                    continue
                draft = writer.write(link)
                if draft is None:
                    report.rejected["no_draft"] += 1
                    continue
                report.drafts += 1
                reason, facts = verify(draft, link, index, cfg, reader)
                if reason:
                    report.rejected[reason] += 1
                    continue
                f.write(json.dumps(make_task(draft, link, facts, cfg, writer.name), ensure_ascii=False) + "\n")
                f.flush()  # a killed run keeps every task written so far
                existing.add(tid)
                per_target[link.target.doc_id] += 1
                report.written += 1
                bar.update(1)
                break  # one task per bridge keeps tasks diverse
    bar.close()
    report.seconds = time.perf_counter() - t0
    if report.written < need:
        logger.warning("Synthesized %d of %d tasks: the corpus ran out of verifiable links (rejected: %s)",
                       report.written, need, dict(report.rejected))
    return report


__all__ = ["CorpusView", "GeneratorName", "SynthConfig", "SynthReport", "find_links", "make_task", "make_writer",
           "read_task_ids", "read_written_tasks", "synthesize", "task_id", "verify"]
