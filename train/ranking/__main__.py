"""Fit the closing ranker (:mod:`sieve.agent.ranking`, the fusion model) on declared training data.

For every task of every ``--data`` dir: one episode of each policy with the floor off, the pool of
its ranking and the question's hybrid search, its features and labels
(:mod:`sieve.train.ranking.episodes`); the ranker is fitted on all pools together
(:mod:`sieve.train.ranking.fit`) and written as JSON.

Only declared data may be used: ``../shared/train/*``, SciFact's ``tasks_train.jsonl``, the tuning
slices of ``eval/tuning_sets.json``, synthetic tasks of the user's corpus. Example::

    python -m sieve.train.ranking --data ../shared/train/hotpotqa-train --data ../shared/train/2wikimultihopqa-train \\
        --out fusion.json

``--folds 5`` also prints each task's recall under a refit on the other folds, beside the shipped
ranker's (``--baseline``): the out-of-sample check a small set (20 documentation questions) needs.
"""

from __future__ import annotations

import argparse
import logging
import pickle
from pathlib import Path
from typing import TYPE_CHECKING

from sieve.agent.ranking.features import FEATURES
from sieve.train.ranking.episodes import RankingData, add_cover, add_offtopic, collect, refeaturize, split
from sieve.train.ranking.fit import crossval_tables, fit_seeds, recall_table

if TYPE_CHECKING:
    from sieve.agent.ranking.model import Ranker
    from sieve.retriever.index import CorpusIndex

logger = logging.getLogger(__name__)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m sieve.train.ranking", description=__doc__.split("\n\n")[0])
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
    ap.add_argument(
        "--folds",
        type=int,
        default=0,
        help="Also print a cross-validated table: each task scored by a refit on the other folds (e.g. 5).",
    )
    ap.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="A ranker JSON scored beside the refits in the --folds table (default: the shipped one).",
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
    return ap


def _source(d: str) -> str:
    """An episode's source name: a data dir's parent and own name (``train/hotpotqa-train``)."""
    return f"{Path(d).parent.name}/{Path(d).name}"


def _episodes(args: argparse.Namespace, ap: argparse.ArgumentParser) -> RankingData:
    """The episodes of ``--episodes`` pickles when all exist, else collected from ``--data`` (and pickled)."""
    from sieve.eval.data import load_sets, open_eval_index
    from sieve.retriever.config import RetrieverConfig

    data = RankingData()
    if args.episodes and all(p.is_file() for p in args.episodes):
        for path in args.episodes:
            with path.open("rb") as f:
                part = pickle.load(f)
            data.x += part.x
            data.y += part.y
            data.episodes += part.episodes
        return data
    if len(args.episodes) > 1:
        ap.error("several --episodes files must all exist (collect each with its own run first)")
    config = RetrieverConfig()
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    for d in args.data:
        sets, maps = load_sets([d])
        tasks = sets[0].tasks[: args.limit] if args.limit else sets[0].tasks
        collect(open_eval_index(sets, maps, config), tasks, policies, k=args.k, data=data, source=_source(d))
    if args.episodes:
        with args.episodes[0].open("wb") as f:
            pickle.dump(data, f)
    return data


def _prepare(args: argparse.Namespace, data: RankingData) -> None:
    """Bring ``data``'s rows to this version's features: older episodes get their question cover,
    every row is recomputed, then ``--offtopic`` copies are added."""
    from sieve.eval.data import load_sets, open_eval_index
    from sieve.retriever.config import RetrieverConfig

    indexes: dict[str, CorpusIndex] = {}
    stale = any("cover" not in ep for ep in data.episodes)  # collected before the cover features
    if args.offtopic > 0 or stale:
        config = RetrieverConfig()
        for d in args.data:
            sets, maps = load_sets([d])
            indexes[_source(d)] = open_eval_index(sets, maps, config, progress=False)
    if stale:
        logger.info("gave %d older episodes their question cover", add_cover(data, indexes))
    refeaturize(data)
    if args.offtopic > 0:
        logger.info("added %d off-topic episodes", add_offtopic(data, indexes, args.offtopic, args.seed))


def _log_table(data: RankingData, model: Ranker) -> None:
    for name, row in recall_table(data, model).items():
        logger.info("  %-48s %s", name, "  ".join(f"{m} {v:.3f}" for m, v in row.items()))


def _log_crossval(args: argparse.Namespace, data: RankingData) -> None:
    """The ``--folds`` table: the recipe's out-of-sample recall beside ``--baseline``'s on the same tasks."""
    from sieve.agent.ranking.model import DEFAULT_RANKER, Ranker

    baseline = Ranker.load(args.baseline or DEFAULT_RANKER)
    tables = crossval_tables(
        data, args.folds, c=args.c, hidden=args.hidden, ensemble=args.ensemble, seed=args.seed, baseline=baseline
    )
    logger.info("%d-fold cross-validation (refit: each task by a model fitted on the other folds):", args.folds)
    for name in tables["refit"]:
        for model in ("baseline", "refit") if name.endswith("/fused") else ("refit",):
            label = f"{name} ({model})" if name.endswith("/fused") else name
            logger.info("  %-56s %s", label, "  ".join(f"{m} {v:.3f}" for m, v in tables[model][name].items()))


def main(argv: list[str] | None = None) -> None:
    ap = _parser()
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    data = _episodes(args, ap)
    _prepare(args, data)
    if args.check > 0:
        part, held = split(data, args.check, args.seed)
        trial = fit_seeds(part, args.ensemble, c=args.c, hidden=args.hidden, seed=args.seed)
        logger.info("held-apart tasks (%d episodes), model fitted on the other %d:", len(held.x), len(part.x))
        _log_table(held, trial)
    if args.folds:
        _log_crossval(args, data)
    model = fit_seeds(data, args.ensemble, c=args.c, hidden=args.hidden, seed=args.seed)
    model.meta["data"] = [str(d) for d in args.data]
    model.meta["limit"] = args.limit
    model.meta["policies"] = args.policies
    model.save(args.out)
    logger.info("all tasks, in sample:")
    _log_table(data, model)
    logger.info("weights: %s", dict(zip(FEATURES, (round(c, 3) for c in model.coef))))
    logger.info("wrote %s", args.out)


__all__ = ["main"]


if __name__ == "__main__":
    main()
