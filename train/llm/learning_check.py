"""CPU learning check (a script, not a unit test): SFT warm start, then GRPO, on HotpotQA tasks.

    python -m sieve.train.llm.learning_check --out runs/learning-check [--rl-minutes 20] [--eval-tasks 10]

Stages (each writes its results into ``OUT`` as it finishes, so a killed run keeps them):
1. index ``--data``'s corpus (cached; bf16 embeddings);
2. split the tasks: a held-apart evaluation set, never trained on; the rest is the training pool;
3. SFT SmolLM2-135M on heuristic-teacher trajectories of ``--sft-tasks`` training tasks;
4. evaluate base and SFT models on the held-apart tasks (greedy, exactly as served);
5. GRPO from the SFT model on further training tasks for ``--rl-steps`` or ``--rl-minutes``;
6. evaluate the RL model on the same held-apart tasks; plot reward, its components and
   searches per episode per step (``curve.png``) and write ``summary.md`` + ``results.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sieve.retriever import CorpusIndex
    from sieve.train.config import EpisodeConfig

logger = logging.getLogger("sieve.train.llm.learning_check")

CURVE_KEYS = (
    "reward/total",
    "reward/context1",
    "reward/f_beta",
    "reward/traj_recall",
    "reward/answer",
    "reward/p_collapse",
    "reward/p_malformed",
    "reward/p_repeat",
    "reward/p_gold_prune",
)


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return path


def plot_curve(history: list[dict[str, Any]], path: Path) -> Path | None:
    """Mean reward, its components and searches per episode against the RL step (PNG)."""
    if not history:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = list(range(1, len(history) + 1))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    axes[0].plot(steps, [h["reward/total"] for h in history], marker="o", label="total (trained on)")
    axes[0].plot(steps, [h["reward/context1"] for h in history], marker=".", label="Context-1 part")
    axes[0].set_title("mean episode reward")
    for key in CURVE_KEYS[2:]:
        axes[1].plot(steps, [h.get(key, 0.0) for h in history], marker=".", label=key.split("/")[1])
    axes[1].set_title("reward components (means)")
    axes[2].plot(steps, [h["searches_per_episode"] for h in history], marker="o", label="searches / episode")
    axes[2].plot(steps, [h["single_search_rate"] for h in history], marker=".", label="share with <= 1 search")
    axes[2].plot(steps, [h["turns_per_episode"] for h in history], marker=".", label="turns / episode")
    axes[2].set_title("behaviour")
    for ax in axes:
        ax.set_xlabel("GRPO step")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def curve_table(history: list[dict[str, Any]]) -> str:
    cols = [
        "step",
        "reward",
        "f_beta",
        "traj_recall",
        "answer",
        "p_collapse",
        "p_malformed",
        "searches/ep",
        "<=1 search",
        "turns/ep",
        "segments",
    ]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for i, h in enumerate(history, start=1):
        lines.append(
            "| "
            + " | ".join(
                [
                    str(i),
                    f"{h['reward/total']:.3f}",
                    f"{h['reward/f_beta']:.3f}",
                    f"{h['reward/traj_recall']:.3f}",
                    f"{h['reward/answer']:.2f}",
                    f"{h['reward/p_collapse']:.3f}",
                    f"{h['reward/p_malformed']:.3f}",
                    f"{h['searches_per_episode']:.2f}",
                    f"{h['single_search_rate']:.2f}",
                    f"{h['turns_per_episode']:.2f}",
                    str(h["segments"]),
                ]
            )
            + " |"
        )
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "eval" / "hotpotqa")
    ap.add_argument("--out", type=Path, default=Path("runs/learning-check"))
    ap.add_argument("--data-dir", type=Path, default=None, help="Sieve data dir for the cached index.")
    ap.add_argument("--collection", default="hotpotqa")
    ap.add_argument("--model-path", default=None, help="Student (default SmolLM2-135M from its wheel).")
    ap.add_argument("--eval-tasks", type=int, default=10, help="Held-apart tasks evaluated.")
    ap.add_argument("--holdout", type=float, default=0.2, help="Share of tasks held apart (never trained on).")
    ap.add_argument("--sft-tasks", type=int, default=24)
    ap.add_argument("--sft-epochs", type=float, default=1.0)
    ap.add_argument("--sft-lr", type=float, default=5e-5)
    ap.add_argument("--rl-steps", type=int, default=200)
    ap.add_argument("--rl-minutes", type=float, default=20.0, help="Stop GRPO after this much wall time.")
    ap.add_argument("--rl-lr", type=float, default=1e-5)
    ap.add_argument("--questions", type=int, default=1)
    ap.add_argument("--generations", type=int, default=4)
    ap.add_argument("--loss-type", default="cispo")
    ap.add_argument("--max-turns", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--budget-tokens", type=int, default=1280)
    ap.add_argument("--bf16", action="store_true", default=True)
    ap.add_argument("--no-bf16", dest="bf16", action="store_false")
    ap.add_argument("--skip-base-eval", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    return ap


class _Results:
    """``OUT/results.json``, rewritten as each stage finishes (so a killed run keeps what it had)."""

    def __init__(self, out: Path, args: argparse.Namespace) -> None:
        self.out, self.t0 = out, time.perf_counter()
        self.data: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, "evals": {}}

    def save(self) -> None:
        self.data["seconds"] = round(time.perf_counter() - self.t0, 1)
        (self.out / "results.json").write_text(json.dumps(self.data, indent=2, default=str), encoding="utf-8")


def _open_index(args: argparse.Namespace) -> CorpusIndex:
    """The ``--data`` corpus's index (cached in ``--data-dir``; bf16 embeddings), built on first use."""
    from sieve.retriever import CorpusIndex
    from sieve.settings import load_settings

    rcfg = load_settings(embed_backend="torch", embed_dtype="bfloat16", data_dir=args.data_dir).retriever_config()
    index = CorpusIndex.open(rcfg, args.collection, create=True)
    if index.count() == 0:
        index.writer.index_path(args.data / "corpus.jsonl")
    return index


def _split(
    args: argparse.Namespace, out: Path
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(held apart, SFT, RL pool) tasks of ``--data``, each written to ``OUT``; no held-apart task is trained on."""
    from sieve.eval.data import read_tasks
    from sieve.train.config import split_tasks

    tasks = read_tasks(args.data / "tasks.jsonl")
    pool, held = split_tasks(tasks, args.holdout, args.seed)
    held = held[: args.eval_tasks]
    sft_tasks, rl_tasks = pool[: args.sft_tasks], pool[args.sft_tasks :]
    assert not {t["id"] for t in held} & {t["id"] for t in pool}  # never report on trained tasks
    _write_jsonl(out / "heldout_tasks.jsonl", held)
    _write_jsonl(out / "sft_tasks.jsonl", sft_tasks)
    _write_jsonl(out / "rl_tasks.jsonl", rl_tasks)
    return held, sft_tasks, rl_tasks


def _episode(args: argparse.Namespace) -> EpisodeConfig:
    """A short episode, sized for a CPU (two searches of two chunks a turn)."""
    from sieve.train.config import EpisodeConfig

    return EpisodeConfig(
        budget_tokens=args.budget_tokens,
        max_turns=args.max_turns,
        k=5,
        search_k=2,
        search_tokens=384,
        max_new_tokens=args.max_new_tokens,
        heuristic_queries=2,
    )


def _sft(index: CorpusIndex, args: argparse.Namespace, out: Path, episode: EpisodeConfig) -> dict[str, Any]:
    """Stage 1: SFT of the student on heuristic-teacher trajectories of the SFT tasks."""
    from sieve.train.llm.sft import WarmStartConfig, run_sft

    cfg = WarmStartConfig(
        tasks=out / "sft_tasks.jsonl",
        out=out / "sft",
        model_path=args.model_path,
        holdout=0.0,
        epochs=args.sft_epochs,
        learning_rate=args.sft_lr,
        check_before=False,
        bf16=args.bf16,
        max_length=2048,
        episode=episode,
        seed=args.seed,
    )
    return run_sft(index, cfg)


def _rl(index: CorpusIndex, args: argparse.Namespace, out: Path, episode: EpisodeConfig, start: str) -> dict[str, Any]:
    """Stage 3: GRPO from the SFT model (``start``) on the RL pool, to ``--rl-steps`` or ``--rl-minutes``."""
    from sieve.train.llm.rl import RLConfig, run_rl, time_limit_callback

    cfg = RLConfig(
        tasks=out / "rl_tasks.jsonl",
        out=out / "rl",
        model_path=start,
        steps=args.rl_steps,
        questions_per_step=args.questions,
        group=args.generations,
        loss_type=args.loss_type,
        lr=args.rl_lr,
        bf16=args.bf16,
        episode=episode,
        rollout_workers=args.generations,
        seed=args.seed,
    )
    return run_rl(index, cfg, callbacks=[time_limit_callback(args.rl_minutes * 60)])


def _verdict(history: list[dict[str, Any]], sft_eval: Any, rl_eval: Any) -> dict[str, Any]:
    """Reward first and last, by thirds of the steps, and held-apart recall before and after RL."""
    first, last = (history[0], history[-1]) if history else ({}, {})
    k = max(1, len(history) // 3)
    return {
        "rl_steps": len(history),
        "reward_first": first.get("reward/total"),
        "reward_last": last.get("reward/total"),
        "reward_mean_first_third": sum(h["reward/total"] for h in history[:k]) / k if history else float("nan"),
        "reward_mean_last_third": sum(h["reward/total"] for h in history[-k:]) / k if history else float("nan"),
        "single_search_rate_first": first.get("single_search_rate"),
        "single_search_rate_last": last.get("single_search_rate"),
        "heldout_traj_recall_before_rl": sft_eval.traj_recall,
        "heldout_traj_recall_after_rl": rl_eval.traj_recall,
        "heldout_output_recall_before_rl": sft_eval.output_recall,
        "heldout_output_recall_after_rl": rl_eval.output_recall,
    }


def _summary(
    args: argparse.Namespace, results: dict[str, Any], history: list[dict[str, Any]], plot: Path | None
) -> str:
    """``summary.md``: the split, SFT, the held-apart table and the GRPO curve."""
    from sieve.train.llm.heldout import heldout_table as eval_table

    split, sft, verdict = results["split"], results["sft"], results["verdict"]
    return "\n".join(
        [
            "# Sieve CPU learning check",
            "",
            f"Data: `{args.data}`; held-apart evaluation tasks: {split['heldout']} (never trained on); SFT tasks: "
            f"{split['sft']}; RL pool: {split['rl_pool']}. Episode: {json.dumps(results['episode'])}.",
            "",
            f"SFT: {sft['n_train_examples']} turn examples from {sft['n_kept_episodes']} teacher episodes "
            f"(heuristic teacher, trajectory recall {sft['teacher_traj_recall']:.3f}); train loss {sft['train_loss']:.3f}.",
            "",
            "## Held-apart evaluation (greedy, as served)",
            "",
            eval_table(results["evals"]),
            "",
            f"## GRPO curve ({len(history)} steps, {args.questions} question x {args.generations} rollouts per step, "
            f"loss {args.loss_type})",
            "",
            curve_table(history),
            "",
            f"Plot: `{plot.name if plot else 'none'}`. Mean reward, first third of steps "
            f"{verdict['reward_mean_first_third']:.3f} -> last third {verdict['reward_mean_last_third']:.3f}.",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = _parser().parse_args(argv)
    from sieve.core.runtime import prepare_runtime

    prepare_runtime()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx", "chromadb", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    from sieve.agent.backends.local import LocalBackend
    from sieve.train.llm.heldout import run_heldout

    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    run = _Results(out, args)
    results = run.data
    index = _open_index(args)
    held, sft_tasks, rl_tasks = _split(args, out)
    results["split"] = {"heldout": len(held), "sft": len(sft_tasks), "rl_pool": len(rl_tasks)}
    episode = _episode(args)
    results["episode"] = episode.to_dict()

    logger.info("Stage 1/4: SFT warm start on %d tasks", len(sft_tasks))
    sft = _sft(index, args, out, episode)
    results["sft"] = {k: v for k, v in sft.items() if k not in ("config", "heldout", "heldout_before")}
    run.save()

    logger.info("Stage 2/4: held-apart evaluation of the base and SFT models (%d tasks)", len(held))
    if not args.skip_base_eval:
        base, _ = run_heldout(index, held, episode, backend=LocalBackend.load(sft["base_model"]))
        results["evals"]["base"] = base.to_dict()
        run.save()
    sft_eval, _ = run_heldout(index, held, episode, backend=LocalBackend.load(sft["model_dir"]))
    results["evals"]["sft"] = sft_eval.to_dict()
    run.save()

    logger.info("Stage 3/4: GRPO for up to %d steps / %.0f min", args.rl_steps, args.rl_minutes)
    rl = _rl(index, args, out, episode, sft["model_dir"])
    results["rl"] = {k: v for k, v in rl.items() if k not in ("config",)}
    run.save()

    logger.info("Stage 4/4: held-apart evaluation of the RL model")
    rl_eval, rl_traces = run_heldout(index, held, episode, backend=LocalBackend.load(rl["model_dir"]))
    results["evals"]["sft+rl"] = rl_eval.to_dict()
    _write_jsonl(out / "heldout_rl_traces.jsonl", [t.to_dict() for t in rl_traces])
    plot = plot_curve(rl["history"], out / "curve.png")
    results["verdict"] = _verdict(rl["history"], sft_eval, rl_eval)
    run.save()
    (out / "summary.md").write_text(_summary(args, results, rl["history"], plot), encoding="utf-8")
    logger.info("Done in %.0f s: %s", time.perf_counter() - run.t0, out / "summary.md")
    return results


if __name__ == "__main__":
    main()
