"""``sieve train synth|sft|rl|all``: retrain the search policy on any corpus."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from sieve.errors import InvalidInput
from sieve.server.commands._common import (
    ChromaUrlOpt, CollectionOpt, DataDirOpt, EmbedderOpt, JsonOpt, cli_errors, plural, print_json, settings_from,
)
from sieve.train.config import EpisodeConfig

if TYPE_CHECKING:
    from sieve.retriever import CorpusIndex
    from sieve.settings import Settings

_GENERATORS = ("heuristic", "claims", "local", "openai")


def _open_index(s: Settings) -> CorpusIndex:
    from sieve.retriever import CorpusIndex

    return CorpusIndex.open(s.retriever_config(), s.collection, create=False)


def _check_choice(value: str, valid: tuple[str, ...], flag: str) -> str:
    if value not in valid:
        raise InvalidInput(f"Expected {flag} in {list(valid)}, got {value!r}")
    return value


def _episode_option(name: str) -> Any:
    """A flag for ``EpisodeConfig.<name>`` with that field's default and help: defined once, for sft and rl."""
    field = next(f for f in fields(EpisodeConfig) if f.name == name)
    return typer.Option(field.default, "--" + name.replace("_", "-"), help=field.metadata["help"])


# The episode a policy is trained on must be the episode it is served with: `train sft` and
# `train rl` share these flags, and their defaults are EpisodeConfig's.
BudgetTokensOpt = _episode_option("budget_tokens")
MaxTurnsOpt = _episode_option("max_turns")
MaxNewTokensOpt = _episode_option("max_new_tokens")
SearchKOpt = _episode_option("search_k")
SearchTokensOpt = _episode_option("search_tokens")


def _reward_config(collapse_penalty: float | None) -> Any:
    from sieve.train.rewards import RewardConfig

    return RewardConfig() if collapse_penalty is None else RewardConfig(collapse=collapse_penalty)


def _learned_rl(s: Settings, tasks: Path, out: Path, minutes: float | None, seed: int, init: str | None, epochs: int,
                collapse_penalty: float | None, steps: int | None, questions: int | None, generations: int | None,
                lr: float | None, limit: int | None, heldout_tasks: Path | None, as_json: bool) -> None:
    """``sieve train rl --policy learned``: warm start + GRPO of the small policy network (CPU)."""
    import shlex
    import sys

    index = _open_index(s)
    from sieve.train.learned import LearnedRLConfig, run_learned_rl

    cfg = LearnedRLConfig(tasks=tasks, out=out, init=init, updates=steps or 200, minutes=minutes,
                          tasks_per_update=questions or 4, group=generations or 8, epochs=epochs, lr=lr or 1e-3,
                          limit=limit, seed=seed, reward=_reward_config(collapse_penalty), heldout_tasks=heldout_tasks,
                          command="sieve " + shlex.join(sys.argv[1:]))
    result = run_learned_rl(index, cfg, progress=not as_json)
    if as_json:
        print_json(result)
        return
    first, last = result.get("curve_first_window", {}), result.get("curve_last_window", {})
    msg = (f"{result['updates']} GRPO updates in {result['rl_seconds'] / 60:.1f} min -> {result['model_dir']}; "
           f"batch reward {first.get('reward', 0):.3f} -> {last.get('reward', 0):.3f}, recall@{cfg.k} "
           f"{first.get('recall', 0):.3f} -> {last.get('recall', 0):.3f}")
    if "heldout_end" in result:
        msg += (f"; held-apart recall@{cfg.k} {result['heldout_start']['recall']:.3f} -> "
                f"{result['heldout_end']['recall']:.3f}")
    typer.echo(msg + f"; curves in {out / 'curve.md'}")


def register(app: typer.Typer) -> None:
    train = typer.Typer(name="train", help="Retrain on your corpus: synthesize tasks, GRPO (the learned policy; or "
                        "a language model after an SFT warm start), all.", no_args_is_help=True)

    @train.command("synth")
    @cli_errors
    def synth_cmd(
        collection: Optional[str] = CollectionOpt,
        n: int = typer.Option(500, "--n", help="Verified tasks wanted (a rerun resumes up to N)."),
        out: Path = typer.Option(Path("tasks.jsonl"), "--out", help="Output JSONL (shared/eval tasks schema)."),
        generator: str = typer.Option("heuristic", "--generator", help="heuristic (multi-hop templates, no model) | claims "
                                       "(single-hop claims from finding sentences, no model: scientific or "
                                       "report-like text) | local | openai."),
        seed: int = typer.Option(0, "--seed", help="Seed of the bridge order (same seed, same tasks)."),
        model_path: Optional[str] = typer.Option(None, "--model-path", help="local: HF model folder (default SmolLM2)."),
        base_url: Optional[str] = typer.Option(None, "--base-url", help="openai: endpoint, e.g. http://host:8001/v1."),
        model: Optional[str] = typer.Option(None, "--model", help="openai: model name."),
        api_key: Optional[str] = typer.Option(None, "--api-key", help="openai: key (default $SIEVE_TRAIN_API_KEY)."),
        reader_check: bool = typer.Option(False, "--reader-check", help="LLM generators: reject bridge-only answers."),
        comparison_share: float = typer.Option(0.3, "--comparison-share",
                                               help="heuristic: share of 'which of A and B' questions (0-1)."),
        data_dir: Optional[Path] = DataDirOpt, chroma_url: Optional[str] = ChromaUrlOpt,
        embedder: Optional[str] = EmbedderOpt, as_json: bool = JsonOpt,
    ) -> None:
        """Synthesize verified tasks (gold chunks + hard distractors) from COLLECTION: multi-hop questions, or
        single-hop claims (--generator claims)."""
        from sieve.train.synth import SynthConfig, make_writer, no_tasks_message, synthesize

        _check_choice(generator, _GENERATORS, "--generator")
        s = settings_from(data_dir, chroma_url, embedder, collection=collection, train_api_key=api_key)
        index = _open_index(s)
        cfg = SynthConfig(n=n, seed=seed, generator=generator, reader_check=reader_check,  # type: ignore[arg-type]
                          comparison_share=comparison_share)
        writer = make_writer(cfg.generator, model_path=model_path, base_url=base_url, model=model,
                             api_key=s.train_api_key, models_dir=index.config.models_dir, seed=seed)
        report = synthesize(index, out, cfg, writer, progress=not as_json)
        empty = no_tasks_message(report, cfg.generator, f"collection {index.name!r}")
        if empty:
            raise InvalidInput(empty)
        if as_json:
            print_json(report.to_dict())
            return
        typer.echo(f"{plural(report.written, 'new task')} ({report.existing} already there) -> {out} in "
                   f"{report.seconds:.1f}s; {plural(report.drafts, 'draft')} from {plural(report.bridges_tried, 'bridge chunk')}; "
                   f"rejected: {dict(report.rejected) or 'none'}")
        if report.single_shot_recall_at_10 is not None:
            typer.echo(f"single-shot hybrid recall@10 on these claims: {report.single_shot_recall_at_10:.3f} "
                       "(claims keep their source's wording: expect them easier than hand-written ones)")

    @train.command("sft")
    @cli_errors
    def sft_cmd(
        tasks: Path = typer.Option(..., "--tasks", help="Tasks JSONL (from `sieve train synth`)."),
        collection: Optional[str] = CollectionOpt,
        out: Path = typer.Option(Path("runs/sft"), "--out", help="Output folder (merged HF checkpoint in OUT/model)."),
        model_path: Optional[str] = typer.Option(None, "--model-path", help="Student HF folder (default SmolLM2-135M)."),
        teacher: str = typer.Option("heuristic", "--teacher", help="heuristic | openai | local (trajectory source)."),
        min_recall: float = typer.Option(0.5, "--min-recall", help="Keep teacher episodes with trajectory recall >= this."),
        epochs: float = typer.Option(2.0, "--epochs", help="SFT epochs."),
        lr: float = typer.Option(5e-5, "--lr", help="Learning rate."),
        max_length: int = typer.Option(2048, "--max-length", help="Longest training sequence (tokens)."),
        holdout: float = typer.Option(0.2, "--holdout", help="Share of tasks held out to measure valid tool calls."),
        limit: Optional[int] = typer.Option(None, "--limit", help="Use only the first N tasks."),
        lora: bool = typer.Option(False, "--lora", help="Train a LoRA adapter (merged into the saved model)."),
        bf16: bool = typer.Option(False, "--bf16", help="bfloat16 autocast (GPUs; CPUs with AVX512-BF16)."),
        base_url: Optional[str] = typer.Option(None, "--base-url", help="openai teacher: endpoint."),
        teacher_model: Optional[str] = typer.Option(None, "--teacher-model", help="openai teacher: model name."),
        budget_tokens: int = BudgetTokensOpt, max_turns: int = MaxTurnsOpt, max_new_tokens: int = MaxNewTokensOpt,
        search_k: int = SearchKOpt, search_tokens: int = SearchTokensOpt,
        data_dir: Optional[Path] = DataDirOpt, chroma_url: Optional[str] = ChromaUrlOpt,
        embedder: Optional[str] = EmbedderOpt, as_json: bool = JsonOpt,
    ) -> None:
        """Warm-start the student on teacher trajectories (TRL SFTTrainer), then measure its valid tool-call rate."""
        from sieve.train.sft import WarmStartConfig, run_sft

        _check_choice(teacher, ("heuristic", "openai", "local"), "--teacher")
        index = _open_index(settings_from(data_dir, chroma_url, embedder, collection=collection))
        episode = EpisodeConfig(budget_tokens=budget_tokens, max_turns=max_turns, max_new_tokens=max_new_tokens,
                                search_k=search_k, search_tokens=search_tokens)
        cfg = WarmStartConfig(tasks=tasks, out=out, model_path=model_path, teacher=teacher,  # type: ignore[arg-type]
                              min_recall=min_recall, epochs=epochs, learning_rate=lr, max_length=max_length,
                              holdout=holdout, limit=limit, lora=lora, bf16=bf16, teacher_base_url=base_url,
                              teacher_model=teacher_model, episode=episode)
        result = run_sft(index, cfg, progress=not as_json)
        if as_json:
            print_json(result)
            return
        msg = (f"SFT on {plural(result['n_train_examples'], 'turn')} from "
               f"{plural(result['n_kept_episodes'], 'teacher episode')} -> {result['model_dir']}")
        if result["heldout"]:
            msg += (f"; valid tool-call rate on {plural(result['heldout']['n_tasks'], 'held-out task')}: "
                    f"{result['heldout']['valid_tool_call_rate']:.1%}")
            if result["heldout_before"]:
                msg += f" (before SFT {result['heldout_before']['valid_tool_call_rate']:.1%})"
        typer.echo(msg)

    @train.command("rl")
    @cli_errors
    def rl_cmd(
        tasks: Path = typer.Option(..., "--tasks", help="Tasks JSONL."),
        collection: Optional[str] = CollectionOpt,
        policy: str = typer.Option("learned", "--policy", help="learned (small network, CPU: minutes) | "
                                   "llm (a language model via TRL GRPO; GPU route)."),
        out: Path = typer.Option(Path("runs/rl"), "--out", help="Run folder (checkpoint in OUT/model; a rerun resumes)."),
        minutes: Optional[float] = typer.Option(None, "--minutes", help="learned: wall-clock budget of RL."),
        seed: int = typer.Option(0, "--seed", help="Seed (task order, sampling, network init)."),
        init: Optional[str] = typer.Option(None, "--init", help="learned: start checkpoint folder, or 'default' "
                                           "(the shipped one); none: fresh network warm-started on the heuristic."),
        epochs: int = typer.Option(4, "--epochs", help="learned: optimiser steps per batch of rollouts."),
        heldout_tasks: Optional[Path] = typer.Option(None, "--heldout-tasks", help="learned: tasks for the greedy "
                                                     "held-apart checks (default: 15% of --tasks, not trained on)."),
        collapse_penalty: Optional[float] = typer.Option(None, "--collapse-penalty",
                                                         help="Single-search collapse penalty (default 0.5)."),
        model_path: Optional[str] = typer.Option(None, "--model-path", help="llm: start policy (e.g. runs/sft/model)."),
        steps: Optional[int] = typer.Option(None, "--steps", help="Updates (learned: 200; llm: 100 GRPO steps)."),
        questions_per_step: Optional[int] = typer.Option(None, "--questions", help="Tasks per update "
                                                         "(learned: 4; llm: 2; Context-1: 128)."),
        num_generations: Optional[int] = typer.Option(None, "--num-generations", help="Rollouts per task, the GRPO "
                                                      "group (learned: 8; llm: 4; Context-1: 8)."),
        loss_type: str = typer.Option("cispo", "--loss-type", help="llm: cispo | grpo | dapo | dr_grpo | bnpo | ..."),
        beta: float = typer.Option(0.0, "--beta", help="llm: KL coefficient towards the start policy."),
        lr: Optional[float] = typer.Option(None, "--lr", help="Learning rate (learned: 1e-3; llm: 1e-6)."),
        budget_tokens: int = BudgetTokensOpt, max_turns: int = MaxTurnsOpt, max_new_tokens: int = MaxNewTokensOpt,
        search_k: int = SearchKOpt, search_tokens: int = SearchTokensOpt,
        lora: bool = typer.Option(False, "--lora", help="Train a LoRA adapter (peft), merged on save."),
        bf16: bool = typer.Option(False, "--bf16", help="bfloat16 autocast."),
        micro_batches: int = typer.Option(1, "--micro-batches", help="Split each step's segments (memory)."),
        vllm_url: Optional[str] = typer.Option(None, "--vllm-server-url", help="server mode: http://host:8000."),
        use_vllm: bool = typer.Option(False, "--use-vllm", help="Generate with vLLM (GPU); see train/configs/."),
        vllm_mode: str = typer.Option("colocate", "--vllm-mode", help="colocate | server."),
        limit: Optional[int] = typer.Option(None, "--limit", help="Use only the first N tasks."),
        data_dir: Optional[Path] = DataDirOpt, chroma_url: Optional[str] = ChromaUrlOpt,
        embedder: Optional[str] = EmbedderOpt, as_json: bool = JsonOpt,
    ) -> None:
        """GRPO over the Sieve harness: groups of real episodes rewarded on recall (the learned policy by default)."""
        _check_choice(policy, ("learned", "llm"), "--policy")
        s = settings_from(data_dir, chroma_url, embedder, collection=collection)
        if policy == "learned":
            _learned_rl(s, tasks, out, minutes, seed, init, epochs, collapse_penalty, steps, questions_per_step,
                        num_generations, lr, limit, heldout_tasks, as_json)
            return
        from sieve.train.rl import RLConfig, run_rl

        index = _open_index(s)
        episode = EpisodeConfig(budget_tokens=budget_tokens, max_turns=max_turns, max_new_tokens=max_new_tokens,
                                search_k=search_k, search_tokens=search_tokens)
        cfg = RLConfig(tasks=tasks, out=out, model_path=model_path, max_steps=steps or 100,
                       questions_per_step=questions_per_step or 2, num_generations=num_generations or 4,
                       loss_type=loss_type, beta=beta, learning_rate=lr or 1e-6, episode=episode, lora=lora, bf16=bf16,
                       micro_batches=micro_batches, use_vllm=use_vllm, vllm_mode=vllm_mode,
                       vllm_server_base_url=vllm_url, limit=limit, seed=seed, reward=_reward_config(collapse_penalty))
        result = run_rl(index, cfg, progress=not as_json)
        if as_json:
            print_json(result)
            return
        typer.echo(f"GRPO {plural(result['steps'], 'step')} -> {result['model_dir']}; mean reward first/last step: "
                   f"{result['reward_first']:.3f} / {result['reward_last']:.3f}; curve in {result['log']}")

    @train.command("all")
    @cli_errors
    def all_cmd(
        corpus: Path = typer.Option(..., "--corpus", help="File or folder to index (.jsonl .txt .md .html .pdf)."),
        collection: Optional[str] = CollectionOpt,
        out: Path = typer.Option(Path("runs/train"), "--out", help="Run folder (tasks, sft/, rl/, eval/)."),
        n_tasks: int = typer.Option(60, "--n-tasks", help="Tasks to synthesize."),
        generator: str = typer.Option("auto", "--generator", help="auto (multi-hop templates, then claims for what "
                                      "they leave) | heuristic | claims."),
        rl_steps: Optional[int] = typer.Option(None, "--rl-steps", help="GRPO updates (learned: 200; --llm: 10)."),
        rl_minutes: Optional[float] = typer.Option(None, "--rl-minutes", help="learned: wall-clock budget of RL."),
        eval_tasks: Optional[Path] = typer.Option(None, "--eval-tasks", help="Labelled questions of this corpus to "
                                                  "report on too (never trained on)."),
        llm: bool = typer.Option(False, "--llm", help="The language-model route (SFT + GRPO; for GPU machines) "
                                 "instead of the learned policy network."),
        model_path: Optional[str] = typer.Option(None, "--model-path", help="--llm: student HF folder "
                                                 "(default SmolLM2-135M)."),
        seed: int = typer.Option(0, "--seed", help="Synthesis and training seed."),
        data_dir: Optional[Path] = DataDirOpt, chroma_url: Optional[str] = ChromaUrlOpt,
        embedder: Optional[str] = EmbedderOpt, as_json: bool = JsonOpt,
    ) -> None:
        """Index CORPUS, synthesize tasks, train by RL (learned policy; --llm: SFT + GRPO), report on held-out tasks."""
        from sieve.train.pipeline import PipelineConfig, run_pipeline

        _check_choice(generator, ("auto", "heuristic", "claims"), "--generator")
        s = settings_from(data_dir, chroma_url, embedder, collection=collection)
        cfg = PipelineConfig(corpus=corpus, collection=s.collection, out=out, n_tasks=n_tasks, rl_steps=rl_steps,
                             generator=generator,  # type: ignore[arg-type]
                             model_path=model_path, seed=seed, route="llm" if llm else "learned",
                             rl_minutes=rl_minutes, eval_tasks=eval_tasks)
        result = run_pipeline(cfg, s.retriever_config(), progress=not as_json)
        if as_json:
            print_json(result)
            return
        typer.echo(f"Done: model {result['model_dir']}; report {result['report']}")

    app.add_typer(train)


__all__ = ["register"]
