"""``sieve train synth|sft|rl|all|embedder`` and ``sieve adopt``: retrain the search policy (and the embedder)
on any corpus, and serve a collection with a run.

Each flag for a knob of a config dataclass in ``train/`` takes its default from that field
(:mod:`sieve.cli.commands._train_options`); ``rl`` lives in ``train_rl.py``, ``embedder`` in
``train_embedder.py``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Optional

import typer

from sieve.cli.commands._common import (
    ChromaUrlOpt,
    CollectionOpt,
    DataDirOpt,
    EmbedderOpt,
    JsonOpt,
    cli_errors,
    plural,
    print_json,
    settings_from,
)
from sieve.cli.commands._listing import listing, refresh
from sieve.cli.commands._train_options import (
    DEFAULT_INIT,
    BudgetTokensOpt,
    MaxNewTokensOpt,
    MaxTurnsOpt,
    SearchKOpt,
    SearchTokensOpt,
    check_choice,
    config_default,
    config_help,
    config_option,
    episode,
    given,
    minutes_option,
    model_path_of,
    n_option,
    old_option,
    open_index,
    renamed,
    renamed_init,
    steps_option,
    student_init,
)
from sieve.cli.commands.train_embedder import embedder_cmd
from sieve.cli.commands.train_rl import rl_cmd
from sieve.core.errors import InvalidInput
from sieve.train.learned.config import DEFAULT_UPDATES, LearnedRLConfig
from sieve.train.llm.sft import WarmStartConfig
from sieve.retriever.readers import formats_help
from sieve.train.llm.teachers import TEACHERS, teacher_help
from sieve.train.pipeline import PipelineConfig
from sieve.train.synth_config import SynthConfig
from sieve.train.synth_writers import WRITERS, pipeline_writer_help, pipeline_writers, writer_help

# --- sieve train synth

SynthNOpt = config_option(SynthConfig, "n", "--n", help="Verified tasks wanted (a rerun resumes up to N).")
# Written where the trainers' configs look for tasks by default.
SynthOutOpt = typer.Option(
    config_default(LearnedRLConfig, "tasks"), "--out", help="Output JSONL (shared/eval tasks schema)."
)
SynthGeneratorOpt = listing(config_option(SynthConfig, "generator"), help=lambda: f"{writer_help()}.")
SynthSeedOpt = config_option(SynthConfig, "seed", help="Seed of the bridge order (same seed, same tasks).")
ReaderCheckOpt = config_option(SynthConfig, "reader_check", help="LLM generators: reject bridge-only answers.")
ComparisonShareOpt = config_option(
    SynthConfig, "comparison_share", help="heuristic: share of 'which of A and B' questions (0-1)."
)


@cli_errors
def synth_cmd(
    collection: Optional[str] = CollectionOpt,
    n: int = SynthNOpt,
    out: Path = SynthOutOpt,
    generator: str = SynthGeneratorOpt,
    seed: int = SynthSeedOpt,
    model_path: Optional[str] = typer.Option(None, "--model-path", help="local: HF model folder (default SmolLM2)."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="openai: endpoint, e.g. http://host:8001/v1."),
    model: Optional[str] = typer.Option(None, "--model", help="openai: model name."),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="openai: key (default $SIEVE_TRAIN_API_KEY)."),
    reader_check: bool = ReaderCheckOpt,
    comparison_share: float = ComparisonShareOpt,
    data_dir: Optional[Path] = DataDirOpt,
    chroma_url: Optional[str] = ChromaUrlOpt,
    embedder: Optional[str] = EmbedderOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Synthesize verified tasks (gold chunks + hard distractors) from COLLECTION: multi-hop questions, or
    single-hop claims (--generator claims)."""
    from sieve.train.synth import make_writer, no_tasks_message, synthesize

    check_choice(generator, tuple(WRITERS), "--generator")
    s = settings_from(data_dir, chroma_url, embedder, collection=collection, train_api_key=api_key)
    index = open_index(s)
    cfg = SynthConfig(
        n=n,
        seed=seed,
        generator=generator,
        reader_check=reader_check,
        comparison_share=comparison_share,
    )
    writer = make_writer(
        cfg.generator,
        model_path=model_path,
        base_url=base_url,
        model=model,
        api_key=s.train_api_key,
        models_dir=index.config.models_dir,
        seed=seed,
    )
    report = synthesize(index, out, cfg, writer, progress=not as_json)
    empty = no_tasks_message(report, cfg.generator, f"collection {index.name!r}")
    if empty:
        raise InvalidInput(empty)
    if as_json:
        print_json(report.to_dict())
        return
    _synth_summary(report, out)


def _synth_summary(report: Any, out: Path) -> None:
    """What a synthesis run wrote and rejected (a SynthReport), and how easy its claims are for one search."""
    typer.echo(
        f"{plural(report.written, 'new task')} ({report.existing} already there) -> {out} in "
        f"{report.seconds:.1f}s; {plural(report.drafts, 'draft')} from {plural(report.bridges_tried, 'bridge chunk')}; "
        f"rejected: {dict(report.rejected) or 'none'}"
    )
    if report.single_shot_recall_at_10 is not None:
        typer.echo(
            f"single-shot hybrid recall@10 on these claims: {report.single_shot_recall_at_10:.3f} "
            "(claims keep their source's wording: expect them easier than hand-written ones)"
        )


# --- sieve train sft

SftOutOpt = config_option(WarmStartConfig, "out", help="Output folder (merged HF checkpoint in OUT/model).")
SftInitOpt = typer.Option(DEFAULT_INIT, "--init", help="Student: 'default' (SmolLM2-135M) or an HF folder.")
TeacherOpt = listing(config_option(WarmStartConfig, "teacher"), help=lambda: f"Trajectory source: {teacher_help()}.")
MinRecallOpt = config_option(
    WarmStartConfig, "min_recall", help="Keep teacher episodes with trajectory recall >= this."
)
SftEpochsOpt = config_option(WarmStartConfig, "epochs", help="SFT epochs.")
SftLrOpt = config_option(WarmStartConfig, "learning_rate", "--lr", help="Learning rate.")
MaxLengthOpt = config_option(WarmStartConfig, "max_length", help="Longest training sequence (tokens).")
SftHoldoutOpt = config_option(WarmStartConfig, "holdout", help="Share of tasks held out to measure valid tool calls.")
SftLoraOpt = config_option(WarmStartConfig, "lora", help="Train a LoRA adapter (merged into the saved model).")
SftBf16Opt = config_option(WarmStartConfig, "bf16", help="bfloat16 autocast (GPUs; CPUs with AVX512-BF16).")
TeacherUrlOpt = config_option(WarmStartConfig, "teacher_base_url", "--base-url", help="openai teacher: endpoint.")
TeacherModelOpt = config_option(WarmStartConfig, "teacher_model", help="openai teacher: model name.")


@cli_errors
def sft_cmd(
    tasks: Path = typer.Option(..., "--tasks", help="Tasks JSONL (from `sieve train synth`)."),
    collection: Optional[str] = CollectionOpt,
    out: Path = SftOutOpt,
    init: str = SftInitOpt,
    n: Optional[int] = n_option("Use only the first N tasks."),
    steps: Optional[int] = steps_option("optimizer steps (unset: --epochs decide)"),
    minutes: Optional[float] = minutes_option("SFT"),
    teacher: str = TeacherOpt,
    min_recall: float = MinRecallOpt,
    epochs: float = SftEpochsOpt,
    lr: float = SftLrOpt,
    max_length: int = MaxLengthOpt,
    holdout: float = SftHoldoutOpt,
    lora: bool = SftLoraOpt,
    bf16: bool = SftBf16Opt,
    base_url: Optional[str] = TeacherUrlOpt,
    teacher_model: Optional[str] = TeacherModelOpt,
    budget_tokens: int = BudgetTokensOpt,
    max_turns: int = MaxTurnsOpt,
    max_new_tokens: int = MaxNewTokensOpt,
    search_k: int = SearchKOpt,
    search_tokens: int = SearchTokensOpt,
    data_dir: Optional[Path] = DataDirOpt,
    chroma_url: Optional[str] = ChromaUrlOpt,
    embedder: Optional[str] = EmbedderOpt,
    as_json: bool = JsonOpt,
    model_path: Optional[str] = old_option("--init"),
    limit: Optional[int] = old_option("--n"),
) -> None:
    """Warm-start the student on teacher trajectories (TRL SFTTrainer), then measure its valid tool-call rate."""
    from sieve.train.llm.sft import run_sft

    check_choice(teacher, tuple(TEACHERS), "--teacher")
    init = student_init(renamed_init(init, model_path))
    n = renamed(n, limit, "--limit", "--n")
    index = open_index(settings_from(data_dir, chroma_url, embedder, collection=collection))
    knobs: dict[str, Any] = {
        "epochs": epochs,
        "steps": steps,
        "minutes": minutes,
        "learning_rate": lr,
        "max_length": max_length,
    }
    knobs |= {"holdout": holdout, "limit": n, "lora": lora, "bf16": bf16}
    cfg = WarmStartConfig(
        tasks=tasks,
        out=out,
        model_path=model_path_of(init),
        teacher=teacher,  # type: ignore[arg-type]
        min_recall=min_recall,
        teacher_base_url=base_url,
        teacher_model=teacher_model,
        episode=episode(budget_tokens, max_turns, max_new_tokens, search_k, search_tokens),
        **knobs,
    )
    _sft_summary(run_sft(index, cfg, progress=not as_json), as_json)


def _sft_summary(result: dict[str, Any], as_json: bool) -> None:
    """What SFT trained on, and the valid tool-call rate on held-out tasks before and after."""
    if as_json:
        print_json(result)
        return
    msg = (
        f"SFT on {plural(result['n_train_examples'], 'turn')} from "
        f"{plural(result['n_kept_episodes'], 'teacher episode')} -> {result['model_dir']}"
    )
    if result["heldout"]:
        msg += (
            f"; valid tool-call rate on {plural(result['heldout']['n_tasks'], 'held-out task')}: "
            f"{result['heldout']['valid_tool_call_rate']:.1%}"
        )
        if result["heldout_before"]:
            msg += f" (before SFT {result['heldout_before']['valid_tool_call_rate']:.1%})"
    typer.echo(msg)


# --- sieve train all

RANKERS = ("keep", "retrain")

AllNOpt = n_option(f"{config_help(PipelineConfig, 'n')[:-1]} (default {config_default(PipelineConfig, 'n')}).")
AllOutOpt = config_option(PipelineConfig, "out", help="Run folder (tasks, sft/, rl/, eval/).")
CorpusOpt = listing(typer.Option(..., "--corpus"), help=lambda: f"File or folder to index ({formats_help()}).")
AllGeneratorOpt = listing(config_option(PipelineConfig, "generator"), help=lambda: f"{pipeline_writer_help()}.")
AllMinutesOpt = minutes_option("the whole run (learned: training gets what indexing, synthesis and the checks leave)")
AllStepsOpt = steps_option(
    f"GRPO updates (unset: learned {DEFAULT_UPDATES}, --llm {config_default(PipelineConfig, 'llm_steps')}; "
    "no cap with --minutes)"
)
AllInitOpt = config_option(
    PipelineConfig,
    "init",
    help="Where training starts. learned: 'default' (the shipped checkpoint, which the verdict compares against), "
    "'none' (a fresh network) or a checkpoint folder; --llm: 'default' (SmolLM2-135M) or an HF folder.",
)
EvalTasksOpt = config_option(
    PipelineConfig,
    "eval_tasks",
    help="Labelled questions of this corpus to report on too (never trained on); they decide the verdict.",
)
LlmOpt = typer.Option(
    config_default(PipelineConfig, "route") == "llm",
    "--llm",
    help="The language-model route (SFT + GRPO; for GPU machines) instead of the learned policy network.",
)
AdaptEmbedderOpt = typer.Option(
    config_default(PipelineConfig, "embedder") == "adapt",
    "--adapt-embedder/--keep-embedder",
    help=config_help(PipelineConfig, "embedder"),
)
AllSeedOpt = config_option(PipelineConfig, "seed", help="Synthesis and training seed.")


@cli_errors
def all_cmd(
    corpus: Path = CorpusOpt,
    collection: Optional[str] = CollectionOpt,
    out: Path = AllOutOpt,
    n: Optional[int] = AllNOpt,
    generator: str = AllGeneratorOpt,
    minutes: Optional[float] = AllMinutesOpt,
    steps: Optional[int] = AllStepsOpt,
    init: str = AllInitOpt,
    eval_tasks: Optional[Path] = EvalTasksOpt,
    llm: bool = LlmOpt,
    ranker: str = config_option(PipelineConfig, "ranker"),
    adapt_embedder: bool = AdaptEmbedderOpt,
    adopt: bool = config_option(PipelineConfig, "adopt", "--adopt/--no-adopt"),
    seed: int = AllSeedOpt,
    data_dir: Optional[Path] = DataDirOpt,
    chroma_url: Optional[str] = ChromaUrlOpt,
    embedder: Optional[str] = EmbedderOpt,
    as_json: bool = JsonOpt,
    n_tasks: Optional[int] = old_option("--n"),
    rl_steps: Optional[int] = old_option("--steps"),
    rl_minutes: Optional[float] = old_option("--minutes"),
    model_path: Optional[str] = old_option("--init"),
) -> None:
    """Index CORPUS, synthesize tasks, train by RL (learned policy; --llm: SFT + GRPO), then compare with the
    shipped default on held-apart tasks (and --eval-tasks): the retrained policy is recommended only if better."""
    from sieve.train.pipeline import run_pipeline

    check_choice(generator, pipeline_writers(), "--generator")
    check_choice(ranker, RANKERS, "--ranker")
    n = renamed(n, n_tasks, "--n-tasks", "--n")
    steps = renamed(steps, rl_steps, "--rl-steps", "--steps")
    minutes = renamed(minutes, rl_minutes, "--rl-minutes", "--minutes")
    init = renamed_init(init, model_path)
    if llm:
        init = student_init(init)
    s = settings_from(data_dir, chroma_url, embedder, collection=collection)
    cfg = PipelineConfig(
        corpus=corpus,
        collection=s.collection,
        out=out,
        generator=generator,  # type: ignore[arg-type]
        init=init,
        seed=seed,
        route="llm" if llm else "learned",
        steps=steps,
        minutes=minutes,
        ranker=ranker,  # type: ignore[arg-type]
        embedder="adapt" if adapt_embedder else "keep",
        adopt=adopt,
        eval_tasks=eval_tasks,
        **given(n=n),
    )
    _pipeline_summary(run_pipeline(cfg, s.retriever_config(), progress=not as_json), cfg, as_json)


def _pipeline_summary(result: dict[str, Any], cfg: PipelineConfig, as_json: bool) -> None:
    """The verdict and why, what became of the embedder, and how to use the run (or that it was adopted)."""
    if as_json:
        print_json(result)
        return
    if "verdict" in result:
        v = result["verdict"]
        typer.echo(f"{v['headline']} Why: " + "; ".join(v["reasons"]))
        stage = result["embedder"]
        typer.echo(f"Embedder: {'adapted and kept' if stage['kept'] else 'shipped'} ({stage['reason']}).")
        if result["adopted"]:
            typer.echo(result["adopted"])
        elif result["run"]:
            typer.echo(f"Use: --policy-path {result['run']}, or sieve adopt {result['run']} -c {cfg.collection}")
        else:
            typer.echo(f"Retrained checkpoint kept for inspection: {result['model_dir']}")
    else:
        v = result["llm_verdict"]
        scores = f"{v['candidate']} {v['candidate_score']:.3f} vs shipped learned {v['shipped_learned_score']:.3f}"
        if result["run"]:
            typer.echo(f"Better ({v['metric']}: {scores}). Use: --policy-path {result['run']}")
        else:
            typer.echo(f"Not better ({v['metric']}: {scores}); model kept for inspection: {result['model_dir']}")
    typer.echo(f"Report: {result['report']}; summary: {result['summary']}")


# --- sieve adopt


@cli_errors
def adopt_cmd(
    run: Path = typer.Argument(..., help="A run folder of sieve train all (it holds run.json)."),
    collection: Optional[str] = CollectionOpt,
    data_dir: Optional[Path] = DataDirOpt,
    chroma_url: Optional[str] = ChromaUrlOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Make RUN the one COLLECTION serves with: commands on it then use the run's policy (and ranker) with no
    flag. A run that adapted the embedder re-embeds the collection into a new version and switches to it in
    one step (searches see the old vectors or the new, never a mix); the old version stays until
    `sieve collections --drop-old NAME`."""
    from sieve.train.adopt import adopt_run

    s = settings_from(data_dir, chroma_url, collection=collection)
    report = adopt_run(s.retriever_config(), s.collection, run, progress=not as_json)
    if as_json:
        print_json(
            {
                "collection": report.collection,
                "run": report.run,
                "previous_run": report.previous_run,
                "switch": None if report.switch is None else dataclasses.asdict(report.switch),
            }
        )
        return
    typer.echo(report.describe())


def register(app: typer.Typer) -> None:
    refresh()  # help that lists a registry lists what registered before the command line is assembled
    train = typer.Typer(
        name="train",
        help="Retrain on your corpus: synthesize tasks, GRPO (the learned policy; or "
        "a language model after an SFT warm start), all.",
        no_args_is_help=True,
    )
    train.command("synth")(synth_cmd)
    train.command("sft")(sft_cmd)
    train.command("rl")(rl_cmd)
    train.command("all")(all_cmd)
    train.command("embedder")(embedder_cmd)
    app.add_typer(train)
    app.command("adopt")(adopt_cmd)


__all__ = ["adopt_cmd", "all_cmd", "register", "sft_cmd", "synth_cmd"]
