"""Run files external scorers read: BrowseComp-Plus per-query JSON, TREC runs and qrels (``trec_eval``).

Layout under the report folder, one sub-folder per source so pooled runs stay scoreable per set::

    bcp/<source>/<system>/<query_id>.json
    trec/<source>/<system>.run          # qid Q0 docid rank score run_name
    trec/<source>/qrels.txt             # qid 0 docid 1

``trec_eval`` orders a run by score, not by rank, and breaks ties by doc id; systems can emit
equal scores (fused RRF ties), so the TREC score written is rank-derived (``depth - rank + 1``)
to keep each system's own order. The original scores stay in ``results.jsonl``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

_COMPLETED = {"finished", "converged", "no_tool_call"}


def slug(name: str) -> str:
    """A file- and TREC-safe name for a system (``agent:heuristic`` -> ``agent-heuristic``).

    Example:
        >>> slug("agent:heuristic")
        'agent-heuristic'
    """
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "run"


def _safe_qid(qid: str) -> str:
    # Query ids become file names and TREC columns: no whitespace, no path separators.
    return re.sub(r"[\s/\\]+", "_", qid)


def bcp_record(row: dict[str, Any]) -> dict[str, Any]:
    """The BrowseComp-Plus run record of one stored result row.

    ``retrieved_docids`` is everything the system retrieved (an agent's whole trajectory, a
    baseline's returned list), which is what BrowseComp-Plus computes its recall over; the
    ranked final set is kept too, under ``ranked_docids``.
    """
    trace = row.get("trace")
    result: list[dict[str, Any]] = []
    status = "completed"
    if trace is not None:
        for turn in trace.get("turns", []):
            for call in turn.get("tool_calls", []):
                result.append(
                    {
                        "type": "tool_call",
                        "tool_name": call.get("name"),
                        "arguments": json.dumps(call.get("arguments", {}), ensure_ascii=False),
                        "output": json.dumps(call.get("result_chunk_ids", [])),
                    }
                )
        stop = trace.get("stop_reason", "finished")
        status = "completed" if stop in _COMPLETED else str(stop)
    result.append({"type": "output_text", "output": row.get("answer") or ""})
    return {
        "query_id": row["task_id"],
        "tool_call_counts": dict(row.get("tool_call_counts") or {}),
        "status": status,
        "retrieved_docids": list(dict.fromkeys(row.get("seen_doc_ids") or row["returned_doc_ids"])),
        "ranked_docids": list(row["returned_doc_ids"]),
        "result": result,
    }


def write_bcp(rows: Sequence[dict[str, Any]], out_dir: Path) -> list[Path]:
    """One BrowseComp-Plus JSON per (source, system, query); returns the folders written."""
    folders: set[Path] = set()
    for row in rows:
        folder = out_dir / "bcp" / slug(row["source"]) / slug(row["system"])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{_safe_qid(row['task_id'])}.json").write_text(
            json.dumps(bcp_record(row), ensure_ascii=False, indent=1), encoding="utf-8"
        )
        folders.add(folder)
    return sorted(folders)


def trec_run_lines(rows: Sequence[dict[str, Any]], run_name: str, depth: int) -> list[str]:
    """``qid Q0 docid rank score run_name`` lines, best first, cut at ``depth``."""
    lines = []
    for row in rows:
        qid = _safe_qid(row["task_id"])
        for rank, doc in enumerate(row["returned_doc_ids"][:depth], start=1):
            lines.append(f"{qid} Q0 {doc} {rank} {depth - rank + 1} {run_name}")
    return lines


def qrels_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """``qid 0 docid 1`` for every gold document of every distinct task."""
    seen: dict[str, list[str]] = {}
    for row in rows:
        seen.setdefault(_safe_qid(row["task_id"]), list(row["gold_ids"]))
    return [f"{qid} 0 {doc} 1" for qid, gold in seen.items() for doc in gold]


def write_trec(rows: Sequence[dict[str, Any]], out_dir: Path, depth: int) -> list[Path]:
    """TREC run files per (source, system) and a qrels file per source; returns the files written."""
    written: list[Path] = []
    by_source: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_source.setdefault(row["source"], []).append(row)
    for source, srows in by_source.items():
        folder = out_dir / "trec" / slug(source)
        folder.mkdir(parents=True, exist_ok=True)
        qrels = folder / "qrels.txt"
        qrels.write_text("\n".join(qrels_lines(srows)) + "\n", encoding="utf-8")
        written.append(qrels)
        by_system: dict[str, list[dict[str, Any]]] = {}
        for row in srows:
            by_system.setdefault(row["system"], []).append(row)
        for system, sys_rows in by_system.items():
            run = folder / f"{slug(system)}.run"
            run.write_text("\n".join(trec_run_lines(sys_rows, slug(system), depth)) + "\n", encoding="utf-8")
            written.append(run)
    return written


__all__ = ["bcp_record", "qrels_lines", "slug", "trec_run_lines", "write_bcp", "write_trec"]
