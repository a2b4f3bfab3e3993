"""Evaluators: run a task set through a system, keep per-task rows, return name-prefixed flat metrics.

Per CONVENTIONS item 10: ``evaluator(system, output_dir=None) -> dict[str, float]`` with
``primary_metric`` and ``greater_is_better``; keys read ``{name}_recall@10``. With an
``output_dir`` every scored task is appended to ``output_dir/results.jsonl`` as soon as it is
done, and (system, source, task) rows already there are reused, so a killed run resumes.
Metrics are always recomputed from the stored ids, never read back from old rows.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from sieve.agent.tool_specs import search_tools

from sieve.eval.metrics import (
    mean,
    ndcg_at_k,
    percentile,
    prune_accuracy,
    ranking_metrics,
    reciprocal_rank,
    span_metrics,
    trajectory_recall,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from sieve.eval.data import EvalTask
    from sieve.eval.systems import System, SystemOutput

logger = logging.getLogger(__name__)

RESULTS_FILE = "results.jsonl"
RowKey = tuple[str, str, str]  # (system, source, task_id)


def load_results(path: Path) -> dict[RowKey, dict[str, Any]]:
    """Rows of a ``results.jsonl`` keyed by (system, source, task_id); a torn last line is ignored."""
    rows: dict[RowKey, dict[str, Any]] = {}
    if not path.is_file():
        return rows
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                # A run killed mid-write leaves at most one partial line; that task is simply redone.
                logger.warning("Ignoring unreadable line %d of %s", lineno, path)
                continue
            rows[(row["system"], row["source"], row["task_id"])] = row
    return rows


def make_row(task: EvalTask, system: str, out: SystemOutput, depth: int, ks: Sequence[int]) -> dict[str, Any]:
    """The stored record of one (system, task): ids, gold, cost, trace, and its metrics for reading."""
    row: dict[str, Any] = {
        "system": system,
        "source": task.source,
        "task_id": task.task_id,
        "question": task.question,
        "gold_ids": list(task.gold_ids),
        "depth": depth,
        "returned_doc_ids": out.doc_ids,
        "returned_chunk_ids": out.chunk_ids,
        "scores": out.scores,
        "chunk_tokens": out.chunk_tokens,
        "seen_doc_ids": out.seen_doc_ids,
        "tool_call_counts": out.tool_call_counts,
        "answer": out.answer,
        "wall_ms": out.wall_ms,
        "trace": out.trace,
        "unit": out.unit,
    }
    if task.gold_spans:
        row["gold_spans"] = [list(sp) for sp in task.gold_spans]
        row["returned_ranges"] = [list(r) for r in out.chunk_ranges]
    row["metrics"] = row_metrics(row, ks)
    return row


def _doc_metrics(row: dict[str, Any], ks: Sequence[int]) -> dict[str, float]:
    """Document-level metrics of a row: chunks count for their document.

    A ``unit="docs"`` row is a list of distinct documents; a ``unit="chunks"`` row is cut at ``k``
    *chunks* first (what the user got), then counted by document.
    """
    gold, returned = row["gold_ids"], row["returned_doc_ids"]
    if row.get("unit", "docs") == "docs":
        return ranking_metrics(returned, gold, ks)
    out: dict[str, float] = {}
    for k in ks:
        out.update(ranking_metrics(returned[:k], gold, [k]))
    # Rank metrics of the first 10 chunks (each cut above computed its own: replaced here).
    out["mrr@10"], out["ndcg@10"] = reciprocal_rank(returned[:10], gold), ndcg_at_k(returned[:10], gold, 10)
    return out


def row_metrics(row: dict[str, Any], ks: Sequence[int]) -> dict[str, float | None]:
    """Per-task metrics of a stored row (``None`` = not applicable, e.g. prune accuracy without prunes)."""
    gold = row["gold_ids"]
    returned = row["returned_doc_ids"]
    m: dict[str, float | None] = dict(_doc_metrics(row, ks))
    if row.get("gold_spans"):
        ranges = [(d, s, e) for d, (s, e) in zip(returned, row.get("returned_ranges") or [])]
        m.update(span_metrics(ranges, [tuple(sp) for sp in row["gold_spans"]], ks))
    toks = row.get("chunk_tokens") or []
    for k in ks:
        m[f"returned_tokens@{k}"] = float(sum(toks[:k]))
    m["wall_ms"] = float(row["wall_ms"])
    m["returned_docs"] = float(len(returned))
    trace = row.get("trace")
    if trace is not None:
        turns = trace.get("turns", [])
        calls = [c for t in turns for c in t.get("tool_calls", [])]
        ok = [c for c in calls if not c.get("malformed")]
        pruned = trace.get("pruned_chunk_ids", [])
        m["trajectory_recall"] = trajectory_recall(trace.get("seen_doc_ids", []), gold)
        searching = search_tools()
        m["searches"] = float(sum(1 for c in ok if c.get("name") in searching))
        m["turns"] = float(len(turns))
        m["tool_calls"] = float(len(calls))
        m["prune_calls"] = float(sum(1 for c in ok if c.get("name") == "prune"))
        m["pruned_chunks"] = float(len(pruned))
        m["prune_accuracy"] = prune_accuracy(pruned, gold)
        m["tokens"] = float(trace.get("tokens_total", 0))
        m["peak_context_tokens"] = float(trace.get("peak_context_tokens", 0))
        m["malformed_calls"] = float(sum(1 for c in calls if c.get("malformed")))
    return m


def aggregate(rows: Iterable[dict[str, Any]], ks: Sequence[int]) -> dict[str, float]:
    """Mean of every per-task metric over ``rows`` (abstentions skipped), plus wall-time p50/p95 and counts."""
    per_task = [row_metrics(r, ks) for r in rows]
    if not per_task:
        return {}
    keys = dict.fromkeys(k for m in per_task for k in m)
    out: dict[str, float] = {"n_tasks": float(len(per_task))}
    for key in keys:
        v = mean(m.get(key) for m in per_task)
        if v is not None:
            out[key] = v
    walls = [m["wall_ms"] for m in per_task if m.get("wall_ms") is not None]
    out["wall_ms_p50"] = percentile(walls, 50)  # type: ignore[arg-type]
    out["wall_ms_p95"] = percentile(walls, 95)  # type: ignore[arg-type]
    out["wall_s_total"] = sum(walls) / 1000  # type: ignore[arg-type]
    out.pop("wall_ms", None)
    return out


class RetrievalEvaluator:
    """Gold-evidence retrieval metrics of one task set (one source), for any :class:`System`.

    Args:
        tasks: the tasks, all from one source.
        ks: cut-offs scored; systems are asked for ``max(ks)`` documents.
        name: key prefix (the source name by default).
        progress: show a tqdm bar (with ETA) over the tasks still to run.

    Example:
        >>> evaluator = RetrievalEvaluator(tasks, ks=[5, 10], name="hotpotqa")  # doctest: +SKIP
        >>> evaluator(RetrievalSystem(index, "bm25", depth=10))["hotpotqa_recall@10"]  # doctest: +SKIP
    """

    greater_is_better = True

    def __init__(self, tasks: Sequence[EvalTask], ks: Sequence[int], name: str = "", *, progress: bool = True) -> None:
        if not ks or min(ks) < 1:
            raise ValueError(f"Expected positive cut-offs, got {list(ks)}")
        self.tasks = list(tasks)
        self.ks = sorted(set(ks))
        self.depth = max(self.ks)
        self.name = name or (self.tasks[0].source if self.tasks else "eval")
        # Span gold inside long documents: chunks are the unit (README-spans.md).
        self.unit = "chunks" if any(t.gold_spans for t in self.tasks) else "docs"
        self.progress = progress
        self.rows: list[dict[str, Any]] = []  # rows of the last call, in task order
        self.calls = 0  # system calls made by the last __call__ (0 when fully resumed)

    @property
    def primary_metric(self) -> str:
        k = 10 if 10 in self.ks else self.depth
        return f"{self.name}_{'span_recall' if self.unit == 'chunks' else 'recall'}@{k}"

    def __call__(self, system: System, output_dir: str | Path | None = None) -> dict[str, float]:
        path = Path(output_dir) / RESULTS_FILE if output_dir is not None else None
        done = load_results(path) if path is not None else {}
        rows: list[dict[str, Any]] = []
        todo: list[EvalTask] = []
        for t in self.tasks:
            old = done.get((system.name, t.source, t.task_id))
            # A row made for a smaller depth cannot be cut at today's largest k: redo it.
            if (
                old is not None
                and old.get("depth", 0) >= self.depth
                and old["gold_ids"] == list(t.gold_ids)
                and old.get("unit", "docs") == self.unit
            ):
                rows.append(old)
            else:
                todo.append(t)
        self.calls = 0
        if todo:
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
            bar = tqdm(
                total=len(self.tasks),
                initial=len(self.tasks) - len(todo),
                unit="task",
                desc=f"{system.name} on {self.name}",
                disable=not self.progress,
            )
            new: dict[str, dict[str, Any]] = {}
            fh = path.open("a", encoding="utf-8") if path is not None else None
            try:
                for t in todo:
                    out = system.run(t.question, unit="chunks") if self.unit == "chunks" else system.run(t.question)
                    row = make_row(t, system.name, out, self.depth, self.ks)
                    self.calls += 1
                    new[t.task_id] = row
                    if fh is not None:
                        fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                        fh.flush()  # each finished task survives a kill
                    bar.update(1)
            finally:
                bar.close()
                if fh is not None:
                    fh.close()
            by_id = {r["task_id"]: r for r in rows} | new
            rows = [by_id[t.task_id] for t in self.tasks]
        self.rows = rows
        return {f"{self.name}_{k}": v for k, v in aggregate(rows, self.ks).items()}


class SequentialEvaluator:
    """Runs several evaluators on one system and merges their (disjointly prefixed) metrics.

    ``primary_metric`` is the last evaluator's, as in sentence-transformers.
    """

    greater_is_better = True

    def __init__(self, evaluators: Sequence[RetrievalEvaluator]) -> None:
        if not evaluators:
            raise ValueError("Expected at least one evaluator, got none")
        names = [e.name for e in evaluators]
        if len(set(names)) != len(names):
            raise ValueError(f"Expected distinct evaluator names, got {names}")
        self.evaluators = list(evaluators)

    @property
    def primary_metric(self) -> str:
        return self.evaluators[-1].primary_metric

    @property
    def calls(self) -> int:
        return sum(e.calls for e in self.evaluators)

    def __call__(self, system: System, output_dir: str | Path | None = None) -> dict[str, float]:
        out: dict[str, float] = {}
        for e in self.evaluators:
            out.update(e(system, output_dir))
        return out


__all__ = [
    "RESULTS_FILE",
    "RetrievalEvaluator",
    "SequentialEvaluator",
    "aggregate",
    "load_results",
    "make_row",
    "row_metrics",
]
