"""Fit the ranker (:class:`~sieve.agent.ranking.model.Ranker`) on pooled episodes, or fine-tune one, and check it.

A logistic regression (or one small tanh layer) on standardised features is fitted on all pools
together, every source weighted alike, so no one kind of question decides the weights
(:func:`fit`; several seeds averaged by :func:`fit_seeds`). :func:`finetune` adapts a fitted ranker
to new episodes (a user's synthetic tasks) while holding it near its weights.
:func:`recall_table` scores a ranker on episodes as recall of hybrid, the policy and the fused set;
:func:`crossval_tables` scores the recipe out of sample, each task by a refit on the other folds.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import numpy as np

from sieve.agent.config import FloorConfig
from sieve.agent.ranking.features import FEATURES, ClosingPool
from sieve.agent.ranking.model import Ranker, fuse
from sieve.core.errors import InvalidInput

if TYPE_CHECKING:
    from collections.abc import Callable

    import torch

    from sieve.train.ranking.episodes import RankingData


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


def fit_seeds(data: RankingData, n: int, *, c: float, hidden: int, seed: int) -> Ranker:
    """:func:`fit` with seeds ``seed .. seed + n - 1``, as one :func:`ensemble` (just :func:`fit` for ``n`` 1)."""
    models = [fit(data, c=c, hidden=hidden, seed=seed + i) for i in range(max(1, n))]
    return models[0] if len(models) == 1 else ensemble(models)


def _weights(data: RankingData) -> np.ndarray:
    """Row weights that give every source the same total weight (mean 1), so no one set decides the model."""
    sources = [ep["source"] for ep in data.episodes]
    per_source: dict[str, int] = {}
    for src, x in zip(sources, data.x):
        per_source[src] = per_source.get(src, 0) + len(x)
    total = sum(per_source.values())
    return np.concatenate(
        [np.full(len(x), total / (len(per_source) * per_source[src])) for src, x in zip(sources, data.x)]
    )


def fit(data: RankingData, *, c: float = 1.0, hidden: int = 0, seed: int = 0) -> Ranker:
    """The ranker on the pooled rows (features standardised; the scale is kept in the model).

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
    scaling: dict[str, Any] = {"mean": [float(v) for v in mean], "scale": [float(v) for v in scale], "meta": meta}
    if hidden:
        return _fit_mlp(z, y, _weights(data), scaling, c=c, hidden=hidden, seed=seed)
    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression(C=c, max_iter=2000)
    clf.fit(z, y, sample_weight=_weights(data))
    return Ranker(coef=[float(v) for v in clf.coef_[0]], intercept=float(clf.intercept_[0]), names=FEATURES, **scaling)


def _fit_mlp(
    z: np.ndarray, y: np.ndarray, w: np.ndarray, scaling: dict[str, Any], *, c: float, hidden: int, seed: int
) -> Ranker:
    """:func:`fit`'s one tanh layer of ``hidden`` units on standardised rows ``z`` (``w``: row weights)."""
    from sklearn.neural_network import MLPClassifier

    # MLPClassifier takes no sample weights: each source is resampled to the same number of rows.
    rng = np.random.default_rng(seed)
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
        hidden=[(mlp.coefs_[0].tolist(), mlp.intercepts_[0].tolist())],
        **scaling,
    )


def finetune(
    data: RankingData, base: Ranker, *, anchor: float = 1.0, steps: int = 300, lr: float = 0.01, seed: int = 0
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
    vals = _anchored_adam(x, y, w, start, len(base.hidden), anchor=anchor, steps=steps, lr=lr)
    hidden = [(vals[2 * i].tolist(), vals[2 * i + 1].tolist()) for i in range(len(base.hidden))]
    tuned = {"anchor": anchor, "steps": steps, "lr": lr, "seed": seed}
    meta = {
        **base.meta,
        "finetuned": {"rows": int(len(y)), "positives": int(y.sum()), "episodes": len(data.x), **tuned},
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


def _anchored_adam(
    x: torch.Tensor,
    y: torch.Tensor,
    w: torch.Tensor,
    start: list[torch.Tensor],
    n_hidden: int,
    *,
    anchor: float,
    steps: int,
    lr: float,
) -> list[np.ndarray]:
    """:func:`finetune`'s optimisation: the weights ``start`` (each hidden layer's weights and biases,
    then the output weights and bias) after ``steps`` of Adam, as float arrays."""
    import torch

    params = [t.clone().requires_grad_(True) for t in start]
    opt = torch.optim.Adam(params, lr=lr)
    n_start = sum(t.numel() for t in start)

    def forward() -> torch.Tensor:
        z = x
        for i in range(n_hidden):
            z = torch.tanh(z @ params[2 * i] + params[2 * i + 1])
        return z @ params[-2] + params[-1]

    for _ in range(steps):
        opt.zero_grad()
        loss = (torch.nn.functional.binary_cross_entropy_with_logits(forward(), y, reduction="none") * w).mean()
        loss = loss + anchor * sum(((p - s0) ** 2).sum() for p, s0 in zip(params, start)) / n_start
        loss.backward()
        opt.step()
    return [p.detach().numpy().astype(float) for p in params]


def _episode_recalls(
    ep: dict[str, Any], model: Ranker, ks: tuple[int, ...], floor: FloorConfig
) -> dict[str, dict[str, float]]:
    """One episode's recall@k of hybrid, the policy alone and the fused ranking (see :func:`recall_table`)."""
    from sieve.eval.metrics import recall_at_k, span_recall_at_k

    task = ep["task"]
    closing = ClosingPool(ep["hybrid"], ep["cos"], ep["cover"])
    spans = bool(task.gold_spans)
    fused = fuse(
        ep["returned"],
        closing,
        model,
        max(ks),
        group_by_doc=not spans,
        doc_decay=floor.doc_decay,
        head_cap=floor.head_cap,
        speaker_discount=floor.speaker_discount,
        question=task.question,
    )
    out: dict[str, dict[str, float]] = {}
    for system, ranking in (("hybrid", ep["hybrid"]), ("policy", ep["returned"]), ("fused", fused)):
        if spans:
            found = [(e.doc_id, *ep["ranges"][e.chunk_id]) for e in ranking if e.chunk_id in ep["ranges"]]
            out[system] = {f"SR@{k}": span_recall_at_k(found, task.gold_spans, k) for k in ks}
        else:
            docs = [e.doc_id for e in ranking]
            out[system] = {f"R@{k}": recall_at_k(docs, task.gold_ids, k) for k in ks}
    return out


def _table(rows: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, float]]:
    return {name: {m: float(np.mean(v)) for m, v in row.items()} for name, row in rows.items()}


def _add(rows: dict[str, dict[str, list[float]]], ep: dict[str, Any], recalls: dict[str, dict[str, float]]) -> None:
    for system, vals in recalls.items():
        row = rows.setdefault(f"{ep['source']}/{ep['policy']}@k{ep.get('k', 20)}/{system}", {})
        for m, v in vals.items():
            row.setdefault(m, []).append(v)


def recall_table(
    data: RankingData, model: Ranker, ks: tuple[int, ...] = (5, 10, 20), *, floor: FloorConfig | None = None
) -> dict[str, dict[str, float]]:
    """Per source and policy: recall@k of hybrid, the policy alone and the fused ranking.

    Sets with ``gold_spans`` are scored as ``sieve eval`` scores them, by span recall (``SR@k``) of
    the chunk ranking as served (``floor``'s per-document decay and head cap: the agent's defaults);
    other sets by document recall (``R@k``) of the ranking one chunk per document.
    """
    floor = floor or FloorConfig()
    rows: dict[str, dict[str, list[float]]] = {}
    for ep in data.episodes:
        _add(rows, ep, _episode_recalls(ep, model, ks, floor))
    return _table(rows)


def fold_of(ep: dict[str, Any], folds: int) -> int:
    """The fold of ``ep``'s task (a hash of its source and task id: a task's episodes stay together)."""
    return hashlib.sha256(f"{ep['source']}/{ep['task'].task_id}".encode()).digest()[0] % folds


def _in_fold(f: int, folds: int) -> Callable[[dict[str, Any]], bool]:
    """Whether an episode's task falls in fold ``f`` of ``folds``."""
    return lambda ep: fold_of(ep, folds) == f


def crossval_tables(
    data: RankingData,
    folds: int,
    *,
    c: float,
    hidden: int,
    ensemble: int = 1,
    seed: int = 0,
    baseline: Ranker | None = None,
    ks: tuple[int, ...] = (5, 10, 20),
) -> dict[str, dict[str, dict[str, float]]]:
    """Out-of-sample tables of :func:`recall_table`: every task is scored by a ranker fitted (as
    :func:`fit_seeds`) on the other ``folds - 1`` folds; ``{"refit": table}``, plus ``"baseline"``: ``baseline`` on the same tasks.

    On a set of 20 questions one held-apart split leaves a handful to judge by; k folds score every one.
    """
    from sieve.train.ranking.episodes import partition

    floor = FloorConfig()
    if folds < 2:
        raise InvalidInput(f"Expected at least 2 folds, got {folds}")
    rows: dict[str, dict[str, dict[str, list[float]]]] = {"refit": {}, **({"baseline": {}} if baseline else {})}
    for f in range(folds):
        rest, held = partition(data, _in_fold(f, folds))
        if not held.episodes:
            continue
        refit = fit_seeds(rest, ensemble, c=c, hidden=hidden, seed=seed)
        for ep in held.episodes:
            _add(rows["refit"], ep, _episode_recalls(ep, refit, ks, floor))
            if baseline is not None:
                _add(rows["baseline"], ep, _episode_recalls(ep, baseline, ks, floor))
    return {name: _table(r) for name, r in rows.items()}


__all__ = ["crossval_tables", "ensemble", "finetune", "fit", "fit_seeds", "fold_of", "recall_table"]
