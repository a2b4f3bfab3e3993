"""``sieve train synth|sft|rl|all|embedder``: retrain the search policy (and the embedder) on any corpus."""

from __future__ import annotations

import dataclasses

from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from sieve.core.errors import InvalidInput
from sieve.cli.commands.train_embedder import add_embedder_command
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
from sieve.train.config import EpisodeConfig
from sieve.train.learned.config import DEFAULT_UPDATES, LearnedRLConfig
from sieve.train.llm.rl import DEFAULT_STEPS, RLConfig
from sieve.train.rewards.config import RewardConfig
from sieve.retriever.readers import formats_help
from sieve.train.llm.teachers import TEACHERS, teacher_help
from sieve.train.pipeline import PipelineConfig
from sieve.train.synth_writers import WRITERS, pipeline_writer_help, pipeline_writers, writer_help

if TYPE_CHECKING:
    from sieve.retriever import CorpusIndex
    from sieve.settings import Settings


def _open_index(s: Settings) -> CorpusIndex:
    from sieve.retriever import CorpusIndex

    return CorpusIndex.open(s.retriever_config(), s.collection, create=False)


def _check_choice(value: str, valid: tuple[str, ...], flag: str) -> str:
    if value not in valid:
        raise InvalidInput(f"Expected {flag} in {list(valid)}, got {value!r}")
    return value


def _field(config: type, name: str) -> Any:
    return next(f for f in fields(config) if f.name == name)


def _per_route(name: str) -> str:
    """Both routes' defaults of one knob, read from their configs: ``learned: 4; llm: 2``."""
    return f"learned: {getattr(LearnedRLConfig, name)}; llm: {getattr(RLConfig, name)}"


def _llm_option(name: str, flag: str) -> Any:
    """A flag of the LLM route only, with ``RLConfig.<name>``'s default and help."""
    field = _field(RLConfig, name)
    return typer.Option(field.default, flag, help="llm: " + field.metadata["help"])


def _episode_option(name: str) -> Any:
    """A flag for ``EpisodeConfig.<name>`` with that field's default and help: defined once, for sft and rl."""
    field = _field(EpisodeConfig, name)
    return typer.Option(field.default, "--" + name.replace("_", "-"), help=field.metadata["help"])


# The episode a policy is trained on must be the episode it is served with: `train sft` and
# `train rl` share these flags, and their defaults are EpisodeConfig's.
BudgetTokensOpt = _episode_option("budget_tokens")
MaxTurnsOpt = _episode_option("max_turns")
MaxNewTokensOpt = _episode_option("max_new_tokens")
SearchKOpt = _episode_option("search_k")
SearchTokensOpt = _episode_option("search_tokens")


# One vocabulary of flags: the same knob has the same name in `train all`, `synth`, `sft` and `rl`
# (`--n` tasks, `--minutes` of wall clock, `--steps` of the optimiser, `--init` the starting point).
# Their defaults live in the config dataclasses; an unset flag leaves the config's default in force.
def _minutes_option(what: str) -> Any:
    return typer.Option(
        None,
        "--minutes",
        help=f"Wall-clock budget of {what}; it ends the run (the model is "
        "saved). With --minutes and no --steps there is no step cap.",
    )


def _steps_option(what: str) -> Any:
    return typer.Option(
        None,
        "--steps",
        help=f"Most {what}; with --minutes too, whichever comes first ends the run (the summary says which).",
    )


def _n_option(what: str) -> Any:
    return typer.Option(None, "--n", help=what)


def _old_option(new_flag: str) -> Any:
    """A hidden, deprecated spelling of ``new_flag`` (still accepted, with a warning)."""
    return typer.Option(None, hidden=True, help=f"Deprecated: use {new_flag}.")


def _renamed(new: Any, old: Any, old_flag: str, new_flag: str) -> Any:
    """``new``, or ``old`` (with a deprecation warning on stderr) when only the old spelling was given."""
    if old is None:
        return new
    typer.echo(f"Warning: {old_flag} is deprecated; use {new_flag}.", err=True)
    if new is not None and new != old:
        raise InvalidInput(f"Expected one of {new_flag} and {old_flag}, got {new_flag} {new} and {old_flag} {old}")
    return old


def _student_init(init: str | None) -> str:
    """``--init`` of a language model: 'default' (SmolLM2-135M) or a folder; there is no fresh one ('none')."""
    if init == "none":
        raise InvalidInput(
            "Expected --init 'default' or an HF model folder for a language model, got 'none' "
            "(a fresh network is the learned policy's option)"
        )
    return init or "default"


def _given(**kwargs: Any) -> dict[str, Any]:
    """The keyword arguments whose value was given (not None): the rest keep the config's defaults."""
    return {k: v for k, v in kwargs.items() if v is not None}


def _reward_config(collapse_penalty: float | None) -> Any:
    return RewardConfig() if collapse_penalty is None else RewardConfig(collapse=collapse_penalty)


def _learned_rl(
    s: Settings,
    tasks: Path,
    out: Path,
    minutes: float | None,
    seed: int,
    init: str,
    epochs: int | None,
    collapse_penalty: float | None,
    steps: int | None,
    questions: int | None,
    generations: int | None,
    lr: float | None,
    limit: int | None,
    heldout_tasks: Path | None,
    as_json: bool,
) -> None:
    """``sieve train rl --policy learned``: warm start + GRPO of the small policy network (CPU)."""
    import shlex
    import sys

    index = _open_index(s)
    from sieve.train.learned import LearnedRLConfig, run_learned_rl

    cfg = LearnedRLConfig(
        tasks=tasks,
        out=out,
        init=init,
        steps=steps,
        minutes=minutes,
        limit=limit,
        seed=seed,
        reward=_reward_config(collapse_penalty),
        heldout_tasks=heldout_tasks,
        command="sieve " + shlex.join(sys.argv[1:]),
        **_given(questions_per_step=questions, group=generations, lr=lr, epochs=epochs),
    )
    result = run_learned_rl(index, cfg, progress=not as_json)
    if as_json:
        print_json(result)
        return
    first, last = result.get("curve_first_window", {}), result.get("curve_last_window", {})
    msg = (
        f"{result['updates']} GRPO updates in {result['rl_seconds'] / 60:.1f} min -> {result['model_dir']}; "
        f"batch reward {first.get('reward', 0):.3f} -> {last.get('reward', 0):.3f}, recall@{cfg.k} "
        f"{first.get('recall', 0):.3f} -> {last.get('recall', 0):.3f}"
    )
    if "heldout_end" in result:
        msg += (
            f"; held-apart recall@{cfg.k} {result['heldout_start']['recall']:.3f} -> "
            f"{result['heldout_end']['recall']:.3f}"
        )
    if "screen" in result:
        sc = result["screen"]
        msg += (
            f"; screen: the start policy solved {sc['solved']} of {sc['tasks']} tasks, trained on {sc['kept']} "
            f"({sc['kept_unsolved']} unsolved + {sc['kept_solved']} solved)"
        )
    typer.echo(msg + f"; {result['stop']}; curves in {out / 'curve.md'}")


def register(app: typer.Typer) -> None:
    train = typer.Typer(
        name="train",
        help="Retrain on your corpus: synthesize tasks, GRPO (the learned policy; or "
        "a language model after an SFT warm start), all.",
        no_args_is_help=True,
    )

    @train.command("synth")
    @cli_errors
    def synth_cmd(
        collection: Optional[str] = CollectionOpt,
        n: int = typer.Option(500, "--n", help="Verified tasks wanted (a rerun resumes up to N)."),
        out: Path = typer.Option(Path("tasks.jsonl"), "--out", help="Output JSONL (shared/eval tasks schema)."),
        generator: str = typer.Option("heuristic", "--generator", help=f"{writer_help()}."),
        seed: int = typer.Option(0, "--seed", help="Seed of the bridge order (same seed, same tasks)."),
        model_path: Optional[str] = typer.Option(
            None, "--model-path", help="local: HF model folder (default SmolLM2)."
        ),
        base_url: Optional[str] = typer.Option(None, "--base-url", help="openai: endpoint, e.g. http://host:8001/v1."),
        model: Optional[str] = typer.Option(None, "--model", help="openai: model name."),
        api_key: Optional[str] = typer.Option(None, "--api-key", help="openai: key (default $SIEVE_TRAIN_API_KEY)."),
        reader_check: bool = typer.Option(False, "--reader-check", help="LLM generators: reject bridge-only answers."),
        comparison_share: float = typer.Option(
            0.3, "--comparison-share", help="heuristic: share of 'which of A and B' questions (0-1)."
        ),
        data_dir: Optional[Path] = DataDirOpt,
        chroma_url: Optional[str] = ChromaUrlOpt,
        embedder: Optional[str] = EmbedderOpt,
        as_json: bool = JsonOpt,
    ) -> None:
        """Synthesize verified tasks (gold chunks + hard distractors) from COLLECTION: multi-hop questions, or
        single-hop claims (--generator claims)."""
        from sieve.train.synth import SynthConfig, make_writer, no_tasks_message, synthesize

        _check_choice(generator, tuple(WRITERS), "--generator")
        s = settings_from(data_dir, chroma_url, embedder, collection=collection, train_api_key=api_key)
        index = _open_index(s)
        cfg = SynthConfig(
            n=n,
            seed=seed,
            generator=generator,
            reader_check=reader_check,  # type: ignore[arg-type]
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

    @train.command("sft")
    @cli_errors
    def sft_cmd(
        tasks: Path = typer.Option(..., "--tasks", help="Tasks JSONL (from `sieve train synth`)."),
        collection: Optional[str] = CollectionOpt,
        out: Path = typer.Option(Path("runs/sft"), "--out", help="Output folder (merged HF checkpoint in OUT/model)."),
        init: str = typer.Option("default", "--init", help="Student: 'default' (SmolLM2-135M) or an HF folder."),
        n: Optional[int] = _n_option("Use only the first N tasks."),
        steps: Optional[int] = _steps_option("optimizer steps (unset: --epochs decide)"),
        minutes: Optional[float] = _minutes_option("SFT"),
        teacher: str = typer.Option("heuristic", "--teacher", help=f"Trajectory source: {teacher_help()}."),
        min_recall: float = typer.Option(
            0.5, "--min-recall", help="Keep teacher episodes with trajectory recall >= this."
        ),
        epochs: float = typer.Option(2.0, "--epochs", help="SFT epochs."),
        lr: float = typer.Option(5e-5, "--lr", help="Learning rate."),
        max_length: int = typer.Option(2048, "--max-length", help="Longest training sequence (tokens)."),
        holdout: float = typer.Option(0.2, "--holdout", help="Share of tasks held out to measure valid tool calls."),
        lora: bool = typer.Option(False, "--lora", help="Train a LoRA adapter (merged into the saved model)."),
        bf16: bool = typer.Option(False, "--bf16", help="bfloat16 autocast (GPUs; CPUs with AVX512-BF16)."),
        base_url: Optional[str] = typer.Option(None, "--base-url", help="openai teacher: endpoint."),
        teacher_model: Optional[str] = typer.Option(None, "--teacher-model", help="openai teacher: model name."),
        budget_tokens: int = BudgetTokensOpt,
        max_turns: int = MaxTurnsOpt,
        max_new_tokens: int = MaxNewTokensOpt,
        search_k: int = SearchKOpt,
        search_tokens: int = SearchTokensOpt,
        data_dir: Optional[Path] = DataDirOpt,
        chroma_url: Optional[str] = ChromaUrlOpt,
        embedder: Optional[str] = EmbedderOpt,
        as_json: bool = JsonOpt,
        model_path: Optional[str] = _old_option("--init"),
        limit: Optional[int] = _old_option("--n"),
    ) -> None:
        """Warm-start the student on teacher trajectories (TRL SFTTrainer), then measure its valid tool-call rate."""
        from sieve.train.llm.sft import WarmStartConfig, run_sft

        _check_choice(teacher, tuple(TEACHERS), "--teacher")
        init = _student_init(_renamed(None if init == "default" else init, model_path, "--model-path", "--init"))
        n = _renamed(n, limit, "--limit", "--n")
        index = _open_index(settings_from(data_dir, chroma_url, embedder, collection=collection))
        episode = EpisodeConfig(
            budget_tokens=budget_tokens,
            max_turns=max_turns,
            max_new_tokens=max_new_tokens,
            search_k=search_k,
            search_tokens=search_tokens,
        )
        cfg = WarmStartConfig(
            tasks=tasks,
            out=out,
            model_path=None if init == "default" else init,
            teacher=teacher,  # type: ignore[arg-type]
            min_recall=min_recall,
            epochs=epochs,
            steps=steps,
            minutes=minutes,
            learning_rate=lr,
            max_length=max_length,
            holdout=holdout,
            limit=n,
            lora=lora,
            bf16=bf16,
            teacher_base_url=base_url,
            teacher_model=teacher_model,
            episode=episode,
        )
        result = run_sft(index, cfg, progress=not as_json)
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

    @train.command("rl")
    @cli_errors
    def rl_cmd(
        tasks: Path = typer.Option(..., "--tasks", help="Tasks JSONL."),
        collection: Optional[str] = CollectionOpt,
        policy: str = typer.Option(
            "learned",
            "--policy",
            help="learned (small network, CPU: minutes) | llm (a language model via TRL GRPO; GPU route).",
        ),
        out: Path = typer.Option(
            Path("runs/rl"), "--out", help="Run folder (checkpoint in OUT/model; a rerun resumes)."
        ),
        minutes: Optional[float] = _minutes_option("the run (learned: set-up, screen and checks included)"),
        steps: Optional[int] = _steps_option(
            f"updates (unset: learned {DEFAULT_UPDATES}, llm {DEFAULT_STEPS}; no cap with --minutes)"
        ),
        n: Optional[int] = _n_option("Use only the first N tasks."),
        seed: int = typer.Option(0, "--seed", help="Seed (task order, sampling, network init)."),
        init: str = typer.Option(
            "default",
            "--init",
            help="Where training starts. learned: 'default' (the shipped "
            "checkpoint), 'none' (a fresh network, warm-started on the heuristic) or a checkpoint "
            "folder; llm: 'default' (SmolLM2-135M) or an HF folder (e.g. runs/sft/model).",
        ),
        epochs: Optional[int] = typer.Option(
            None, "--epochs", help=f"learned: optimiser steps per batch of rollouts (default {LearnedRLConfig.epochs})."
        ),
        heldout_tasks: Optional[Path] = typer.Option(
            None,
            "--heldout-tasks",
            help=f"learned: tasks for the greedy held-apart checks (default: {LearnedRLConfig.holdout:.0%} of --tasks, "
            "not trained on).",
        ),
        collapse_penalty: Optional[float] = typer.Option(
            None, "--collapse-penalty", help=f"Single-search collapse penalty (default {RewardConfig.collapse})."
        ),
        questions_per_step: Optional[int] = typer.Option(
            None, "--questions", help=f"Tasks per update ({_per_route('questions_per_step')}; Context-1: 128)."
        ),
        num_generations: Optional[int] = typer.Option(
            None, "--num-generations", help=f"Rollouts per task, the GRPO group ({_per_route('group')}; Context-1: 8)."
        ),
        loss_type: str = _llm_option("loss_type", "--loss-type"),
        beta: float = _llm_option("beta", "--beta"),
        lr: Optional[float] = typer.Option(None, "--lr", help=f"Learning rate ({_per_route('lr')})."),
        budget_tokens: int = BudgetTokensOpt,
        max_turns: int = MaxTurnsOpt,
        max_new_tokens: int = MaxNewTokensOpt,
        search_k: int = SearchKOpt,
        search_tokens: int = SearchTokensOpt,
        lora: bool = _llm_option("lora", "--lora"),
        bf16: bool = _llm_option("bf16", "--bf16"),
        micro_batches: int = _llm_option("micro_batches", "--micro-batches"),
        vllm_url: Optional[str] = _llm_option("vllm_server_base_url", "--vllm-server-url"),
        use_vllm: bool = _llm_option("use_vllm", "--use-vllm"),
        vllm_mode: str = _llm_option("vllm_mode", "--vllm-mode"),
        data_dir: Optional[Path] = DataDirOpt,
        chroma_url: Optional[str] = ChromaUrlOpt,
        embedder: Optional[str] = EmbedderOpt,
        as_json: bool = JsonOpt,
        model_path: Optional[str] = _old_option("--init"),
        limit: Optional[int] = _old_option("--n"),
    ) -> None:
        """GRPO over the Sieve harness: groups of real episodes rewarded on recall (the learned policy by default)."""
        _check_choice(policy, ("learned", "llm"), "--policy")
        init = _renamed(None if init == "default" else init, model_path, "--model-path", "--init") or "default"
        if policy == "llm":
            init = _student_init(None if init == "default" else init)
        n = _renamed(n, limit, "--limit", "--n")
        s = settings_from(data_dir, chroma_url, embedder, collection=collection)
        if policy == "learned":
            _learned_rl(
                s,
                tasks,
                out,
                minutes,
                seed,
                init,
                epochs,
                collapse_penalty,
                steps,
                questions_per_step,
                num_generations,
                lr,
                n,
                heldout_tasks,
                as_json,
            )
            return
        from sieve.train.llm.rl import RLConfig, run_rl

        index = _open_index(s)
        episode = EpisodeConfig(
            budget_tokens=budget_tokens,
            max_turns=max_turns,
            max_new_tokens=max_new_tokens,
            search_k=search_k,
            search_tokens=search_tokens,
        )
        cfg = RLConfig(
            tasks=tasks,
            out=out,
            model_path=None if init == "default" else init,
            steps=steps,
            minutes=minutes,
            loss_type=loss_type,
            beta=beta,
            episode=episode,
            lora=lora,
            bf16=bf16,
            micro_batches=micro_batches,
            use_vllm=use_vllm,
            vllm_mode=vllm_mode,
            vllm_server_base_url=vllm_url,
            limit=n,
            seed=seed,
            reward=_reward_config(collapse_penalty),
            **_given(questions_per_step=questions_per_step, group=num_generations, lr=lr),
        )
        result = run_rl(index, cfg, progress=not as_json)
        if as_json:
            print_json(result)
            return
        stop = "the time budget" if result["stopped_by"] == "minutes" else "the step cap"
        typer.echo(
            f"GRPO {plural(result['steps'], 'step')} -> {result['model_dir']} (ended by {stop}); mean reward "
            f"first/last step: {result['reward_first']:.3f} / {result['reward_last']:.3f}; curve in "
            f"{result['log']}"
        )

    @train.command("all")
    @cli_errors
    def all_cmd(
        corpus: Path = typer.Option(..., "--corpus", help=f"File or folder to index ({formats_help()})."),
        collection: Optional[str] = CollectionOpt,
        out: Path = typer.Option(Path("runs/train"), "--out", help="Run folder (tasks, sft/, rl/, eval/)."),
        n: Optional[int] = _n_option(
            f"{_field(PipelineConfig, 'n').metadata['help'][:-1]} (default {_field(PipelineConfig, 'n').default})."
        ),
        generator: str = typer.Option("auto", "--generator", help=f"{pipeline_writer_help()}."),
        minutes: Optional[float] = _minutes_option(
            "the whole run (learned: training gets what indexing, synthesis and the checks leave)"
        ),
        steps: Optional[int] = _steps_option(
            f"GRPO updates (unset: learned {DEFAULT_UPDATES}, --llm {_field(PipelineConfig, 'llm_steps').default}; "
            "no cap with --minutes)"
        ),
        init: str = typer.Option(
            "default",
            "--init",
            help="Where training starts. learned: 'default' (the shipped "
            "checkpoint, which the verdict compares against), 'none' (a fresh network) or a "
            "checkpoint folder; --llm: 'default' (SmolLM2-135M) or an HF folder.",
        ),
        eval_tasks: Optional[Path] = typer.Option(
            None,
            "--eval-tasks",
            help="Labelled questions of this corpus to report on too (never trained on); they decide the verdict.",
        ),
        llm: bool = typer.Option(
            False,
            "--llm",
            help="The language-model route (SFT + GRPO; for GPU machines) instead of the learned policy network.",
        ),
        ranker: str = typer.Option("keep", "--ranker", help=_field(PipelineConfig, "ranker").metadata["help"]),
        adapt_embedder: bool = typer.Option(
            _field(PipelineConfig, "embedder").default == "adapt",
            "--adapt-embedder/--keep-embedder",
            help=_field(PipelineConfig, "embedder").metadata["help"],
        ),
        adopt: bool = typer.Option(
            _field(PipelineConfig, "adopt").default,
            "--adopt/--no-adopt",
            help=_field(PipelineConfig, "adopt").metadata["help"],
        ),
        seed: int = typer.Option(0, "--seed", help="Synthesis and training seed."),
        data_dir: Optional[Path] = DataDirOpt,
        chroma_url: Optional[str] = ChromaUrlOpt,
        embedder: Optional[str] = EmbedderOpt,
        as_json: bool = JsonOpt,
        n_tasks: Optional[int] = _old_option("--n"),
        rl_steps: Optional[int] = _old_option("--steps"),
        rl_minutes: Optional[float] = _old_option("--minutes"),
        model_path: Optional[str] = _old_option("--init"),
    ) -> None:
        """Index CORPUS, synthesize tasks, train by RL (learned policy; --llm: SFT + GRPO), then compare with the
        shipped default on held-apart tasks (and --eval-tasks): the retrained policy is recommended only if better."""
        from sieve.train.pipeline import run_pipeline

        _check_choice(generator, pipeline_writers(), "--generator")
        _check_choice(ranker, ("keep", "retrain"), "--ranker")
        n = _renamed(n, n_tasks, "--n-tasks", "--n")
        steps = _renamed(steps, rl_steps, "--rl-steps", "--steps")
        minutes = _renamed(minutes, rl_minutes, "--rl-minutes", "--minutes")
        init = _renamed(None if init == "default" else init, model_path, "--model-path", "--init") or "default"
        if llm:
            init = _student_init(None if init == "default" else init)
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
            **_given(n=n),
        )
        result = run_pipeline(cfg, s.retriever_config(), progress=not as_json)
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
            typer.echo(f"Done: model {result['model_dir']}")
        typer.echo(f"Report: {result['report']}; summary: {result['summary']}")

    add_embedder_command(train)
    app.add_typer(train)

    @app.command("adopt")
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


__all__ = ["register"]
