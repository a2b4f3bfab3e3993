"""Are synthetic tasks as hard as real questions? Single-shot hybrid recall@10 on both, per corpus.

For each data dir: write ``--n`` hard tasks (:mod:`sieve.train.synth_hard`) from its corpus, then
score one hybrid search per question, for the synthetic tasks and for the set's real questions,
side by side. Synthetic tasks are scored per chunk (share of ``meta.gold_chunk_ids`` in the top 10
chunks); real ones as ``sieve eval`` scores them (span recall@10 of chunks where tasks have
``gold_spans``, else document recall@10). A writer whose tasks are far easier than the real
questions teaches a policy nothing it needs; the issue's bar is a gap within 0.10.

    python -m sieve.train.calibration --data ../shared/eval/locomo-dev --data ../shared/eval/hotpotqa --out runs/calib
"""

from __future__ import annotations

import argparse
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sieve.core.defaults import DEFAULT_K
from sieve.eval.metrics import recall_at_k, span_recall_at_k

if TYPE_CHECKING:
    from sieve.eval.data import EvalTask
    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.index import CorpusIndex

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CalibrationRow:
    name: str
    synthetic_n: int
    synthetic_recall: float
    real_n: int
    real_recall: float
    unit: str  # how real questions are scored: "spans" or "documents"
    by_kind: dict[str, float]

    @property
    def gap(self) -> float:
        return self.synthetic_recall - self.real_recall


def synthetic_recall(
    index: CorpusIndex, tasks: list[dict[str, Any]], k: int = DEFAULT_K
) -> tuple[float, dict[str, float]]:
    """Mean share of each task's gold chunks in one hybrid search's top ``k`` chunks; also per task kind."""
    per: dict[str, list[float]] = {}
    for t in tasks:
        gold = set(t["meta"]["gold_chunk_ids"])
        got = {h.chunk_id for h in index.search(t["question"], k=k, mode="hybrid")}
        per.setdefault(t["meta"].get("kind", "?"), []).append(len(gold & got) / len(gold))
    every = [v for vs in per.values() for v in vs]
    return (float(np.mean(every)) if every else 0.0), {kind: float(np.mean(v)) for kind, v in per.items()}


def real_recall(index: CorpusIndex, tasks: list[EvalTask], k: int = DEFAULT_K) -> tuple[float, str]:
    """Single-shot hybrid recall@k of real questions: span recall of chunks with gold spans, else of documents."""
    spans = any(t.gold_spans for t in tasks)
    scores = []
    for t in tasks:
        if spans:
            hits = index.search(t.question, k=k, mode="hybrid")
            scores.append(
                span_recall_at_k(
                    [(h.chunk.doc_id, h.chunk.char_start, h.chunk.char_end) for h in hits], list(t.gold_spans), k
                )
            )
        else:
            docs = [d.doc_id for d in index.search_documents(t.question, k, mode="hybrid")]
            scores.append(recall_at_k(docs, t.gold_ids, k))
    return (float(np.mean(scores)) if scores else 0.0), ("spans" if spans else "documents")


def calibrate(
    data: Path, out: Path, n: int, config: RetrieverConfig, seed: int = 0, *, progress: bool = True
) -> CalibrationRow:
    """Write ``n`` hard tasks from ``data``'s corpus (the eval cache collection ``sieve eval`` uses) and score both."""
    from sieve.eval.data import load_sets, open_eval_index
    from sieve.train.synth_hard import HardConfig, synthesize_hard

    sets, maps = load_sets([data])
    index = open_eval_index(sets, maps, config, progress=progress)
    path = out / sets[0].name / "tasks.jsonl"
    synthesize_hard(index, path, HardConfig(n=n, seed=seed), progress=progress)
    synth = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    s, by_kind = synthetic_recall(index, synth)
    r, unit = real_recall(index, sets[0].tasks)
    return CalibrationRow(sets[0].name, len(synth), s, len(sets[0].tasks), r, unit, by_kind)


def table(rows: list[CalibrationRow]) -> str:
    lines = [
        "| set | synthetic tasks | synthetic R@10 | real questions | real R@10 (unit) | gap | per kind |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    lines += [
        f"| {r.name} | {r.synthetic_n} | {r.synthetic_recall:.3f} | {r.real_n} | {r.real_recall:.3f} ({r.unit}) | "
        f"{r.gap:+.3f} | {', '.join(f'{k} {v:.2f}' for k, v in sorted(r.by_kind.items()))} |"
        for r in rows
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data", type=Path, action="append", required=True, help="Data dir (corpus.jsonl + tasks.jsonl); repeat."
    )
    ap.add_argument("--n", type=int, default=100, help="Hard tasks written per corpus.")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("runs/calibration"), help="Where the synthetic tasks go.")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from sieve.settings import load_settings

    config = load_settings().retriever_config()  # $SIEVE_DATA_DIR: the same cached collections as `sieve eval`
    rows = [calibrate(d, args.out, args.n, config, args.seed) for d in args.data]
    text = table(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "calibration.md").write_text(text + "\n", encoding="utf-8")
    print(text)  # noqa: T201 - the table is the output


if __name__ == "__main__":
    main()


__all__ = ["CalibrationRow", "calibrate", "real_recall", "synthetic_recall", "table"]
