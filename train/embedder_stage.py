"""``sieve train all``'s embedder stage: adapt the embedder to the corpus, judge it, keep it only if better.

The embedder is fine-tuned on pairs mined from the corpus's own structure
(:mod:`sieve.train.adapt_embedder`), the collection is re-embedded with it into a new version that
nothing reads yet (:func:`~sieve.retriever.reembed.reembed_version` with ``activate=False``), and
Sieve as served with the shipped policy is scored on that version and on the shipped one: on the
held-apart weak pairs (dense recall@10), the held-apart synthesized tasks and the user's labelled
questions. The adapted embedder is kept when it is worse beyond noise on no set, not below the
shipped one on average on the deciding set (the labelled questions when given), and better on
average over the sets (:func:`decide`). Kept, its version is what the policy then trains on; dropped, the version is
deleted. Nothing here switches the collection: that is :func:`sieve.train.adopt.adopt_run`, once the
whole run is judged.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sieve.train.adapt_embedder import AdaptConfig, TooFewPairs, adapt, compare_sets

if TYPE_CHECKING:
    from sieve.eval.data import EvalTask
    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.index import CorpusIndex
    from sieve.retriever.reembed import SwitchReport

logger = logging.getLogger(__name__)


@dataclass
class EmbedderStage:
    """What the stage decided, and the index the rest of the run uses."""

    index: CorpusIndex  # the adapted version when kept, else the collection as it is
    kept: bool
    reason: str
    version: SwitchReport | None = None  # the adapted version (kept: not yet switched to)
    model: str | None = None  # the adapted model's folder
    sets: list[dict[str, Any]] = field(default_factory=list)
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # set -> served rows on the adapted version
    summary: dict[str, Any] = field(default_factory=dict)  # adapt()'s summary (pairs, training)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "kept": self.kept,
            "reason": self.reason,
            "model": self.model,
            "version": dataclasses.asdict(self.version) if self.version else None,
            "sets": self.sets,
            "pairs": self.summary.get("pairs"),
            "training": self.summary.get("training"),
            "seconds": round(self.seconds, 1),
        }


def decide(sets: list[dict[str, Any]]) -> tuple[bool, str]:
    """Kept when worse beyond noise on no set, not below the shipped embedder on average on the
    deciding (last) set, and better on average over the sets.

    Each set alone is small on a user's corpus (15-40 items: a +0.05 gain sits inside two standard
    errors), so no single set must show the gain above its noise; every set must rule out a loss.
    On Poetry's tuning half with a 30-minute run: pairs +0.053 (noise 0.073), synthesized tasks
    +0.133 (0.206), labelled questions +0.000 (0.073): kept, where "above noise somewhere" dropped it.

    Example:
        >>> decide([{"set": "pairs", "worse": False, "diff": 0.05}, {"set": "questions", "worse": False, "diff": 0.0}])
        (True, 'better on average over 2 sets (+0.025), worse on none, questions +0.000')
    """
    deciding = sets[-1]
    worse = [s for s in sets if s["worse"]]
    if worse:
        return False, "worse beyond noise on " + ", ".join(f"{s['set']} ({s['diff']:+.3f})" for s in worse)
    if deciding["diff"] < 0:
        return False, f"below the shipped embedder on average on {deciding['set']} ({deciding['diff']:+.3f})"
    mean = sum(s["diff"] for s in sets) / len(sets)
    if mean <= 0:
        return False, f"no better on average over {len(sets)} sets ({mean:+.3f})"
    return True, (
        f"better on average over {len(sets)} sets ({mean:+.3f}), worse on none, "
        f"{deciding['set']} {deciding['diff']:+.3f}"
    )


def run_embedder_stage(
    index: CorpusIndex,
    retriever_config: RetrieverConfig,
    cfg: AdaptConfig,
    out: Path,
    task_sets: dict[str, list[EvalTask]],
    shipped_rows: dict[str, list[dict[str, Any]]],
    *,
    k: int,
    margin: float = 2.0,
    progress: bool = True,
) -> EmbedderStage:
    """Adapt, re-embed into an unswitched version, judge; see the module doc.

    Args:
        task_sets: name -> tasks Sieve as served is judged on (held-apart synthesized, labelled).
        shipped_rows: name -> :func:`~sieve.train.ranking.corpus.served_scores` rows of the shipped Sieve on them.
    """
    from sieve.agent.policies.learned import LearnedPolicy
    from sieve.retriever.embeddings import Embedder
    from sieve.retriever.index import CorpusIndex
    from sieve.retriever.reembed import drop_version, reembed_version
    from sieve.train.ranking.corpus import served_scores

    t0 = time.perf_counter()
    try:
        summary = adapt(index, cfg, out, retriever_config, margin=margin, progress=progress)
    except TooFewPairs as exc:
        logger.warning("Embedder kept as shipped: %s", exc)
        return EmbedderStage(index, False, f"skipped: {exc}", seconds=time.perf_counter() - t0)
    model = summary["embedder"]
    adapted = Embedder.from_config(dataclasses.replace(retriever_config, embedder_path=model))
    version = reembed_version(index, adapted, activate=False, progress=progress)
    adapted_index = CorpusIndex.open(
        retriever_config, index.name, version=version.new, embedder=adapted, client=index.store.handle
    )
    shipped_policy = LearnedPolicy.load(None)
    sets = list(summary["sets"])  # the held-apart pairs, by dense recall@10
    rows: dict[str, list[dict[str, Any]]] = {}
    for name, tasks in task_sets.items():
        rows[name] = served_scores(adapted_index, shipped_policy, tasks, k=k, progress=progress)
        sets.append(
            compare_sets(name, [r["recall"] for r in shipped_rows[name]], [r["recall"] for r in rows[name]], margin)
        )
    kept, reason = decide(sets)
    if not kept:
        drop_version(retriever_config, index.name, version.new, index.store.handle)
    logger.info("Adapted embedder %s: %s", "kept" if kept else "dropped", reason)
    return EmbedderStage(
        adapted_index if kept else index,
        kept,
        reason,
        version if kept else None,
        model,
        sets,
        rows if kept else {},
        summary,
        time.perf_counter() - t0,
    )


__all__ = ["EmbedderStage", "decide", "run_embedder_stage"]
