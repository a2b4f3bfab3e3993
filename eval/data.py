"""Evaluation data: tasks with gold evidence, their corpora, and the cached index built from them.

A data dir holds ``corpus.jsonl`` (``{"id", "title", "text"}``) and ``tasks.jsonl``
(``{"id", "question", "answers", "gold_ids", "meta"}``); ``gold_ids`` are corpus ids, which
indexing keeps as ``doc_id``. Several dirs can be *pooled* into one corpus (harder retrieval):
ids are kept as they are unless two sets share one, in which case the colliding ids (and the
gold ids that point at them) are prefixed with their set name.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sieve.core.errors import InvalidInput, NotFound
from sieve.retriever.store import EVAL_CACHE_PREFIX
from sieve.retriever.types import Document

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.embeddings import Embedder
    from sieve.retriever.index import CorpusIndex

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalTask:
    """One question with its gold evidence documents.

    ``source`` is the name of the set the task comes from (pooled runs score per source).
    """

    task_id: str
    question: str
    gold_ids: tuple[str, ...]
    answers: tuple[str, ...] = ()
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    # Character ranges of the evidence inside long documents, ``(doc_id, start, end)``
    # (``../shared/eval/README-spans.md``); a set whose tasks have them is scored per chunk.
    gold_spans: tuple[tuple[str, int, int], ...] = ()


@dataclass
class EvalSet:
    """A data dir: its name, corpus file and tasks (gold ids already mapped to index doc ids)."""

    name: str
    root: Path
    tasks: list[EvalTask]

    @property
    def corpus_path(self) -> Path:
        return self.root / "corpus.jsonl"

    @property
    def chunk_level(self) -> bool:
        """Whether the set's tasks carry ``gold_spans``: then systems return chunks and spans are scored."""
        return any(t.gold_spans for t in self.tasks)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise NotFound(f"Expected a file at {str(path)!r}, got nothing there")
    rows = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"Expected JSON on {path}:{lineno}, got a parse error ({exc.msg})") from None
    return rows


def read_tasks(path: str | Path, limit: int | None = None) -> list[dict[str, Any]]:
    """The records of a ``tasks.jsonl`` (the ``shared/eval/*/tasks.jsonl`` schema), checked; the first ``limit``.

    Training reads tasks as these records, evaluation as :class:`EvalTask` (:func:`load_tasks`):
    one reader, one schema.

    Raises:
        InvalidInput: a missing file, an unreadable line, a record without ``id``, a non-empty
            ``question`` or a non-empty list ``gold_ids``, a repeated id, or no task at all.
    """
    path = Path(path)
    if not path.is_file():
        raise InvalidInput(f"Expected a tasks JSONL file, got {str(path)!r} (not found)")
    tasks: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, rec in enumerate(_read_jsonl(path), start=1):
        if (
            not isinstance(rec, dict)
            or "id" not in rec
            or not isinstance(rec.get("question"), str)
            or not rec["question"].strip()
            or not isinstance(rec.get("gold_ids"), list)
            or not rec["gold_ids"]
        ):
            raise InvalidInput(
                f"Expected {{'id', 'question', 'gold_ids': [...]}} with a question and at least one "
                f"gold id on {path}:{i}, got {str(rec)[:120]}"
            )
        tid = str(rec["id"])
        if tid in seen:
            raise InvalidInput(f"Expected unique task ids in {path}, got {tid!r} twice")
        seen.add(tid)
        tasks.append(rec)
        if limit is not None and len(tasks) >= limit:
            break
    if not tasks:
        raise InvalidInput(f"Expected at least one task in {path}, got none")
    return tasks


def parse_spans(rec: dict[str, Any], id_map: dict[str, str], where: str) -> tuple[tuple[str, int, int], ...]:
    """A task record's ``gold_spans`` as ``(doc_id, start, end)`` tuples, checked (none: ``()``).

    Raises:
        InvalidInput: a span that is not ``{"doc_id", "start", "end"}`` with ``0 <= start < end``,
            or whose document is not one of the task's ``gold_ids``.
    """
    raw = rec.get("gold_spans")
    if raw is None:
        return ()
    gold = {str(g) for g in rec["gold_ids"]}
    if not isinstance(raw, list):
        raise InvalidInput(f"Expected gold_spans to be a list on {where}, got {type(raw).__name__}")
    spans = []
    for sp in raw:
        ok = (
            isinstance(sp, dict)
            and isinstance(sp.get("start"), int)
            and isinstance(sp.get("end"), int)
            and 0 <= sp["start"] < sp["end"]
            and str(sp.get("doc_id")) in gold
        )
        if not ok:
            raise InvalidInput(
                f"Expected spans {{'doc_id' in gold_ids, 'start' < 'end' (ints >= 0)}} on {where}, got {str(sp)[:120]}"
            )
        did = str(sp["doc_id"])
        spans.append((id_map.get(did, did), sp["start"], sp["end"]))
    return tuple(spans)


def load_tasks(path: Path, source: str, id_map: dict[str, str] | None = None) -> list[EvalTask]:
    """Tasks of one ``tasks.jsonl`` (see :func:`read_tasks`); ``id_map`` renames gold ids (pooled mode, on collision)."""
    id_map = id_map or {}
    tasks: list[EvalTask] = []
    for i, rec in enumerate(read_tasks(path), start=1):
        answers = rec.get("answers") or []
        tasks.append(
            EvalTask(
                task_id=str(rec["id"]),
                question=rec["question"],
                gold_ids=tuple(dict.fromkeys(id_map.get(str(g), str(g)) for g in rec["gold_ids"])),
                answers=tuple(str(a) for a in (answers if isinstance(answers, list) else [answers])),
                source=source,
                meta=rec.get("meta") or {},
                gold_spans=parse_spans(rec, id_map, f"{path} task {i}"),
            )
        )
    return tasks


def read_corpus(path: Path, id_map: dict[str, str] | None = None, source: str = "") -> list[Document]:
    """Documents of one ``corpus.jsonl`` (ids renamed through ``id_map`` where given)."""
    id_map = id_map or {}
    docs = []
    for i, rec in enumerate(_read_jsonl(path), start=1):
        if not isinstance(rec, dict) or "id" not in rec or not isinstance(rec.get("text"), str):
            raise InvalidInput(f"Expected {{'id', 'text'}} on {path}:{i}, got {str(rec)[:120]}")
        if not rec["text"].strip():
            logger.warning("Skipped %s:%d: empty text", path, i)
            continue
        did = str(rec["id"])
        docs.append(
            Document(
                doc_id=id_map.get(did, did),
                text=rec["text"],
                title=str(rec.get("title") or ""),
                source=source or path.parent.name,
            )
        )
    return docs


def _set_names(dirs: Sequence[Path]) -> list[str]:
    names: list[str] = []
    for d in dirs:
        base = re.sub(r"[^A-Za-z0-9._-]+", "-", d.resolve().name).strip("-.") or "data"
        name, n = base, 2
        while name in names:  # two dirs of one basename still get distinct set names
            name, n = f"{base}-{n}", n + 1
        names.append(name)
    return names


def collision_maps(dirs: Sequence[Path], names: Sequence[str]) -> dict[str, dict[str, str]]:
    """Per set, ``{original id: pooled id}`` for the ids that occur in more than one set."""
    owners: dict[str, list[str]] = {}
    for d, name in zip(dirs, names):
        for rec in _read_jsonl(d / "corpus.jsonl"):
            owners.setdefault(str(rec.get("id")), []).append(name)
    maps: dict[str, dict[str, str]] = {name: {} for name in names}
    for did, sets in owners.items():
        if len(set(sets)) > 1:
            for name in set(sets):
                maps[name][did] = f"{name}/{did}"
    return maps


def load_sets(dirs: Sequence[str | Path]) -> tuple[list[EvalSet], dict[str, dict[str, str]]]:
    """The data dirs as :class:`EvalSet` objects, plus the per-set id renames (empty unless pooled ids collide)."""
    paths = [Path(d).expanduser() for d in dirs]
    if not paths:
        raise InvalidInput("Expected at least one --data dir, got none")
    for p in paths:
        for f in ("corpus.jsonl", "tasks.jsonl"):
            if not (p / f).is_file():
                raise NotFound(f"Expected {f} in data dir {str(p)!r}, got no such file")
    names = _set_names(paths)
    maps = collision_maps(paths, names) if len(paths) > 1 else {names[0]: {}}
    sets = [EvalSet(name, p, load_tasks(p / "tasks.jsonl", name, maps[name])) for p, name in zip(paths, names)]
    return sets, maps


def collection_name(sets: Sequence[EvalSet], config: RetrieverConfig) -> str:
    """A cache name that changes whenever the corpora or anything shaping their chunks/vectors does.

    Example:
        >>> # eval-hotpotqa-onnx-int8-3f2a9c01d4  (set names, backend/dtype tag, content fingerprint)
    """
    from sieve.retriever.config import default_embedder_path
    from sieve.retriever.embeddings import cached_model_fingerprint

    h = hashlib.sha256()
    for s in sets:
        h.update(s.name.encode())
        h.update(hashlib.sha256(s.corpus_path.read_bytes()).digest())
    h.update(
        f"{config.chunk_tokens}/{config.chunk_overlap}/{config.embed_dtype}/{Path(config.embedder_path).name}".encode()
    )
    if config.embed_backend != "torch":  # torch keeps the names its caches had before ONNX existed
        h.update(config.embed_backend.encode())
    if config.chunk_split != "window":  # window keeps the names its caches had before structure existed
        h.update(config.chunk_split.encode())
    if config.embedder_path != default_embedder_path():
        # Another model folder: its content decides the vectors, not its name (two adapted runs' folders
        # are both called "embedder"); the shipped model keeps the names its caches always had.
        h.update(cached_model_fingerprint(Path(config.embedder_path), config.models_dir).encode())
    tag = {"bfloat16": "bf16", "float32": "fp32"}.get(config.embed_dtype, config.embed_dtype)
    if config.embed_backend != "torch":
        tag = f"{config.embed_backend}-{tag}"
    stem = "_".join(s.name for s in sets)[:200]
    # The shape retriever.store.is_eval_cache recognises, so `sieve collections` leaves it out.
    return f"{EVAL_CACHE_PREFIX}{stem}-{tag}-{h.hexdigest()[:10]}"


def open_eval_index(
    sets: Sequence[EvalSet],
    maps: dict[str, dict[str, str]],
    config: RetrieverConfig,
    embedder: Embedder | None = None,
    *,
    progress: bool = True,
) -> CorpusIndex:
    """Open (creating and indexing when needed) the cached collection of the sets' pooled corpus.

    Indexing is idempotent by content hash, so a cached collection costs one pass of hashing.
    """
    from sieve.retriever.index import CorpusIndex
    from sieve.retriever.ingest import content_hash
    from sieve.retriever.turns import with_turn_context

    index = CorpusIndex.open(config, collection_name(sets, config), create=True, embedder=embedder)
    docs = list(with_turn_context(d for s in sets for d in read_corpus(s.corpus_path, maps.get(s.name), s.name)))
    have = index.doc_states()
    key = config.chunking_key
    if len(have) == len(docs) and all(
        d.doc_id in have
        and have[d.doc_id].complete
        # A conversation's turns are hashed: a cache indexed before turns had a context is indexed again.
        and (not d.context or have[d.doc_id].doc_hash == content_hash(d, key))
        for d in docs
    ):
        # Same fingerprint and every document present: skip re-hashing thousands of documents.
        logger.info("Cached collection %s is complete (%d documents)", index.name, len(docs))
        return index
    report = index.writer.index_documents(docs, progress=progress)
    logger.info(
        "Indexed %s: %d added, %d unchanged, %d chunks in %.1fs",
        index.name,
        report.added,
        report.unchanged,
        report.chunks_written,
        report.seconds,
    )
    return index


__all__ = [
    "EvalSet",
    "EvalTask",
    "collection_name",
    "collision_maps",
    "load_sets",
    "load_tasks",
    "open_eval_index",
    "parse_spans",
    "read_corpus",
    "read_tasks",
]
