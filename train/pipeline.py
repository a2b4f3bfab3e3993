"""``sieve train all``: index → synthesize → RL → held-out report, in one command.

Two routes. The default, ``learned`` (CPU, minutes): GRPO of the small learned-policy network,
starting from the checkpoint shipped with Sieve, then a report comparing the heuristic, the
shipped checkpoint and the retrained one on synthesized tasks held out from training (and on
labelled questions of the corpus, if given). ``llm`` (GPU machines): SFT warm start of a
language model on heuristic trajectories, then GRPO, then the same kind of report.

Every stage writes into ``OUT`` (tasks, ``rl/`` or ``sft/`` + ``rl/``, ``report.md``); indexing,
synthesis and the learned RL stage resume where an interrupted run stopped.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sieve.core.errors import InvalidInput
from sieve.core.runs import RunArtifact
from sieve.train.adapt_embedder import AdaptConfig
from sieve.train.config import EpisodeConfig, split_tasks
from sieve.train.synth_writers import AUTO, auto_chain, pipeline_writers
from sieve.train.task_io import most_natural, read_written_tasks
from sieve.train.verdict import SetComparison, Verdict, VerdictConfig, decide, fmt_diff

if TYPE_CHECKING:
    from sieve.eval.data import EvalTask
    from sieve.retriever.config import RetrieverConfig

logger = logging.getLogger(__name__)


@dataclass
class PipelineConfig:
    corpus: Path = field(default=Path("corpus.jsonl"), metadata={"help": "File or folder to index."})
    collection: str = field(default="default", metadata={"help": "Collection name."})
    out: Path = field(default=Path("runs/train"), metadata={"help": "Run folder."})
    route: Literal["learned", "llm"] = field(
        default="learned",
        metadata={
            "help": "learned: the small policy network by GRPO (CPU); llm: SFT + GRPO of a language model (GPU)."
        },
    )
    n: int = field(default=60, metadata={"help": "Tasks to synthesize."})
    generator: str = field(
        default=AUTO,
        metadata={
            "help": "Task writer: auto (the writers of sieve.train.synth_writers.auto_chain in turn, each filling "
            "up what the one before left) or any writer of sieve.train.synth_writers.WRITERS that needs no model "
            "(pipeline_writers)."
        },
    )
    minutes: float | None = field(
        default=None,
        metadata={
            "help": "Wall-clock budget of the whole run (learned route): training gets what indexing, synthesis and "
            "the checks leave, and no step cap ends it early unless `steps` is set."
        },
    )
    steps: int | None = field(
        default=None, metadata={"help": "Most GRPO updates (unset: the RL config's default, or no cap with `minutes`)."}
    )
    init: str = field(
        default="default",
        metadata={
            "help": "Where training starts. learned: 'default' (the shipped checkpoint), 'none' (a fresh network) or a "
            "checkpoint folder; llm: 'default' (SmolLM2-135M) or an HF model folder."
        },
    )
    eval_tasks: Path | None = field(
        default=None,
        metadata={
            "help": "Labelled questions of this corpus to report on as well (never trained on); they decide the verdict."
        },
    )
    holdout: float = field(default=0.25, metadata={"help": "Share of tasks held out for the report."})
    sft_epochs: float = field(default=1.0, metadata={"help": "SFT epochs."})
    llm_steps: int = field(
        default=10,
        metadata={
            "help": "llm route: GRPO steps when neither `steps` nor `minutes` is set (CPU smoke size; raise on a GPU)."
        },
    )
    seed: int = field(default=0, metadata={"help": "Synthesis and split seed."})
    embedder: Literal["adapt", "keep"] = field(
        default="adapt",
        metadata={
            "help": "adapt: fine-tune the embedder on (query, passage) pairs mined from the corpus's structure "
            "(headings, titles, links, sentences, turns), re-embed the collection into a new version and keep it "
            "only if Sieve as served is better with it (learned route; skipped when the corpus gives too few "
            "pairs); keep: the shipped embedder."
        },
    )
    adopt: bool = field(
        default=True,
        metadata={
            "help": "Switch the collection to the parts the verdict found better (sieve adopt; the old version "
            "stays until dropped); a worse part is never installed. Off: only write the run folder."
        },
    )
    ranker: Literal["keep", "retrain"] = field(
        default="keep",
        metadata={
            "help": "keep: serve the shipped closing ranker with the retrained policy; retrain: also fine-tune the ranker "
            "on the policy's episodes of the synthetic tasks (experimental: on locomo-dev it gained on held-apart "
            "synthetic tasks and lost on the real questions; judge it with --eval-tasks)."
        },
    )
    adapt: AdaptConfig = field(
        default_factory=AdaptConfig,
        metadata={"help": "How the embedder is adapted (sieve.train.adapt_embedder); --minutes sets its budget."},
    )
    verdict: VerdictConfig = field(
        default_factory=VerdictConfig,
        metadata={"help": "When the retrained policy counts as better than the shipped one (sieve.train.verdict)."},
    )
    episode: EpisodeConfig = field(
        default_factory=lambda: EpisodeConfig(
            budget_tokens=1536, max_turns=3, search_k=3, search_tokens=512, max_new_tokens=96, heuristic_queries=2
        )
    )

    def __post_init__(self) -> None:
        self.corpus, self.out = Path(self.corpus), Path(self.out)
        if not self.corpus.exists():
            raise InvalidInput(f"Expected --corpus to be an existing file or folder, got {str(self.corpus)!r}")
        if self.n < 4:
            raise InvalidInput(f"Expected --n >= 4 (train and held-out both need tasks), got {self.n}")
        if self.generator not in pipeline_writers():
            raise InvalidInput(f"Expected generator in {pipeline_writers()}, got {self.generator!r}")
        if self.embedder not in ("adapt", "keep"):
            raise InvalidInput(f"Expected embedder in ('adapt', 'keep'), got {self.embedder!r}")
        if self.ranker not in ("keep", "retrain"):
            raise InvalidInput(f"Expected ranker in ('keep', 'retrain'), got {self.ranker!r}")
        if self.route not in ("learned", "llm"):
            raise InvalidInput(f"Expected route in ('learned', 'llm'), got {self.route!r}")
        if self.minutes is not None and self.minutes <= 0:
            raise InvalidInput(f"Expected --minutes > 0, got {self.minutes}")
        if self.steps is not None and self.steps < 1:
            raise InvalidInput(f"Expected --steps >= 1, got {self.steps}")
        if self.eval_tasks is not None and not Path(self.eval_tasks).is_file():
            raise InvalidInput(f"Expected --eval-tasks to be an existing JSONL file, got {str(self.eval_tasks)!r}")


def _write(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tasks), encoding="utf-8")
    return path


def run_pipeline(cfg: PipelineConfig, retriever_config: RetrieverConfig, *, progress: bool = True) -> dict[str, Any]:
    """Index, synthesize, train, compare with the shipped default; writes ``summary.json`` and ``report.md``."""
    from sieve.retriever import CorpusIndex
    from sieve.eval.data import read_tasks
    from sieve.train.synth import SynthConfig, no_tasks_message, synthesize

    t0 = time.perf_counter()
    cfg.out.mkdir(parents=True, exist_ok=True)
    index = CorpusIndex.open(retriever_config, cfg.collection, create=True)
    indexed = index.writer.index_path(cfg.corpus, progress=progress)
    logger.info(
        "Indexed %s: %d chunks written, %d unchanged documents", cfg.corpus, indexed.chunks_written, indexed.unchanged
    )
    t_synth = time.perf_counter()
    writers = auto_chain() if cfg.generator == AUTO else (cfg.generator,)
    for generator in writers:
        synth = synthesize(
            index, cfg.out / "tasks.jsonl", SynthConfig(n=cfg.n, seed=cfg.seed, generator=generator), progress=progress
        )
        if synth.written + synth.existing >= cfg.n:
            break
        if generator != writers[-1]:
            logger.info(
                "The %s writer wrote %d of %d tasks; the next one fills up the rest",
                generator,
                synth.written + synth.existing,
                cfg.n,
            )
    synth_s = time.perf_counter() - t_synth
    empty = no_tasks_message(synth, writers[-1], str(cfg.corpus))
    if empty:
        raise InvalidInput(f"{empty} (the index of {cfg.corpus} is kept in collection {cfg.collection!r}.)")
    tasks = read_tasks(cfg.out / "tasks.jsonl")
    train_tasks, held = split_tasks(tasks, cfg.holdout, cfg.seed)
    _write(cfg.out / "train_tasks.jsonl", train_tasks)
    _write(cfg.out / "heldout_tasks.jsonl", held)
    if cfg.route == "learned":
        result = _learned_route(cfg, index, retriever_config, synth, train_tasks, held, progress, t0)
    else:
        result = _llm_route(cfg, index, synth, train_tasks, held, progress)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    result["stage_seconds"] = {
        "index": round(indexed.seconds, 1),
        "synth": round(synth_s, 1),
        **result.get("stage_seconds", {}),
    }
    result["config"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()}
    result["summary"] = str(cfg.out / "summary.json")
    (cfg.out / "summary.json").write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    return result


def _rl_minutes(cfg: PipelineConfig, t_pipeline: float, reserve_s: float) -> float | None:
    """The RL stage's share of ``--minutes``: what indexing and synthesis left, less the final checks' cost."""
    if cfg.minutes is None:
        return None
    left = cfg.minutes * 60 - (time.perf_counter() - t_pipeline) - reserve_s
    if left < 30:
        logger.warning(
            "--minutes %g is nearly spent before training (%.0f s left): one update runs", cfg.minutes, max(left, 0.0)
        )
    return max(left, 1.0) / 60


def _learned_route(
    cfg: PipelineConfig,
    index: Any,
    retriever_config: RetrieverConfig,
    synth: Any,
    train_tasks: list[dict[str, Any]],
    held: list[dict[str, Any]],
    progress: bool,
    t_pipeline: float,
) -> dict[str, Any]:
    """GRPO of the learned policy (from the shipped checkpoint by default), then its closing ranker
    retrained on the same tasks; the verdict compares Sieve as served (policy + ranker) before and after."""
    from sieve.eval.data import read_tasks
    from sieve.train.ranking.corpus import as_eval_tasks

    labelled = read_tasks(cfg.eval_tasks) if cfg.eval_tasks is not None else []
    sets = {name: as_eval_tasks(tasks, name) for name, tasks in ((HELD, held), (LABELLED, labelled)) if tasks}
    served, per_task = _served_shipped(index, sets, progress)
    stage = _embedder_stage(cfg, index, retriever_config, sets, served, t_pipeline, progress)
    index = stage.index  # the adapted version when it is kept: the policy and ranker train on it
    baseline = ADAPTED if stage.kept else "shipped"  # what the retrained policy must beat
    for name in sets:
        if stage.kept:
            served[name][ADAPTED] = stage.rows[name]
    ranker_tasks = len(train_tasks) if cfg.ranker == "retrain" else 0
    reserve = per_task * (sum(len(t) for t in sets.values()) + 2 * ranker_tasks) * 1.2
    minutes = _rl_minutes(cfg, t_pipeline, reserve)
    seconds = {"embedder": round(stage.seconds, 1)}
    t0 = time.perf_counter()
    rl = _train_policy(cfg, index, minutes, progress)
    seconds["rl"], t0 = round(time.perf_counter() - t0, 1), time.perf_counter()
    ranker = _retrain_ranker(cfg, index, rl["model_dir"], train_tasks, progress) if cfg.ranker == "retrain" else None
    seconds["ranker"], t0 = round(time.perf_counter() - t0, 1), time.perf_counter()
    verdict = _judge(cfg, index, rl["model_dir"], sets, served, baseline, LABELLED if labelled else HELD, progress)
    seconds["eval"] = round(time.perf_counter() - t0, 1)
    run, adopted = _record_run(cfg, retriever_config, rl["model_dir"], verdict, stage, progress)
    counts = {
        "synth": synth.to_dict(),
        "n_tasks": synth.written + synth.existing,
        "n_train": len(train_tasks),
        "n_heldout": len(held),
        "n_eval_tasks": len(labelled),
    }
    result = _learned_result(rl, run, adopted, stage, verdict, served, ranker, counts, seconds)
    report = cfg.out / "report.md"
    report.write_text(learned_report(cfg, result, verdict, SERVED_K), encoding="utf-8")
    result["report"] = str(report)
    return result


def _served_shipped(
    index: Any, sets: dict[str, list[EvalTask]], progress: bool
) -> tuple[dict[str, dict[str, list[dict[str, Any]]]], float]:
    """The shipped Sieve as served on every set (it does not change with training), and its seconds per task.

    The cost per task sizes the reserve for the retrained Sieve's pass and the ranker's episodes after training.
    """
    from sieve.agent.policies.learned import LearnedPolicy
    from sieve.train.ranking.corpus import served_scores

    t0 = time.perf_counter()
    served: dict[str, dict[str, list[dict[str, Any]]]] = {
        name: {"shipped": served_scores(index, LearnedPolicy.load(None), tasks, k=SERVED_K, progress=progress)}
        for name, tasks in sets.items()
    }
    return served, (time.perf_counter() - t0) / max(1, sum(len(t) for t in sets.values()))


def _train_policy(cfg: PipelineConfig, index: Any, minutes: float | None, progress: bool) -> dict[str, Any]:
    """GRPO of the learned policy on the train tasks, checked on the held-apart ones (``rl/``)."""
    from sieve.train.learned import LearnedRLConfig, run_learned_rl

    rl_cfg = LearnedRLConfig(
        tasks=cfg.out / "train_tasks.jsonl",
        out=cfg.out / "rl",
        init=cfg.init,
        steps=cfg.steps,
        heldout_tasks=cfg.out / "heldout_tasks.jsonl",
        seed=cfg.seed,
    )
    rl_cfg.minutes = minutes
    return run_learned_rl(index, rl_cfg, progress=progress)


def _retrain_ranker(
    cfg: PipelineConfig, index: Any, model_dir: str, train_tasks: list[dict[str, Any]], progress: bool
) -> dict[str, Any]:
    """The closing ranker retrained on the retrained policy's own episodes, saved beside its weights, so
    one --policy-path serves both (LearnedPolicy.ranker_path)."""
    from sieve.agent.policies.learned import LearnedPolicy
    from sieve.agent.policies.learned.policy import RANKER_FILE
    from sieve.train.ranking.corpus import RankerConfig, retrain_ranker

    return retrain_ranker(
        index,
        LearnedPolicy.load(model_dir),
        train_tasks,
        Path(model_dir) / RANKER_FILE,
        RankerConfig(seed=cfg.seed),
        progress=progress,
    )


def _judge(
    cfg: PipelineConfig,
    index: Any,
    model_dir: str,
    sets: dict[str, list[EvalTask]],
    served: dict[str, dict[str, list[dict[str, Any]]]],
    baseline: str,
    deciding: str,
    progress: bool,
) -> Verdict:
    """The retrained Sieve as served on every set (added to ``served``), and the verdict against ``baseline``."""
    from sieve.agent.policies.learned import LearnedPolicy
    from sieve.train.ranking.corpus import served_scores

    retrained = LearnedPolicy.load(model_dir)
    for name, tasks in sets.items():
        served[name]["retrained"] = served_scores(index, retrained, tasks, k=SERVED_K, progress=progress)
    comparisons = [
        SetComparison.of(name, rows[baseline], rows["retrained"], cfg.verdict) for name, rows in served.items()
    ]
    return decide(comparisons, deciding, cfg.verdict, SERVED_K)


def _record_run(
    cfg: PipelineConfig, retriever_config: RetrieverConfig, model_dir: str, verdict: Verdict, stage: Any, progress: bool
) -> tuple[Any, str | None]:
    """``run.json`` of the parts found better, and the collection switched to them unless --no-adopt;
    (the RunArtifact, what adopting did or None)."""
    from sieve.train.adopt import adopt_run

    run = RunArtifact(
        cfg.out,
        policy=Path(model_dir) if verdict.better else None,
        embedder=Path(stage.model) if stage.kept and stage.model else None,
        verdict={"policy": verdict.to_dict(), "embedder": stage.to_dict()},
    )
    run.save()
    adopted = (
        adopt_run(retriever_config, cfg.collection, cfg.out, built=stage.version, progress=progress).describe()
        if cfg.adopt and not run.uses_shipped_parts()
        else None
    )
    if stage.version is not None and adopted is None:  # kept, not adopted: the version is the user's to switch to
        logger.info(
            "The adapted version %s stays unswitched: sieve adopt %s -c %s", stage.version.new, cfg.out, cfg.collection
        )
    return run, adopted


def _learned_result(
    rl: dict[str, Any],
    run: Any,
    adopted: str | None,
    stage: Any,
    verdict: Verdict,
    served: dict[str, dict[str, list[dict[str, Any]]]],
    ranker: dict[str, Any] | None,
    counts: dict[str, Any],
    seconds: dict[str, float],
) -> dict[str, Any]:
    """The learned route's part of ``summary.json`` (and what ``report.md`` is written from)."""
    from sieve.train.learned.trainer import mean_scores

    # The policy alone (floor off, as RL scores it) on the held-apart tasks: the RL run's own checks.
    policy_rows = rl.get("heldout_scores") or {}
    evals = (
        {
            HELD: {
                POLICY_NAMES[p]: mean_scores(policy_rows[key])
                for p, key in (("heuristic", "heuristic"), ("shipped", "start"), ("retrained", "end"))
                if key in policy_rows
            }
        }
        if counts["n_heldout"] and policy_rows
        else {}
    )
    return {
        "model_dir": rl["model_dir"],
        "policy_path": rl["model_dir"] if verdict.better else None,
        "run": str(run.folder) if not run.uses_shipped_parts() else None,
        "adopted": adopted,
        "embedder": stage.to_dict(),
        "verdict": verdict.to_dict(),
        "served": {name: {system: served_means(r) for system, r in rows.items()} for name, rows in served.items()},
        "evals": evals,
        "ranker": ranker,
        **counts,
        "rl": {k: v for k, v in rl.items() if k not in ("curve_first_window", "curve_last_window", "heldout_scores")},
        "stage_seconds": seconds,
    }


def _embedder_stage(
    cfg: PipelineConfig,
    index: Any,
    retriever_config: RetrieverConfig,
    sets: dict[str, Any],
    served: dict[str, dict[str, list[dict[str, Any]]]],
    t_pipeline: float,
    progress: bool,
) -> Any:
    """The embedder stage (sieve.train.embedder_stage), inside its share of ``--minutes``."""
    from dataclasses import replace

    from sieve.train.embedder_stage import EmbedderStage, run_embedder_stage

    if cfg.embedder == "keep":
        return EmbedderStage(index, False, "kept as shipped (--embedder keep)")
    adapt_cfg = replace(cfg.adapt, seed=cfg.seed)
    if cfg.minutes is not None:
        left = cfg.minutes * 60 - (time.perf_counter() - t_pipeline)
        adapt_cfg = replace(adapt_cfg, minutes=max(left * EMBEDDER_SHARE, 30.0) / 60)
    shipped = {name: rows["shipped"] for name, rows in served.items()}
    return run_embedder_stage(
        index, retriever_config, adapt_cfg, cfg.out / "adapt", sets, shipped, k=SERVED_K, progress=progress
    )


def served_means(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Means of :func:`sieve.train.ranking.corpus.served_scores` rows: recall@k, all-gold@k, recall@2k, and ``n``."""
    n = max(1, len(rows))
    return {
        "recall": sum(r["recall"] for r in rows) / n,
        "all_gold": sum(r["all_gold"] for r in rows) / n,
        "recall_2k": sum(r["reward"] for r in rows) / n,
        "n": len(rows),
    }


# Sieve as served is judged at the depth users read: recall@10 (and @20 beside it).
SERVED_K = 10
# The embedder's fine-tuning gets this share of what --minutes leaves after indexing and synthesis; the
# re-embedding, its judging and the policy's RL share the rest (RL takes what the others leave).
EMBEDDER_SHARE = 0.4
ADAPTED = "adapted embedder"
HELD = "held-apart synthesized tasks"
LABELLED = "labelled questions (--eval-tasks)"
POLICY_NAMES = {"heuristic": "heuristic", "shipped": "learned (shipped)", "retrained": "learned (retrained)"}


def learned_report(cfg: PipelineConfig, result: dict[str, Any], verdict: Verdict, k: int) -> str:
    """``report.md`` of the learned route, from the same ``result`` that ``summary.json`` holds."""
    lines = [
        *_report_intro(cfg, result),
        *_verdict_section(verdict, k),
        *_judged_examples(cfg),
        *_served_section(result, k),
        *embedder_report(result["embedder"], k),
        *_report_outcome(cfg, result, verdict),
    ]
    return "\n".join(lines)


def _report_intro(cfg: PipelineConfig, result: dict[str, Any]) -> list[str]:
    """What the run did: tasks, GRPO updates and what stopped them, the ranker, the screen."""
    rl = result["rl"]
    start = {"default": "the shipped checkpoint", "none": "a fresh network"}.get(cfg.init, f"`{cfg.init}`")
    ranker = result["ranker"]
    closing = (
        (
            f"the closing ranker retrained on {ranker['episodes']} episodes of the train tasks "
            f"({ranker['offtopic']} off-topic copies)"
        )
        if ranker
        else "the shipped closing ranker kept"
    )
    lines = [
        f"# sieve train all: {cfg.corpus}",
        "",
        f"{result['n_tasks']} synthesized tasks ({result['n_train']} train, {result['n_heldout']} held out); "
        f"{rl['updates']} GRPO updates of the learned policy from {start} in {rl['rl_seconds'] / 60:.1f} min, "
        f"{rl.get('stop', '')} (curves: `rl/curve.md`, `rl/curve.png`); {closing}.",
        "",
    ]
    screen = rl.get("screen")
    if screen:
        lines += [
            f"Screen: the start policy already solves {screen['solved']} of {screen['tasks']} training tasks; "
            f"trained on {screen['kept']} ({screen['kept_unsolved']} unsolved + {screen['kept_solved']} solved, "
            "kept against forgetting).",
            "",
        ]
    if not result["n_eval_tasks"]:
        lines += [
            "Decided on synthetic tasks only: they are not users' questions (a ranker retrained on them gained "
            "on held-apart synthetic tasks of locomo-dev and lost on its real questions). Pass `--eval-tasks` "
            "with labelled questions of this corpus to confirm.",
            "",
        ]
    return lines


def _verdict_section(verdict: Verdict, k: int) -> list[str]:
    """The verdict, why, its rule, and the shipped -> retrained table of every set."""
    lines = [
        "## Verdict",
        "",
        verdict.headline(),
        "",
        "Why:",
        "",
        *[f"- {r}" for r in verdict.reasons],
        "",
        f"Rule: {verdict.rule}.",
        "",
        f"| set | tasks | recall@{k} shipped -> retrained | {verdict.tie_metric} shipped -> retrained | "
        "all gold found by the shipped Sieve |",
        "|---|---:|---|---|---:|",
    ]
    return lines + [
        f"| {c.name} | {c.n} | {fmt_diff(c.recall)} | {fmt_diff(c.reward)} | {c.solved_by_shipped} |"
        for c in verdict.sets
    ]


def _judged_examples(cfg: PipelineConfig) -> list[str]:
    """Three held-apart tasks it was judged on, those that read most like a person's question."""
    held_file = cfg.out / "heldout_tasks.jsonl"
    held_tasks = list(read_written_tasks(held_file).values()) if held_file.exists() else []
    if not held_tasks:
        return []
    return [
        "",
        f"Held-apart tasks it was judged on, the {min(3, len(held_tasks))} of {len(held_tasks)} that read "
        f"most like a person's question (all in `{held_file.name}`):",
        "",
        *[f"- {t['question']}" for t in most_natural(held_tasks, 3)],
    ]


def _served_section(result: dict[str, Any], k: int) -> list[str]:
    """Sieve as served on every set, then the policy alone (as RL scores it) on the held-apart tasks."""
    lines = [
        "",
        "## Sieve as served (policy + ranker, floor on)",
        "",
        f"| set | system | tasks | recall@{k} | all-gold@{k} | recall@{2 * k} |",
        "|---|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {s} | {system} | {r['n']} | {r['recall']:.3f} | {r['all_gold']:.3f} | {r['recall_2k']:.3f} |"
        for s, rows in result["served"].items()
        for system, r in rows.items()
    ]
    lines.append("")
    for s, rows in result["evals"].items():
        lines += [
            f"## The policy alone on {s} (floor off, as RL scores it)",
            "",
            f"| policy | tasks | recall@{k} | all-gold@{k} | traj recall | searches/ep | RL reward |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {name} | {r['n']} | {r['recall']:.3f} | {r['all_gold']:.3f} | {r['traj_recall']:.3f} | "
            f"{r['searches']:.2f} | {r['reward']:.3f} |"
            for name, r in rows.items()
        ]
        lines.append("")
    return lines


def _report_outcome(cfg: PipelineConfig, result: dict[str, Any], verdict: Verdict) -> list[str]:
    """What to use (the run folder, or the shipped default) and whether the collection was switched to it."""
    ranker = result["ranker"]
    if verdict.better:
        lines = [
            f"Use it: `sieve search ... --policy-path {cfg.out}` (the run folder: its policy"
            + (", its ranker" if ranker else "")
            + (" and its embedder)." if result["embedder"]["kept"] else ")."),
            "",
        ]
    else:
        keep = (
            "Keep the shipped policy (the run serves it with its adapted embedder)"
            if result["embedder"]["kept"]
            else "Keep the shipped default (no `--policy-path`)"
        )
        lines = [
            f"{keep}; the retrained policy{' and ranker' if ranker else ''} "
            f"stay{'' if ranker else 's'} in `{result['model_dir']}` for inspection.",
            "",
        ]
    if result["adopted"]:
        lines += [f"Adopted: {result['adopted']}", ""]
    elif result["run"]:
        lines += [f"Not adopted (--no-adopt): `sieve adopt {cfg.out} -c {cfg.collection}` switches to it.", ""]
    return lines


def embedder_report(stage: dict[str, Any], k: int) -> list[str]:
    """The embedder stage's part of ``report.md``: what was mined and trained, the comparison, the decision."""
    lines = ["## Embedder", "", f"{'Kept' if stage['kept'] else 'Not kept'}: {stage['reason']}.", ""]
    if stage.get("pairs"):
        p, t = stage["pairs"], stage["training"]
        lines += [
            f"Pairs mined from the corpus's structure: {p['mined']}; {p['train']} trained on "
            f"({p['hard_negatives']} with a hard negative), {p['held_apart']} held apart; "
            f"{t['steps']} steps in {t['seconds']:.0f} s.",
            "",
        ]
    if stage["sets"]:
        lines += [
            "| set | n | shipped embedder | adapted embedder | diff | noise |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {s['set']} | {s['n']} | {s['shipped']:.3f} | {s['adapted']:.3f} | {s['diff']:+.3f} | "
            f"{'-' if s['noise'] is None else format(s['noise'], '.3f')} |"
            for s in stage["sets"]
        ]
        lines += [
            "",
            f"(held-apart pairs: recall@10 of the pair's chunk by dense search; task sets: recall@{k} of Sieve "
            "as served with the shipped policy, span recall where tasks have spans)",
            "",
        ]
    return lines


def _llm_route(
    cfg: PipelineConfig,
    index: Any,
    synth: Any,
    train_tasks: list[dict[str, Any]],
    held: list[dict[str, Any]],
    progress: bool,
) -> dict[str, Any]:
    """SFT warm start of a language model on heuristic trajectories, then GRPO (the GPU route)."""
    sft, rl = _llm_train(cfg, index, progress)
    models = {"sft": sft["model_dir"], "sft+rl": rl["model_dir"]}
    evals = _llm_evals(cfg, index, held, models, progress)
    chosen, verdict = llm_run_choice(evals, models)
    run = RunArtifact(
        cfg.out, policy=Path(chosen) if chosen else None, embedder=None, verdict={"policy": verdict}, policy_kind="llm"
    )
    run.save()
    report = cfg.out / "report.md"
    counts = f"{synth.written + synth.existing} synthesized tasks ({len(train_tasks)} train, {len(held)} held out)"
    report.write_text(_llm_report(cfg, counts, sft, rl, evals) + _llm_run_lines(run, verdict), encoding="utf-8")
    return {
        "model_dir": rl["model_dir"],
        "run": str(run.folder) if not run.uses_shipped_parts() else None,
        "llm_verdict": verdict,
        "report": str(report),
        "evals": evals,
        "synth": synth.to_dict(),
        "sft_model": sft["model_dir"],
        "rl_steps": rl["steps"],
    }


def _llm_train(cfg: PipelineConfig, index: Any, progress: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """SFT of the student on the train tasks (``sft/``), then GRPO from it (``rl/``); both runs' results."""
    from sieve.train.llm.rl import RLConfig, run_rl
    from sieve.train.llm.sft import WarmStartConfig, run_sft

    student = None if cfg.init == "default" else cfg.init
    sft = run_sft(
        index,
        WarmStartConfig(
            tasks=cfg.out / "train_tasks.jsonl",
            out=cfg.out / "sft",
            model_path=student,
            holdout=0.0,
            epochs=cfg.sft_epochs,
            check_before=False,
            episode=cfg.episode,
            seed=cfg.seed,
        ),
        progress=progress,
    )
    steps = cfg.steps if cfg.steps is not None else (None if cfg.minutes else cfg.llm_steps)
    rl = run_rl(
        index,
        RLConfig(
            tasks=cfg.out / "train_tasks.jsonl",
            out=cfg.out / "rl",
            model_path=sft["model_dir"],
            steps=steps,
            minutes=cfg.minutes,
            episode=cfg.episode,
            seed=cfg.seed,
        ),
        progress=progress,
    )
    return sft, rl


def _llm_evals(
    cfg: PipelineConfig, index: Any, held: list[dict[str, Any]], models: dict[str, str], progress: bool
) -> dict[str, dict[str, Any]]:
    """The heuristic, the shipped learned policy and each of ``models`` (name -> HF folder) on the held-out tasks."""
    from sieve.agent.backends.local import LocalBackend
    from sieve.train.llm.heldout import run_heldout

    evals: dict[str, dict[str, Any]] = {}
    for shipped in ("heuristic", "learned"):
        evals[shipped] = run_heldout(index, held, cfg.episode, policy=shipped, progress=progress)[0].to_dict()
    for name, path in models.items():
        evals[name] = run_heldout(index, held, cfg.episode, backend=LocalBackend.load(path), progress=progress)[
            0
        ].to_dict()
    return evals


def llm_run_choice(evals: dict[str, dict[str, Any]], models: dict[str, str]) -> tuple[str | None, dict[str, Any]]:
    """The model folder the LLM route's ``run.json`` names (``None``: none), and the verdict saying why.

    The candidate is the better of ``models`` (``sft``, ``sft+rl``; the later one on a tie) by held-out
    output recall; it is named only when it beats the shipped learned policy on the same tasks, which
    is what serves without the run: a worse model is never what ``--policy-path`` or ``sieve adopt`` serves.

    Example:
        >>> evals = {"learned": {"output_recall": 0.6}, "sft": {"output_recall": 0.5}, "sft+rl": {"output_recall": 0.7}}
        >>> llm_run_choice(evals, {"sft": "out/sft/model", "sft+rl": "out/rl/model"})[0]
        'out/rl/model'
    """
    candidate = max(reversed(list(models)), key=lambda name: evals[name]["output_recall"])
    score, shipped = evals[candidate]["output_recall"], evals["learned"]["output_recall"]
    verdict = {
        "route": "llm",
        "metric": "held-out output recall",
        "candidate": candidate,
        "candidate_score": score,
        "shipped_learned_score": shipped,
        "better": score > shipped,
    }
    return (models[candidate] if score > shipped else None), verdict


def _llm_run_lines(run: RunArtifact, verdict: dict[str, Any]) -> str:
    """``report.md``'s closing lines: what ``run.json`` names, and why."""
    got = f"{verdict['candidate']} {verdict['candidate_score']:.3f} against the shipped learned policy's " + (
        f"{verdict['shipped_learned_score']:.3f} held-out output recall"
    )
    if run.policy is None:
        return f"\nRun: `{run.folder}` names no model ({got}): the shipped Sieve serves as before.\n"
    return f"\nRun: `{run.folder}` serves `{run.policy}` ({got}): `--policy-path {run.folder}`.\n"


def _llm_report(
    cfg: PipelineConfig, counts: str, sft: dict[str, Any], rl: dict[str, Any], evals: dict[str, dict[str, Any]]
) -> str:
    """``report.md`` of the LLM route: the tasks, SFT and GRPO in a line, then the held-out table."""
    from sieve.train.llm.heldout import heldout_table

    return "\n".join(
        [
            f"# sieve train all --llm: {cfg.corpus}",
            "",
            f"{counts}; SFT {sft['n_train_examples']} examples; GRPO {rl['steps']} steps (reward "
            f"{rl['reward_first']:.3f} -> {rl['reward_last']:.3f}).",
            "",
            "## Held-out tasks",
            "",
            heldout_table(evals),
            "",
            f"Model: `{rl['model_dir']}` (HF folder: `AgentConfig(local_model=...)`, or `vllm serve`).",
            "",
        ]
    )


__all__ = ["PipelineConfig", "learned_report", "llm_run_choice", "run_pipeline"]
