"""The ranker's training rows: episodes run as serving runs them, each one's pool, feature rows and labels.

For every task: one episode of each policy with the floor off (the policy's own ranking), the
question's hybrid search and the pool of both, as :meth:`SearchAgent.closing_pool` builds it for
serving, then its :func:`~sieve.agent.ranking.features.pool_features` and labels (a chunk is
evidence when it is one of a synthetic task's gold chunks, when it covers a gold span by
README-spans' rule on sets with ``gold_spans``, else when its document is gold).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm.auto import tqdm

from sieve.agent.ranking.features import pool_features, question_cover
from sieve.core.errors import InvalidInput
from sieve.eval.metrics import span_found

if TYPE_CHECKING:
    from collections.abc import Callable

    from sieve.eval.data import EvalTask
    from sieve.retriever.index import CorpusIndex


@dataclass
class RankingData:
    """Pools of many episodes: features, labels and which episode (group) each row belongs to."""

    x: list[np.ndarray] = field(default_factory=list)
    y: list[np.ndarray] = field(default_factory=list)
    episodes: list[dict[str, Any]] = field(default_factory=list)  # what fuse() needs to re-rank, per episode


def _labels(task: EvalTask, items: list[Any], ranges: dict[str, tuple[int, int]]) -> np.ndarray:
    chunk_gold = task.meta.get("gold_chunk_ids")
    if chunk_gold:  # synthetic tasks know their gold chunks exactly
        return np.array([float(it.evidence.chunk_id in chunk_gold) for it in items])
    if task.gold_spans:
        return np.array(
            [
                float(
                    any(span_found(sp, [(it.evidence.doc_id, *ranges[it.evidence.chunk_id])]) for sp in task.gold_spans)
                )
                for it in items
            ]
        )
    gold = set(task.gold_ids)
    return np.array([float(it.evidence.doc_id in gold) for it in items])


def collect(
    index: CorpusIndex,
    tasks: list[EvalTask],
    policies: list[Any],
    *,
    k: int = 20,
    data: RankingData | None = None,
    progress: bool = True,
    source: str = "",
) -> RankingData:
    """Run every policy (floor off) on every task and add each episode's pool, as serving builds it, to ``data``.

    ``policies``: registry names (``"learned"``) or policy objects (e.g. a retrained checkpoint).
    """
    from sieve.agent import AgentConfig, SearchAgent

    data = data or RankingData()
    for policy in policies:
        config = AgentConfig(k=k, models_dir=index.config.models_dir)
        config = replace(config, floor=replace(config.floor, enabled=False))
        name = policy if isinstance(policy, str) else policy.name
        agent = (
            SearchAgent.with_policy(index, policy, config)
            if isinstance(policy, str)
            else SearchAgent(index, policy, config)
        )
        for task in tqdm(tasks, desc=f"{name} episodes", disable=not progress):
            trace = agent.run(task.question)
            closing = agent.closing_pool(task.question, trace.returned)
            items, x = pool_features(trace.returned, closing.hybrid, closing.cos, closing.cover)
            ranges = {cid: (c.char_start, c.char_end) for cid, c in closing.chunks.items()}
            data.x.append(x)
            data.y.append(_labels(task, items, ranges))
            data.episodes.append(
                {
                    "policy": name,
                    "task": task,
                    "returned": trace.returned,
                    "hybrid": closing.hybrid,
                    "cos": closing.cos,
                    "cover": closing.cover,
                    "ranges": ranges,
                    "source": source or task.source,
                    "k": k,
                }
            )
    return data


def refeaturize(data: RankingData) -> None:
    """Recompute every episode's features with this version's :func:`features` (labels are unchanged:
    the pool's order depends only on the two rankings)."""
    missing = sum("cover" not in ep for ep in data.episodes)
    if missing:
        raise InvalidInput(
            f"Expected every episode to carry its chunks' question cover, got {missing} without; "
            "run add_cover() on episodes collected by an older version"
        )
    data.x = [pool_features(ep["returned"], ep["hybrid"], ep["cos"], ep["cover"])[1] for ep in data.episodes]


def add_cover(data: RankingData, indexes: dict[str, CorpusIndex]) -> int:
    """Give episodes collected before the ``cover`` features their chunks' :func:`question_cover`,
    read from each source's index (so refits reuse old episode files). Returns how many were given it."""
    done = 0
    for ep in data.episodes:
        if "cover" in ep:
            continue
        index = indexes.get(ep["source"])
        if index is None:
            raise InvalidInput(f"Expected an index for episode source {ep['source']!r}, got none")
        ids = list(dict.fromkeys([*(e.chunk_id for e in ep["returned"]), *(e.chunk_id for e in ep["hybrid"])]))
        chunks = {c.chunk_id: c for c in index.get_chunks(ids)}
        ep["cover"] = question_cover(ep["task"].question, chunks, index.bm25_index().doc_share)
        done += 1
    return done


def add_offtopic(data: RankingData, indexes: dict[str, CorpusIndex], share: float = 0.5, seed: int = 0) -> int:
    """Add episodes whose policy ranking is another question's (of the same set): what a policy that
    drifted off the question returns. Their chunks are labelled as any other (rarely gold), so the
    model learns that a ranking sharing nothing with the question's own search is worth little,
    however high it places its chunks. Returns how many episodes were added.
    """
    from sieve.agent.vector_cache import VectorCache

    rng = np.random.default_rng(seed)
    by_source: dict[str, list[dict[str, Any]]] = {}
    for ep in list(data.episodes):
        by_source.setdefault(ep["source"], []).append(ep)
    added = 0
    for src, eps in by_source.items():
        index = indexes.get(src)
        if index is None or len(eps) < 2:
            continue
        vectors = VectorCache(index)
        for i in rng.choice(len(eps), size=int(len(eps) * share), replace=False):
            ep = eps[int(i)]
            other = eps[int(rng.integers(len(eps)))]
            if other["task"].task_id == ep["task"].task_id:
                continue
            foreign = [e for e in other["returned"] if e.chunk_id not in ep["cos"]]
            chunks = index.get_chunks([e.chunk_id for e in foreign]) if foreign else []
            cos = dict(ep["cos"])
            cos.update(
                zip((c.chunk_id for c in chunks), (float(v) for v in vectors.cosine(ep["task"].question, chunks)))
            )
            ranges = {**ep["ranges"], **{c.chunk_id: (c.char_start, c.char_end) for c in chunks}}
            cover = dict(ep["cover"])
            cover.update(
                question_cover(ep["task"].question, {c.chunk_id: c for c in chunks}, index.bm25_index().doc_share)
            )
            items, x = pool_features(other["returned"], ep["hybrid"], cos, cover)
            data.x.append(x)
            data.y.append(_labels(ep["task"], items, ranges))
            data.episodes.append(
                {
                    **ep,
                    "policy": f"{ep['policy']}-offtopic",
                    "returned": other["returned"],
                    "cos": cos,
                    "cover": cover,
                    "ranges": ranges,
                }
            )
            added += 1
    return added


def partition(data: RankingData, held: Callable[[dict[str, Any]], bool]) -> tuple[RankingData, RankingData]:
    """(the rest, the episodes ``held`` picks), each episode with its features and labels."""
    a, b = RankingData(), RankingData()
    for x, y, ep in zip(data.x, data.y, data.episodes):
        part = b if held(ep) else a
        part.x.append(x)
        part.y.append(y)
        part.episodes.append(ep)
    return a, b


def split(data: RankingData, share: float, seed: int = 0) -> tuple[RankingData, RankingData]:
    """(fit part, check part): whole tasks go to one side (both policies' episodes of a task together)."""

    def held(ep: dict[str, Any]) -> bool:
        h = hashlib.sha256(f"{seed}/{ep['source']}/{ep['task'].task_id}".encode()).digest()
        return h[0] / 256 < share

    return partition(data, held)


__all__ = ["RankingData", "add_cover", "add_offtopic", "collect", "partition", "refeaturize", "split"]
