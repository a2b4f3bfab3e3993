"""Fit the fusion model (:mod:`sieve.agent.ranking`) on declared training data.

For every task of every ``--data`` dir: one episode of each policy with the floor off (the
policy's own ranking), the question's hybrid search, the pool of both, its features and labels
(a chunk is evidence when its document is gold, or, on sets with ``gold_spans``, when it covers a
span by README-spans' rule). A logistic regression on standardised features is fitted on all
pools together, so no one kind of question decides the weights, and written as JSON.

Only declared data may be used: ``../shared/train/*``, SciFact's ``tasks_train.jsonl``, the tuning
slices of ``eval/tuning_sets.json``, synthetic tasks of the user's corpus. Example::

    python -m sieve.train.fusion --data ../shared/train/hotpotqa-train --data ../shared/train/2wikimultihopqa-train \\
        --out fusion.json
"""

from __future__ import annotations

import argparse
import logging
import pickle
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm.auto import tqdm

from sieve.agent.ranking.features import FEATURES, ClosingPool, pool_features, question_cover
from sieve.agent.ranking.model import Ranker, fuse
from sieve.core.errors import InvalidInput
from sieve.eval.metrics import span_found

if TYPE_CHECKING:
    from sieve.eval.data import EvalTask
    from sieve.retriever.index import CorpusIndex

logger = logging.getLogger(__name__)


@dataclass
class FusionData:
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
    data: FusionData | None = None,
    progress: bool = True,
    source: str = "",
) -> FusionData:
    """Run every policy (floor off) on every task and add each episode's pool, as serving builds it, to ``data``.

    ``policies``: registry names (``"learned"``) or policy objects (e.g. a retrained checkpoint).
    """
    from sieve.agent import AgentConfig, SearchAgent

    data = data or FusionData()
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


def refeaturize(data: FusionData) -> None:
    """Recompute every episode's features with this version's :func:`features` (labels are unchanged:
    the pool's order depends only on the two rankings)."""
    missing = sum("cover" not in ep for ep in data.episodes)
    if missing:
        raise InvalidInput(
            f"Expected every episode to carry its chunks' question cover, got {missing} without; "
            "run add_cover() on episodes collected by an older version"
        )
    data.x = [pool_features(ep["returned"], ep["hybrid"], ep["cos"], ep["cover"])[1] for ep in data.episodes]


def add_cover(data: FusionData, indexes: dict[str, CorpusIndex]) -> int:
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


def add_offtopic(data: FusionData, indexes: dict[str, CorpusIndex], share: float = 0.5, seed: int = 0) -> int:
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


def ensemble(models: list[Ranker]) -> Ranker:
    """One model whose logit is the mean of ``models``' logits: their hidden units side by side, the
    output weights divided by their number (the same file format, the same cost per unit).

    Refits with other seeds move held-apart recall by up to 0.007 (another resample, another
    initialisation); averaging a few takes that noise out of the shipped ranking instead of
    keeping whichever seed one happened to run.
    """
    if not models or any(not m.hidden or len(m.hidden) != 1 for m in models):
        raise InvalidInput("Expected fusion models with one hidden layer each to ensemble")
    if any(m.mean != models[0].mean or m.scale != models[0].scale for m in models):
        raise InvalidInput("Expected fusion models fitted with the same feature scaling to ensemble")
    n = len(models)
    w = np.concatenate([np.asarray(m.hidden[0][0]) for m in models], axis=1)
    b = np.concatenate([np.asarray(m.hidden[0][1]) for m in models])
    return Ranker(
        coef=[float(v) / n for m in models for v in m.coef],
        intercept=float(np.mean([m.intercept for m in models])),
        names=models[0].names,
        mean=models[0].mean,
        scale=models[0].scale,
        meta={**models[0].meta, "seeds": [m.meta.get("seed") for m in models]},
        hidden=[(w.tolist(), b.tolist())],
    )


def fit_seeds(data: FusionData, n: int, *, c: float, hidden: int, seed: int) -> Ranker:
    """:func:`fit` with seeds ``seed .. seed + n - 1``, as one :func:`ensemble` (just :func:`fit` for ``n`` 1)."""
    models = [fit(data, c=c, hidden=hidden, seed=seed + i) for i in range(max(1, n))]
    return models[0] if len(models) == 1 else ensemble(models)


def _weights(data: FusionData) -> np.ndarray:
    """Row weights that give every source the same total weight (mean 1), so no one set decides the model."""
    sources = [ep["source"] for ep in data.episodes]
    per_source: dict[str, int] = {}
    for src, x in zip(sources, data.x):
        per_source[src] = per_source.get(src, 0) + len(x)
    total = sum(per_source.values())
    return np.concatenate(
        [np.full(len(x), total / (len(per_source) * per_source[src])) for src, x in zip(sources, data.x)]
    )


def fit(data: FusionData, *, c: float = 1.0, hidden: int = 0, seed: int = 0) -> Ranker:
    """The fusion model on the pooled rows (features standardised; the scale is kept in the model).

    ``hidden=0``: a logistic regression (``c``: inverse regularisation). ``hidden=n``: one tanh layer
    of ``n`` units (sklearn's MLPClassifier, L2 ``1 / c``), exported as plain weights.
    """
    x = np.concatenate(data.x)
    y = np.concatenate(data.y)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale
    meta = {
        "rows": int(len(y)),
        "positives": int(y.sum()),
        "episodes": len(data.x),
        "C": c,
        "hidden": hidden,
        "seed": seed,
    }
    if hidden:
        from sklearn.neural_network import MLPClassifier

        # MLPClassifier takes no sample weights: each source is resampled to the same number of rows.
        rng = np.random.default_rng(seed)
        w = _weights(data)
        idx = rng.choice(len(y), size=len(y), replace=True, p=w / w.sum())
        mlp = MLPClassifier(
            hidden_layer_sizes=(hidden,),
            activation="tanh",
            alpha=1.0 / c,
            max_iter=300,
            early_stopping=True,
            random_state=seed,
        )
        mlp.fit(z[idx], y[idx])
        return Ranker(
            coef=[float(v) for v in mlp.coefs_[1][:, 0]],
            intercept=float(mlp.intercepts_[1][0]),
            names=FEATURES,
            mean=[float(v) for v in mean],
            scale=[float(v) for v in scale],
            meta=meta,
            hidden=[(mlp.coefs_[0].tolist(), mlp.intercepts_[0].tolist())],
        )
    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression(C=c, max_iter=2000)
    clf.fit(z, y, sample_weight=_weights(data))
    return Ranker(
        coef=[float(v) for v in clf.coef_[0]],
        intercept=float(clf.intercept_[0]),
        names=FEATURES,
        mean=[float(v) for v in mean],
        scale=[float(v) for v in scale],
        meta=meta,
    )


def finetune(
    data: FusionData, base: Ranker, *, anchor: float = 1.0, steps: int = 300, lr: float = 0.01, seed: int = 0
) -> Ranker:
    """``base`` adapted to ``data`` (e.g. episodes of synthetic tasks of the user's corpus).

    Full-batch Adam on the mean log-loss of ``data``'s rows plus ``anchor`` times the mean squared
    distance of the weights from ``base``'s, keeping ``base``'s feature scaling: a few hundred
    synthetic tasks move the model toward this corpus without forgetting what the shipped model
    learned from thousands of declared tasks (with ``anchor`` 0 it is a plain refit from ``base``).
    Rows are weighted per source as in :func:`fit`.
    """
    import torch

    torch.manual_seed(seed)
    x = torch.tensor((np.concatenate(data.x) - np.asarray(base.mean)) / np.asarray(base.scale), dtype=torch.float32)
    y = torch.tensor(np.concatenate(data.y), dtype=torch.float32)
    w = torch.tensor(_weights(data), dtype=torch.float32)
    start = [torch.tensor(np.asarray(v, dtype=np.float32)) for layer in base.hidden for v in layer] + [
        torch.tensor(np.asarray(base.coef, dtype=np.float32)),
        torch.tensor([base.intercept], dtype=torch.float32),
    ]
    params = [t.clone().requires_grad_(True) for t in start]
    opt = torch.optim.Adam(params, lr=lr)
    n_start = sum(t.numel() for t in start)

    def forward() -> torch.Tensor:
        z = x
        for i in range(len(base.hidden)):
            z = torch.tanh(z @ params[2 * i] + params[2 * i + 1])
        return z @ params[-2] + params[-1]

    for _ in range(steps):
        opt.zero_grad()
        loss = (torch.nn.functional.binary_cross_entropy_with_logits(forward(), y, reduction="none") * w).mean()
        loss = loss + anchor * sum(((p - s0) ** 2).sum() for p, s0 in zip(params, start)) / n_start
        loss.backward()
        opt.step()
    vals = [p.detach().numpy().astype(float) for p in params]
    hidden = [(vals[2 * i].tolist(), vals[2 * i + 1].tolist()) for i in range(len(base.hidden))]
    meta = {
        **base.meta,
        "finetuned": {
            "rows": int(len(y)),
            "positives": int(y.sum()),
            "episodes": len(data.x),
            "anchor": anchor,
            "steps": steps,
            "lr": lr,
            "seed": seed,
        },
    }
    return Ranker(
        coef=vals[-2].tolist(),
        intercept=float(vals[-1][0]),
        names=base.names,
        mean=base.mean,
        scale=base.scale,
        meta=meta,
        hidden=hidden,
    )


def split(data: FusionData, share: float, seed: int = 0) -> tuple[FusionData, FusionData]:
    """(fit part, check part): whole tasks go to one side (both policies' episodes of a task together)."""
    import hashlib

    def held(ep: dict[str, Any]) -> bool:
        h = hashlib.sha256(f"{seed}/{ep['source']}/{ep['task'].task_id}".encode()).digest()
        return h[0] / 256 < share

    a, b = FusionData(), FusionData()
    for x, y, ep in zip(data.x, data.y, data.episodes):
        part = b if held(ep) else a
        part.x.append(x)
        part.y.append(y)
        part.episodes.append(ep)
    return a, b


def recall_table(data: FusionData, model: Ranker, ks: tuple[int, ...] = (5, 10, 20)) -> dict[str, dict[str, float]]:
    """Per source and policy: document recall@k of hybrid, the policy alone and the fused ranking (by document)."""
    from sieve.eval.metrics import recall_at_k

    out: dict[str, dict[str, list[float]]] = {}
    for ep in data.episodes:
        task = ep["task"]
        closing = ClosingPool(ep["hybrid"], ep["cos"], ep["cover"])
        fused = fuse(ep["returned"], closing, model, max(ks), group_by_doc=True)
        for system, ranking in (("hybrid", ep["hybrid"]), ("policy", ep["returned"]), ("fused", fused)):
            docs = [e.doc_id for e in ranking]
            row = out.setdefault(f"{ep['source']}/{ep['policy']}@k{ep.get('k', 20)}/{system}", {})
            for k in ks:
                row.setdefault(f"R@{k}", []).append(recall_at_k(docs, task.gold_ids, k))
    return {name: {m: float(np.mean(v)) for m, v in row.items()} for name, row in out.items()}


def main(argv: list[str] | None = None) -> None:
    from sieve.eval.data import load_sets, open_eval_index
    from sieve.retriever.config import RetrieverConfig

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", action="append", required=True, help="Data dir (corpus.jsonl + tasks.jsonl); repeat.")
    ap.add_argument("--limit", type=int, default=None, help="Only the first N tasks of each dir.")
    ap.add_argument("--policies", default="learned,heuristic", help="Policies whose episodes are pooled.")
    ap.add_argument("--k", type=int, default=20, help="Evidence set size of the episodes (the eval's depth).")
    ap.add_argument("--c", type=float, default=1.0, help="Inverse regularisation strength.")
    ap.add_argument(
        "--offtopic",
        type=float,
        default=0.0,
        help="Share of episodes copied with another question's policy ranking (robustness to drift).",
    )
    ap.add_argument("--hidden", type=int, default=0, help="Units of one tanh layer (0: logistic regression).")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--ensemble",
        type=int,
        default=1,
        help="Fit this many models (seeds seed, seed+1, ...; needs --hidden) and ship the mean of their logits.",
    )
    ap.add_argument(
        "--check",
        type=float,
        default=0.3,
        help="Share of tasks held apart to print an out-of-sample table before the final fit on all.",
    )
    ap.add_argument("--out", type=Path, required=True, help="Where to write the model JSON.")
    ap.add_argument(
        "--episodes",
        type=Path,
        action="append",
        default=[],
        help="Pickle of collected episodes: read when it exists (refit without rerunning), else written; "
        "repeat to pool several existing ones (e.g. episodes of k = 10 and of k = 20).",
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.episodes and all(p.is_file() for p in args.episodes):
        data = FusionData()
        for path in args.episodes:
            with path.open("rb") as f:
                part = pickle.load(f)
            data.x += part.x
            data.y += part.y
            data.episodes += part.episodes
    else:
        if len(args.episodes) > 1:
            ap.error("several --episodes files must all exist (collect each with its own run first)")
        config = RetrieverConfig()
        data = FusionData()
        for d in args.data:
            sets, maps = load_sets([d])
            tasks = sets[0].tasks[: args.limit] if args.limit else sets[0].tasks
            index = open_eval_index(sets, maps, config)
            collect(
                index,
                tasks,
                [p.strip() for p in args.policies.split(",") if p.strip()],
                k=args.k,
                data=data,
                source=f"{Path(d).parent.name}/{Path(d).name}",
            )
        if args.episodes:
            with args.episodes[0].open("wb") as f:
                pickle.dump(data, f)
    indexes: dict[str, CorpusIndex] = {}
    stale = any("cover" not in ep for ep in data.episodes)  # collected before the cover features
    if args.offtopic > 0 or stale:
        config = RetrieverConfig()
        for d in args.data:
            sets, maps = load_sets([d])
            indexes[f"{Path(d).parent.name}/{Path(d).name}"] = open_eval_index(sets, maps, config, progress=False)
    if stale:
        logger.info("gave %d older episodes their question cover", add_cover(data, indexes))
    refeaturize(data)
    if args.offtopic > 0:
        logger.info("added %d off-topic episodes", add_offtopic(data, indexes, args.offtopic, args.seed))
    if args.check > 0:
        part, held = split(data, args.check, args.seed)
        trial = fit_seeds(part, args.ensemble, c=args.c, hidden=args.hidden, seed=args.seed)
        logger.info("held-apart tasks (%d episodes), model fitted on the other %d:", len(held.x), len(part.x))
        for name, row in recall_table(held, trial).items():
            logger.info("  %-48s %s", name, "  ".join(f"{m} {v:.3f}" for m, v in row.items()))
    model = fit_seeds(data, args.ensemble, c=args.c, hidden=args.hidden, seed=args.seed)
    model.meta["data"] = [str(d) for d in args.data]
    model.meta["limit"] = args.limit
    model.meta["policies"] = args.policies
    model.save(args.out)
    logger.info("all tasks, in sample:")
    for name, row in recall_table(data, model).items():
        logger.info("  %-48s %s", name, "  ".join(f"{m} {v:.3f}" for m, v in row.items()))
    logger.info("weights: %s", dict(zip(FEATURES, (round(c, 3) for c in model.coef))))
    logger.info("wrote %s", args.out)


if __name__ == "__main__":
    main()


__all__ = ["FusionData", "add_cover", "collect", "ensemble", "finetune", "fit", "fit_seeds", "main", "recall_table"]
