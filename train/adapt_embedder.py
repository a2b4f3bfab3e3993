"""``sieve train embedder``: adapt the bundled embedder to a collection's own words, with no LLM.

Mine weak pairs from the collection's structure (:mod:`sieve.train.weak_pairs`), hold a share of
them apart, fine-tune the embedder on the rest with sentence-transformers
(``MultipleNegativesRankingLoss``: in-batch negatives plus one mined hard negative per pair, on the
CPU, inside a time budget), save it as a sentence-transformers folder that the ONNX backend exports
like the shipped one, and judge it: on the held-apart pairs (dense recall@10 of the pair's chunk
among the collection's chunks, shipped embedder vs adapted) and, when given, on the user's labelled
questions (``--eval-data``: one ``sieve eval`` per embedder). The adapted embedder is recommended only
when it is better there; it is never installed behind the user's back: a collection keeps its
vectors, and ``--embedder RUN/embedder`` is how it is used (a collection indexed with it records it,
and later commands on that collection use it without the flag).

Published background: GPL (Wang et al., 2022) and anchor-text weak supervision both adapt a dense
retriever to a new domain with (question-like text, passage) pairs instead of labels.
"""

from __future__ import annotations

import json
import logging
import random
import shutil
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sieve.core.defaults import DEFAULT_K
from sieve.core.errors import InvalidInput
from sieve.train.verdict import PairedDiff
from sieve.train.weak_pairs import MINERS, WeakPair, add_hard_negatives, default_kinds, filter_pairs, mine_pairs

if TYPE_CHECKING:
    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.embeddings import Embedder
    from sieve.retriever.index import CorpusIndex
    from sieve.retriever.types import Chunk

logger = logging.getLogger(__name__)


class TooFewPairs(InvalidInput):
    """The collection's structure gives too few pairs to adapt the embedder on (``sieve train all`` skips the stage)."""


@dataclass
class AdaptConfig:
    """How the embedder is adapted (``sieve train embedder``)."""

    kinds: tuple[str, ...] = field(
        default=default_kinds(),
        metadata={"help": "Kinds of pairs to mine (sieve.train.weak_pairs.MINERS; 'turn' only when named)."},
    )
    minutes: float = field(default=20.0, metadata={"help": "Time budget of the fine-tuning itself."})
    epochs: float = field(default=3.0, metadata={"help": "Passes over the training pairs (the budget may end sooner)."})
    batch_size: int = field(default=32, metadata={"help": "Pairs per step: each query's in-batch negatives."})
    learning_rate: float = field(default=2e-5, metadata={"help": "AdamW learning rate (linear decay, 10% warm-up)."})
    max_seq_length: int = field(default=256, metadata={"help": "Tokens of a passage the model reads in training."})
    max_pairs: int = field(default=4000, metadata={"help": "Most training pairs (a random draw beyond it)."})
    holdout: float = field(default=0.1, metadata={"help": "Share of pairs held apart for the verdict."})
    hard_negatives: bool = field(default=True, metadata={"help": "Add one mined hard negative per pair."})
    filter_trivial: bool = field(default=True, metadata={"help": "Drop pairs BM25 alone ranks first by a wide margin."})
    seed: int = field(default=0, metadata={"help": "Split and training seed."})

    def __post_init__(self) -> None:
        self.kinds = tuple(self.kinds)
        unknown = [k for k in self.kinds if k not in MINERS]
        if unknown or not self.kinds:
            raise InvalidInput(f"Expected pair kinds among {', '.join(MINERS)}, got {', '.join(self.kinds) or 'none'}")
        if self.minutes <= 0 or self.epochs <= 0 or self.batch_size < 2 or not 0 < self.holdout < 1:
            raise InvalidInput(
                f"Expected minutes > 0, epochs > 0, batch_size >= 2 and 0 < holdout < 1, got {self.minutes}, "
                f"{self.epochs}, {self.batch_size}, {self.holdout}"
            )


def split_pairs(pairs: list[WeakPair], holdout: float, seed: int) -> tuple[list[WeakPair], list[WeakPair]]:
    """(train, held apart), split by the positive *chunk*: a held pair's chunk is never a training positive.

    Not by document: a page held apart whole would be the one page the adapted model never learns
    (on a 16-page docs set, 2 pages: measured worse on the real questions)."""
    chunks = sorted({p.positive_id for p in pairs})
    rng = random.Random(seed)
    rng.shuffle(chunks)
    n_held = max(1, round(len(chunks) * holdout)) if len(chunks) > 1 else 0
    held_chunks = set(chunks[:n_held])
    train = [p for p in pairs if p.positive_id not in held_chunks]
    held = [p for p in pairs if p.positive_id in held_chunks]
    return train, held


def _deadline_callback(seconds: float) -> Any:
    """A transformers ``TrainerCallback`` that stops training once ``seconds`` have passed (built on
    call, so importing this module loads no torch)."""
    from transformers import TrainerCallback

    class Deadline(TrainerCallback):  # type: ignore[misc]
        def __init__(self) -> None:
            self.end = time.monotonic() + seconds
            self.stopped = False

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            if time.monotonic() >= self.end:
                control.should_training_stop = True
                self.stopped = True
            return control

    return Deadline()


def _columns(pairs: list[WeakPair], cfg: AdaptConfig) -> dict[str, list[str]]:
    """The training set's columns: anchor (query), positive, and with hard negatives a negative for every pair."""
    columns: dict[str, list[str]] = {"anchor": [p.query for p in pairs], "positive": [p.positive for p in pairs]}
    if cfg.hard_negatives:
        # MNRL takes one column shape for a whole batch: a pair without a mined negative borrows another pair's.
        negs = [p.negative for p in pairs if p.negative] or [p.positive for p in pairs]
        rng = random.Random(cfg.seed)
        columns["negative"] = [p.negative or rng.choice(negs) for p in pairs]
    return columns


def _training_args(work: Path, cfg: AdaptConfig, progress: bool) -> Any:
    """The trainer's arguments: CPU, no checkpoints, batches without a repeated query."""
    from sentence_transformers import SentenceTransformerTrainingArguments
    from sentence_transformers.training_args import BatchSamplers

    return SentenceTransformerTrainingArguments(
        output_dir=str(work),
        num_train_epochs=cfg.epochs,
        per_device_train_batch_size=cfg.batch_size,
        learning_rate=cfg.learning_rate,
        warmup_steps=0.1,
        batch_sampler=BatchSamplers.NO_DUPLICATES,  # a repeated query would be its own in-batch negative
        save_strategy="no",
        logging_steps=10,
        report_to="none",
        seed=cfg.seed,
        disable_tqdm=not progress,
        use_cpu=True,
    )


def fine_tune(
    pairs: list[WeakPair], base: str, out: Path, cfg: AdaptConfig, *, progress: bool = True
) -> dict[str, Any]:
    """Fine-tune the sentence-transformers model at ``base`` on ``pairs``; save it to ``out``.

    The model is written beside ``out`` first and renamed into place, so ``out`` holds a whole model
    or nothing; the trainer's scratch folder is removed."""
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
    from sentence_transformers.losses import MultipleNegativesRankingLoss

    from sieve.core.runtime import quiet_hf_progress

    work = out.parent / f".{out.name}-work"
    with quiet_hf_progress():
        model = SentenceTransformer(base, device="cpu")
    model.max_seq_length = cfg.max_seq_length
    args = _training_args(work, cfg, progress)
    deadline = _deadline_callback(cfg.minutes * 60)
    trainer = SentenceTransformerTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_dict(_columns(pairs, cfg)),
        loss=MultipleNegativesRankingLoss(model),
        callbacks=[deadline],
    )
    t0 = time.perf_counter()
    try:
        result = trainer.train()
        model.save(str(work / "model"))
        if out.exists():  # a rerun into the same folder replaces its model whole
            shutil.rmtree(out)
        (work / "model").rename(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "steps": int(trainer.state.global_step),
        "loss": round(float(result.training_loss), 4),
        "seconds": round(time.perf_counter() - t0, 1),
        "stopped_by_budget": bool(deadline.stopped),
        "pairs": len(pairs),
    }


def stored_vectors(index: CorpusIndex, chunks: list[Chunk], page: int = 1000) -> Any:
    """The collection's own vectors of ``chunks``, in order (what its embedder wrote), or None when
    the store lacks one: the shipped side of the verdict need not embed the whole collection again."""
    import numpy as np

    found: dict[str, Any] = {}
    for i in range(0, len(chunks), page):
        found.update(index.get_vectors([c.chunk_id for c in chunks[i : i + page]]))
    if any(c.chunk_id not in found for c in chunks):
        return None
    return np.stack([found[c.chunk_id] for c in chunks])


def pair_hits(
    held: list[WeakPair], chunks: list[Chunk], embedder: Any, k: int = DEFAULT_K, passages: Any = None
) -> list[float]:
    """Per held pair, 1.0 when dense search with ``embedder`` ranks the pair's chunk in the top ``k`` of
    every chunk of the collection, else 0.0. The chunks are embedded as the index embeds them
    (``passage_text``), unless ``passages`` holds their vectors already."""
    import numpy as np

    from sieve.retriever.types import passage_text

    row = {c.chunk_id: i for i, c in enumerate(chunks)}
    if passages is None:
        passages = embedder.embed_passages([passage_text(c.title, c.text, c.heading_path) for c in chunks])
    queries = embedder.embed_queries([p.query for p in held])
    sims = queries @ passages.T
    top = np.argsort(-sims, axis=1)[:, :k]
    return [float(row.get(p.positive_id, -1) in top[i]) for i, p in enumerate(held)]


def prepare_pairs(
    index: CorpusIndex, chunks: list[Chunk], cfg: AdaptConfig
) -> tuple[list[WeakPair], list[WeakPair], dict[str, Any]]:
    """Mine, filter, split and (for training) add hard negatives: (train, held apart, counts)."""
    mined = mine_pairs(chunks, cfg.kinds)
    kept, report = filter_pairs(mined, index if cfg.filter_trivial else None)
    if len(kept) < 2 * cfg.batch_size:
        raise TooFewPairs(
            f"Expected at least {2 * cfg.batch_size} usable pairs to adapt the embedder, got {len(kept)} "
            f"(mined {len(mined)}: {asdict(report)}); the collection may be too small or hold no headings, "
            "links or prose"
        )
    train, held = split_pairs(kept, cfg.holdout, cfg.seed)
    if len(train) > cfg.max_pairs:
        train = random.Random(cfg.seed).sample(train, cfg.max_pairs)
    if cfg.hard_negatives:
        train = add_hard_negatives(train, index, chunks, seed=cfg.seed)
    counts = {
        "mined": {k: sum(p.kind == k for p in mined) for k in cfg.kinds},
        "filtered": asdict(report),
        "train": len(train),
        "held_apart": len(held),
        "hard_negatives": sum(bool(p.negative) for p in train),
    }
    return train, held, counts


def write_pairs(path: Path, pairs: list[WeakPair]) -> None:
    path.write_text("".join(json.dumps(p.to_dict(), ensure_ascii=False) + "\n" for p in pairs), encoding="utf-8")


TaskScorer = Callable[[Path, "RetrieverConfig", "Embedder", Path], dict[str, float]]
"""``(data dir, retriever config, embedder, report folder) -> {task id: recall@10}``: how labelled
questions are scored (``sieve.eval.runner.agent_recall_per_task``; passed in, since evaluation sits
above training)."""


def compare_sets(name: str, shipped: list[float], adapted: list[float], margin: float) -> dict[str, Any]:
    """One set's paired comparison (shipped vs adapted), noise ``margin`` standard errors of the paired difference."""
    d = PairedDiff.of(shipped, adapted, margin)
    return {
        "set": name,
        "n": len(shipped),
        "shipped": round(d.shipped, 3),
        "adapted": round(d.retrained, 3),
        "diff": round(d.diff, 3),
        "noise": None if d.noise == float("inf") else round(d.noise, 3),
        "better": d.above_noise,
        "worse": d.below_noise,
    }


def _compare(
    index: CorpusIndex,
    adapted: Embedder,
    adapted_cfg: RetrieverConfig,
    retriever_config: RetrieverConfig,
    chunks: list[Chunk],
    held: list[WeakPair],
    out: Path,
    eval_data: Path | None,
    score_tasks: TaskScorer | None,
    margin: float,
) -> list[dict[str, Any]]:
    """The shipped and the adapted embedder on the held-apart pairs, then on ``eval_data``'s questions if given."""
    sets = [
        compare_sets(
            "held-apart pairs",
            pair_hits(held, chunks, index.embedder, passages=stored_vectors(index, chunks)),
            pair_hits(held, chunks, adapted),
            margin,
        )
    ]
    if eval_data is not None and score_tasks is not None:
        shipped_rows = score_tasks(eval_data, retriever_config, index.embedder, out / "eval-shipped")
        adapted_rows = score_tasks(eval_data, adapted_cfg, adapted, out / "eval-adapted")
        ids = sorted(shipped_rows)
        sets.append(
            compare_sets(
                f"--eval-data {eval_data.name}", [shipped_rows[i] for i in ids], [adapted_rows[i] for i in ids], margin
            )
        )
    return sets


def adapt(
    index: CorpusIndex,
    cfg: AdaptConfig,
    out: Path,
    retriever_config: RetrieverConfig,
    *,
    eval_data: Path | None = None,
    score_tasks: TaskScorer | None = None,
    margin: float = 2.0,
    progress: bool = True,
) -> dict[str, Any]:
    """Mine, fine-tune, judge; writes ``out/embedder``, the pairs, ``summary.json``. See the module doc."""
    from sieve.retriever.embeddings import Embedder
    from sieve.train.task_io import all_chunks

    if eval_data is not None and score_tasks is None:
        raise InvalidInput(
            "Expected a score_tasks function with eval_data (e.g. sieve.eval.runner.agent_recall_per_task)"
        )
    t0 = time.perf_counter()
    chunks = all_chunks(index)
    train, held, counts = prepare_pairs(index, chunks, cfg)
    out.mkdir(parents=True, exist_ok=True)
    write_pairs(out / "train_pairs.jsonl", train)
    write_pairs(out / "heldout_pairs.jsonl", held)
    logger.info("Adapting the embedder on %d pairs (%d held apart): %s", len(train), len(held), counts["mined"])
    model_dir = out / "embedder"
    stats = fine_tune(train, index.embedder.path, model_dir, cfg, progress=progress)
    adapted_cfg = replace(retriever_config, embedder_path=str(model_dir))
    adapted = Embedder.from_config(adapted_cfg)  # the ONNX backend exports it here, as it did the shipped one
    sets = _compare(index, adapted, adapted_cfg, retriever_config, chunks, held, out, eval_data, score_tasks, margin)
    deciding = sets[-1]
    better = bool(deciding["better"]) and not any(s["worse"] for s in sets)
    result = {
        "better": better,
        "deciding_set": deciding["set"],
        "sets": sets,
        "pairs": counts,
        "training": stats,
        "embedder": str(model_dir),
        "seconds": round(time.perf_counter() - t0, 1),
        "config": {**asdict(cfg), "kinds": list(cfg.kinds)},
    }
    (out / "summary.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


__all__ = [
    "AdaptConfig",
    "TooFewPairs",
    "adapt",
    "compare_sets",
    "fine_tune",
    "pair_hits",
    "prepare_pairs",
    "split_pairs",
    "stored_vectors",
    "write_pairs",
]
