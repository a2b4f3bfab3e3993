"""Retrain the closing ranker on the user's corpus, and score Sieve as served.

The ranker (:mod:`sieve.agent.ranking`) decides which chunks of the policy's and hybrid's
rankings an episode returns. Its features are places, agreement and cosine, not words, yet how
much to trust each depends on the corpus: on long filings many chunks of one document compete, on
chat logs a turn is short and hybrid's head is noisy. ``sieve train`` therefore adapts the shipped
ranker to episodes of the user's synthetic tasks (:func:`sieve.train.ranking.fit.finetune`, anchored to the
shipped weights) and saves it as ``fusion.json`` beside the policy checkpoint it was collected with:
``--policy-path`` that folder serves both (:attr:`LearnedPolicy.ranker_path`).

:func:`served_scores` scores a (policy, ranker) pair as ``sieve search`` runs it (floor on), per
task, at the finest gold a task has: its gold chunks (synthetic tasks), its gold spans, else its
documents.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sieve.core.defaults import DEFAULT_K
from sieve.core.errors import InvalidInput

if TYPE_CHECKING:
    from sieve.agent.ranking.model import Ranker
    from sieve.eval.data import EvalTask
    from sieve.retriever.index import CorpusIndex

logger = logging.getLogger(__name__)


@dataclass
class RankerConfig:
    k: int = field(default=20, metadata={"help": "Evidence per episode when collecting the ranker's pools."})
    anchor: float = field(
        default=1.0,
        metadata={
            "help": "Pull toward the shipped ranker's weights (mean squared distance), against overfitting a few tasks."
        },
    )
    steps: int = field(default=300, metadata={"help": "Full-batch Adam steps of the fine-tune."})
    lr: float = field(default=0.01, metadata={"help": "Adam learning rate."})
    offtopic: float = field(
        default=0.5,
        metadata={
            "help": "Share of episodes also copied with another task's policy ranking (as the shipped model was trained)."
        },
    )
    seed: int = 0

    def __post_init__(self) -> None:
        if self.k < 1 or self.anchor < 0 or self.steps < 1 or self.lr <= 0 or not 0 <= self.offtopic <= 1:
            raise InvalidInput(
                f"Expected k >= 1, anchor >= 0, steps >= 1, lr > 0, 0 <= offtopic <= 1, got "
                f"{self.k}, {self.anchor}, {self.steps}, {self.lr}, {self.offtopic}"
            )


def as_eval_tasks(tasks: list[dict[str, Any]], source: str = "synthetic") -> list[EvalTask]:
    """Task rows (``tasks.jsonl``) as :class:`EvalTask` objects, gold spans included."""
    from sieve.eval.data import EvalTask

    return [
        EvalTask(
            task_id=str(t["id"]),
            question=t["question"],
            gold_ids=tuple(t.get("gold_ids") or ()),
            answers=tuple(t.get("answers") or ()),
            source=source,
            meta=dict(t.get("meta") or {}),
            gold_spans=tuple((s["doc_id"], int(s["start"]), int(s["end"])) for s in t.get("gold_spans") or ()),
        )
        for t in tasks
    ]


def retrain_ranker(
    index: CorpusIndex,
    policy: Any,
    tasks: list[dict[str, Any]],
    out: Path,
    cfg: RankerConfig | None = None,
    *,
    base: Ranker | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Fine-tune ``base`` (default: the shipped ranker) on ``policy``'s episodes of ``tasks``; write ``out``."""
    from sieve.agent.ranking.model import Ranker
    from sieve.train.ranking.episodes import RankingData, add_offtopic, collect
    from sieve.train.ranking.fit import finetune

    cfg = cfg or RankerConfig()
    if not tasks:
        raise InvalidInput("Expected tasks to retrain the ranker on, got none")
    base = base or Ranker.load(None)
    data = collect(
        index, as_eval_tasks(tasks), [policy], k=cfg.k, data=RankingData(), progress=progress, source="synthetic"
    )
    added = add_offtopic(data, {"synthetic": index}, cfg.offtopic, cfg.seed) if cfg.offtopic > 0 else 0
    model = finetune(data, base, anchor=cfg.anchor, steps=cfg.steps, lr=cfg.lr, seed=cfg.seed)
    model.meta["retrained_on"] = {"tasks": len(tasks), "offtopic_episodes": added, "collection": index.name}
    model.save(out)
    positives = int(sum(float(y.sum()) for y in data.y))
    logger.info(
        "Ranker retrained on %d episodes (%d off-topic copies, %d gold rows): %s", len(data.x), added, positives, out
    )
    return {"path": str(out), "episodes": len(data.x), "offtopic": added, "positives": positives}


def task_recall(task: EvalTask, returned: list[Any], k: int, ranges: dict[str, tuple[int, int]] | None = None) -> float:
    """Recall@k of one episode's returned evidence at the finest gold the task has (chunks, spans, documents).

    ``ranges``: character range of each returned chunk, needed for gold spans.
    """
    from sieve.eval.metrics import recall_at_k, span_recall_at_k

    chunk_gold = task.meta.get("gold_chunk_ids")
    if chunk_gold:
        got = {e.chunk_id for e in returned[:k]}
        return len(set(chunk_gold) & got) / len(set(chunk_gold))
    if task.gold_spans:
        if ranges is None:
            raise InvalidInput("Expected chunk ranges to score a task with gold spans, got none")
        return span_recall_at_k([(e.doc_id, *ranges[e.chunk_id]) for e in returned], list(task.gold_spans), k)
    return recall_at_k(list(dict.fromkeys(e.doc_id for e in returned)), task.gold_ids, k)


def served_scores(
    index: CorpusIndex,
    policy: Any,
    tasks: list[EvalTask],
    *,
    k: int = DEFAULT_K,
    fusion_path: Path | None = None,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Per task: recall@k, all-gold@k and recall@2k of Sieve as served (floor on) with this policy and ranker.

    Rows carry ``id``, ``recall``, ``all_gold`` and ``reward`` (here recall@2k: the tie-breaker of
    :func:`sieve.train.verdict.decide` then asks whether deeper evidence improved), so two systems'
    rows pair task by task for the verdict.
    """
    from tqdm.auto import tqdm

    from sieve.agent import AgentConfig, SearchAgent

    config = AgentConfig(k=2 * k, models_dir=index.config.models_dir)
    if fusion_path is not None:
        config = replace(config, floor=replace(config.floor, fusion_path=fusion_path))
    agent = SearchAgent(index, policy, config)
    rows = []
    for t in tqdm(tasks, desc="served episodes", disable=not progress):
        returned = agent.run(t.question).returned
        ranges = (
            {c.chunk_id: (c.char_start, c.char_end) for c in index.get_chunks([e.chunk_id for e in returned])}
            if t.gold_spans
            else None
        )
        r = task_recall(t, returned, k, ranges)
        rows.append(
            {
                "id": t.task_id,
                "recall": r,
                "all_gold": float(r == 1.0),
                "reward": task_recall(t, returned, 2 * k, ranges),
            }
        )
    return rows


__all__ = ["RankerConfig", "as_eval_tasks", "retrain_ranker", "served_scores", "task_recall"]
