"""``sieve train rl``: GRPO of the learned policy network (CPU), or of a language model (``--policy llm``, GPU)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

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
from sieve.cli.commands._train_options import (
    BudgetTokensOpt,
    MaxNewTokensOpt,
    MaxTurnsOpt,
    SearchKOpt,
    SearchTokensOpt,
    check_choice,
    config_default,
    config_option,
    episode,
    given,
    llm_option,
    minutes_option,
    model_path_of,
    n_option,
    old_option,
    open_index,
    per_route,
    renamed,
    renamed_init,
    reward_config,
    steps_option,
    student_init,
)
from sieve.train.learned.config import DEFAULT_UPDATES, LearnedRLConfig
from sieve.train.llm.rl import DEFAULT_STEPS, RLConfig
from sieve.train.pipeline import PipelineConfig
from sieve.train.rewards.config import RewardConfig

if TYPE_CHECKING:
    from sieve.settings import Settings

ROUTES = ("learned", "llm")

PolicyOpt = typer.Option(
    config_default(PipelineConfig, "route"),
    "--policy",
    help="learned (small network, CPU: minutes) | llm (a language model via TRL GRPO; GPU route).",
)
InitOpt = config_option(
    LearnedRLConfig,
    "init",
    help="Where training starts. learned: 'default' (the shipped "
    "checkpoint), 'none' (a fresh network, warm-started on the heuristic) or a checkpoint "
    "folder; llm: 'default' (SmolLM2-135M) or an HF folder (e.g. runs/sft/model).",
)
# Knobs whose default differs by route are unset on the command line, so each config's default holds.
EpochsOpt = typer.Option(
    None, "--epochs", help=f"learned: optimiser steps per batch of rollouts (default {LearnedRLConfig.epochs})."
)
HeldoutTasksOpt = typer.Option(
    None,
    "--heldout-tasks",
    help=f"learned: tasks for the greedy held-apart checks (default: {LearnedRLConfig.holdout:.0%} of --tasks, "
    "not trained on).",
)
CollapsePenaltyOpt = typer.Option(
    None, "--collapse-penalty", help=f"Single-search collapse penalty (default {RewardConfig.collapse})."
)
QuestionsOpt = typer.Option(
    None, "--questions", help=f"Tasks per update ({per_route('questions_per_step')}; Context-1: 128)."
)
NumGenerationsOpt = typer.Option(
    None, "--num-generations", help=f"Rollouts per task, the GRPO group ({per_route('group')}; Context-1: 8)."
)
LrOpt = typer.Option(None, "--lr", help=f"Learning rate ({per_route('lr')}).")
StepsOpt = steps_option(f"updates (unset: learned {DEFAULT_UPDATES}, llm {DEFAULT_STEPS}; no cap with --minutes)")
# Each route's run folder defaults to its own config's, as the Python API's does (the CLI once gave the
# learned route the LLM route's runs/rl).
OutOpt = typer.Option(None, "--out", help=f"Run folder (checkpoint in OUT/model; a rerun resumes; {per_route('out')}).")
SeedOpt = config_option(LearnedRLConfig, "seed", help="Seed (task order, sampling, network init).")


@cli_errors
def rl_cmd(
    tasks: Path = typer.Option(..., "--tasks", help="Tasks JSONL."),
    collection: Optional[str] = CollectionOpt,
    policy: str = PolicyOpt,
    out: Optional[Path] = OutOpt,
    minutes: Optional[float] = minutes_option("the run (learned: set-up, screen and checks included)"),
    steps: Optional[int] = StepsOpt,
    n: Optional[int] = n_option("Use only the first N tasks."),
    seed: int = SeedOpt,
    init: str = InitOpt,
    epochs: Optional[int] = EpochsOpt,
    heldout_tasks: Optional[Path] = HeldoutTasksOpt,
    collapse_penalty: Optional[float] = CollapsePenaltyOpt,
    questions_per_step: Optional[int] = QuestionsOpt,
    num_generations: Optional[int] = NumGenerationsOpt,
    loss_type: str = llm_option("loss_type", "--loss-type"),
    beta: float = llm_option("beta", "--beta"),
    lr: Optional[float] = LrOpt,
    budget_tokens: int = BudgetTokensOpt,
    max_turns: int = MaxTurnsOpt,
    max_new_tokens: int = MaxNewTokensOpt,
    search_k: int = SearchKOpt,
    search_tokens: int = SearchTokensOpt,
    lora: bool = llm_option("lora", "--lora"),
    bf16: bool = llm_option("bf16", "--bf16"),
    micro_batches: int = llm_option("micro_batches", "--micro-batches"),
    vllm_url: Optional[str] = llm_option("vllm_server_base_url", "--vllm-server-url"),
    use_vllm: bool = llm_option("use_vllm", "--use-vllm"),
    vllm_mode: str = llm_option("vllm_mode", "--vllm-mode"),
    data_dir: Optional[Path] = DataDirOpt,
    chroma_url: Optional[str] = ChromaUrlOpt,
    embedder: Optional[str] = EmbedderOpt,
    as_json: bool = JsonOpt,
    model_path: Optional[str] = old_option("--init"),
    limit: Optional[int] = old_option("--n"),
) -> None:
    """GRPO over the Sieve harness: groups of real episodes rewarded on recall (the learned policy by default)."""
    check_choice(policy, ROUTES, "--policy")
    init = renamed_init(init, model_path)
    if policy == "llm":
        init = student_init(init)
    n = renamed(n, limit, "--limit", "--n")
    s = settings_from(data_dir, chroma_url, embedder, collection=collection)
    # The knobs both routes' configs have; a route's own default holds for each one left unset.
    shared: dict[str, Any] = {"tasks": tasks, "steps": steps, "minutes": minutes, "limit": n, "seed": seed}
    shared["reward"] = reward_config(collapse_penalty)
    shared |= given(out=out, questions_per_step=questions_per_step, group=num_generations, lr=lr)
    if policy == "learned":
        _learned_rl(s, shared, init=init, epochs=epochs, heldout_tasks=heldout_tasks, as_json=as_json)
        return
    llm = {"loss_type": loss_type, "beta": beta, "lora": lora, "bf16": bf16, "micro_batches": micro_batches}
    llm |= {"use_vllm": use_vllm, "vllm_mode": vllm_mode, "vllm_server_base_url": vllm_url}
    episode_flags = (budget_tokens, max_turns, max_new_tokens, search_k, search_tokens)
    _llm_rl(s, shared, model_path=model_path_of(init), llm=llm, episode_flags=episode_flags, as_json=as_json)


def _learned_rl(
    s: Settings, shared: dict[str, Any], *, init: str, epochs: int | None, heldout_tasks: Path | None, as_json: bool
) -> None:
    """``sieve train rl --policy learned``: warm start + GRPO of the small policy network (CPU)."""
    import shlex
    import sys

    index = open_index(s)
    from sieve.train.learned import run_learned_rl

    cfg = LearnedRLConfig(
        init=init,
        heldout_tasks=heldout_tasks,
        command="sieve " + shlex.join(sys.argv[1:]),
        **shared,
        **given(epochs=epochs),
    )
    result = run_learned_rl(index, cfg, progress=not as_json)
    if as_json:
        print_json(result)
        return
    typer.echo(_learned_summary(result, cfg))


def _learned_summary(result: dict[str, Any], cfg: LearnedRLConfig) -> str:
    """One line on a learned run: updates, reward and recall from first to last window, held-apart, screen."""
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
    return msg + f"; {result['stop']}; curves in {cfg.out / 'curve.md'}"


def _llm_rl(
    s: Settings,
    shared: dict[str, Any],
    *,
    model_path: str | None,
    llm: dict[str, Any],
    episode_flags: tuple[int, int, int, int, int],
    as_json: bool,
) -> None:
    """``sieve train rl --policy llm``: GRPO of a language model through TRL (a GPU route)."""
    from sieve.train.llm.rl import run_rl

    index = open_index(s)
    cfg = RLConfig(model_path=model_path, episode=episode(*episode_flags), **llm, **shared)
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


__all__ = ["rl_cmd"]
