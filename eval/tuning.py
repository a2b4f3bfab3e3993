"""Declared tuning data: the tasks Sieve's constants were tuned on, so evaluation can say when it reports on them.

Every tuned constant (the heuristic's knobs, the floor's weights) was chosen on tasks listed in
``tuning_sets.json`` beside this module, and only on those. The manifest holds a short hash of
each tuning question, not the question: ``sieve eval`` hashes its own tasks and warns when any
of them are tuning tasks (their figures are then in-sample, not evidence of anything).

Declare a new tuning split (after tuning on it, with the command that did so in
``docs/experiments/tuning.md``)::

    python -m sieve.eval.tuning ../shared/train/hotpotqa-train/tasks.jsonl ../shared/eval/scifact/tasks_train.jsonl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sieve.eval.data import EvalSet

logger = logging.getLogger(__name__)

MANIFEST = Path(__file__).with_name("tuning_sets.json")


def question_key(question: str) -> str:
    """A short, stable hash of a question (case, punctuation and spacing ignored).

    Example:
        >>> question_key("Who wrote  Hamlet?") == question_key("who wrote hamlet")
        True
    """
    norm = " ".join(re.findall(r"\w+", question.lower()))
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()[:16]


def load_manifest(path: Path | None = None) -> dict[str, set[str]]:
    """``{tuning set name: question keys}`` of the declared tuning data (empty when none is declared)."""
    path = path or MANIFEST
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {s["name"]: set(s["keys"]) for s in data.get("sets", [])}


def tuning_overlap(sets: Sequence[EvalSet], path: Path | None = None) -> dict[str, dict[str, Any]]:
    """Per evaluated set that shares questions with declared tuning data: how many, and with which; warns.

    Returns:
        ``{set name: {"tasks": n overlapping, "of": n tasks, "tuning_sets": [names]}}``, empty when clean.
    """
    declared = load_manifest(path)
    out: dict[str, dict[str, Any]] = {}
    for s in sets:
        keys = [question_key(t.question) for t in s.tasks]
        hit = {name: sum(k in tuned for k in keys) for name, tuned in declared.items()}
        hit = {name: n for name, n in hit.items() if n}
        if not hit:
            continue
        n = sum(any(k in tuned for tuned in declared.values()) for k in keys)
        out[s.name] = {"tasks": n, "of": len(keys), "tuning_sets": sorted(hit)}
        logger.warning(
            "%d of %d tasks of %s are declared tuning data (%s): their figures are in-sample, not a measure of Sieve",
            n,
            len(keys),
            s.name,
            ", ".join(sorted(hit)),
        )
    return out


def declare(files: Sequence[Path], path: Path | None = None) -> dict[str, int]:
    """Add (or replace) each tasks file as a tuning set named after its folder (or file stem); returns sizes."""
    path = path or MANIFEST
    from sieve.eval.data import read_tasks

    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"sets": []}
    sets = {s["name"]: s for s in data["sets"]}
    for f in files:
        name = f.parent.name if f.name == "tasks.jsonl" else f"{f.parent.name}/{f.stem}"
        sets[name] = {
            "name": name,
            "file": f.name,
            "keys": sorted({question_key(t["question"]) for t in read_tasks(f)}),
        }
    data["sets"] = sorted(sets.values(), key=lambda s: s["name"])
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return {s["name"]: len(s["keys"]) for s in data["sets"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Declare tasks files as tuning data (eval then warns on them).")
    ap.add_argument("files", type=Path, nargs="+", help="tasks.jsonl files that constants were tuned on.")
    args = ap.parse_args(argv)
    for name, n in declare(args.files).items():
        print(f"{name}\t{n} questions")
    return 0


__all__ = ["MANIFEST", "declare", "load_manifest", "question_key", "tuning_overlap"]


if __name__ == "__main__":
    raise SystemExit(main())
