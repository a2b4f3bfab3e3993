"""``sieve train rl``: GRPO over the Sieve harness (see :mod:`sieve.train.llm.grpo` for how the step works).

Defaults follow Context-1 where they are published (CISPO loss, fully on-policy: one optimizer
step per generation batch, groups of rollouts per question) and are sized down for CPU. At GPU
scale: ``--use-vllm`` (``colocate``, or ``server`` with ``trl vllm-serve``), more questions per
step, and the accelerate / DeepSpeed configs in ``train/llm/configs/`` (see its README).
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sieve.core.errors import InvalidInput
from sieve.eval.data import read_tasks
from sieve.train.config import EpisodeConfig, split_tasks
from sieve.train.rewards import RewardConfig, check_reward_weights, get_episode_reward
from sieve.train.llm.time_budget import time_limit_callback

if TYPE_CHECKING:
    from sieve.retriever.index import CorpusIndex

logger = logging.getLogger(__name__)

LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo", "cispo", "sapo", "luspo", "vespo")

DEFAULT_STEPS = 100
"""GRPO steps of a run given neither ``steps`` nor ``minutes``."""

_NO_CAP = 1_000_000  # TRL needs a step count; under a time budget alone, the budget ends the run first


@dataclass
class RLConfig:
    tasks: Path = field(default=Path("tasks.jsonl"), metadata={"help": "Tasks JSONL."})
    out: Path = field(default=Path("runs/rl"), metadata={"help": "Output folder; the model goes to OUT/model."})
    model_path: str | None = field(default=None, metadata={"help": "Start policy HF folder (e.g. runs/sft/model)."})
    steps: int | None = field(
        default=None,
        metadata={
            "help": f"Most optimizer steps (one generation batch each); unset: {DEFAULT_STEPS}, or no cap when `minutes` "
            "is set (the time budget ends the run)."
        },
    )
    minutes: float | None = field(
        default=None,
        metadata={
            "help": "Wall-clock budget of training; rewards anneal over it, and it stops when spent (the model is saved)."
        },
    )
    questions_per_step: int = field(default=2, metadata={"help": "Questions per step (Context-1: 128)."})
    group: int = field(default=4, metadata={"help": "Rollouts per question, the GRPO group (Context-1: 8)."})
    micro_batches: int = field(
        default=1,
        metadata={"help": "Micro-batches the step's segments are split into (gradient accumulation; memory knob)."},
    )
    loss_type: str = field(default="cispo", metadata={"help": f"TRL loss, one of {LOSS_TYPES}."})
    beta: float = field(default=0.0, metadata={"help": "KL coefficient towards the start policy (0: no ref model)."})
    epsilon_high: float | None = field(
        default=None, metadata={"help": "Upper clip (cispo: ε_max, default 5.0 as TRL recommends; dapo: 0.28)."}
    )
    lr: float = field(default=1e-6, metadata={"help": "Learning rate."})
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature of rollouts."})
    top_p: float = field(default=1.0, metadata={"help": "Top-p of rollouts."})
    scale_rewards: str = field(default="group", metadata={"help": "Advantage scaling: group, batch or none."})
    mask_truncated: bool = field(
        default=False, metadata={"help": "Drop segments that hit max_new_tokens from the loss."}
    )
    lora: bool = field(default=False, metadata={"help": "Train a LoRA adapter (peft), merged on save."})
    lora_r: int = field(default=16, metadata={"help": "LoRA rank."})
    bf16: bool = field(default=False, metadata={"help": "bfloat16 autocast."})
    gradient_checkpointing: bool = field(default=False, metadata={"help": "Trade compute for memory."})
    use_vllm: bool = field(default=False, metadata={"help": "Generate with vLLM (GPU); see train/llm/configs/."})
    vllm_mode: str = field(default="colocate", metadata={"help": "colocate (in-process) or server (trl vllm-serve)."})
    vllm_server_base_url: str | None = field(default=None, metadata={"help": "server mode: http://host:8000."})
    vllm_gpu_memory_utilization: float = field(default=0.3, metadata={"help": "colocate mode: vLLM's GPU share."})
    rollout_workers: int = field(default=4, metadata={"help": "Episodes run concurrently per process."})
    limit: int | None = field(default=None, metadata={"help": "Use only the first N tasks."})
    holdout: float = field(default=0.0, metadata={"help": "Share of tasks kept out of training (reported ids)."})
    save_every: int = field(default=0, metadata={"help": "Also save OUT/step-N every N steps (0: only at the end)."})
    seed: int = field(default=0, metadata={"help": "Seed."})
    episode: EpisodeConfig = field(
        default_factory=EpisodeConfig,
        metadata={
            "help": "The rollout episode; its defaults are SFT's and the CLI's (one kind of episode to train on)."
        },
    )
    reward: RewardConfig = field(default_factory=RewardConfig)

    def __post_init__(self) -> None:
        self.tasks, self.out = Path(self.tasks), Path(self.out)
        if self.loss_type not in LOSS_TYPES:
            raise InvalidInput(f"Expected loss_type in {LOSS_TYPES}, got {self.loss_type!r}")
        if self.group < 2:
            raise InvalidInput(f"Expected num_generations >= 2 (GRPO needs a group), got {self.group}")
        if self.minutes is not None and self.minutes <= 0:
            raise InvalidInput(f"Expected minutes > 0, got {self.minutes}")
        if self.step_cap < 1 or self.questions_per_step < 1 or self.micro_batches < 1:
            raise InvalidInput(
                f"Expected steps, questions_per_step, micro_batches >= 1, got "
                f"{self.steps}, {self.questions_per_step}, {self.micro_batches}"
            )
        if (self.questions_per_step * self.group) % self.micro_batches:
            raise InvalidInput(
                f"Expected questions_per_step * num_generations ({self.questions_per_step} * "
                f"{self.group}) divisible by micro_batches ({self.micro_batches})"
            )
        if self.scale_rewards not in ("group", "batch", "none"):
            raise InvalidInput(f"Expected scale_rewards in ('group', 'batch', 'none'), got {self.scale_rewards!r}")
        if self.vllm_mode not in ("colocate", "server"):
            raise InvalidInput(f"Expected vllm_mode in ('colocate', 'server'), got {self.vllm_mode!r}")

    @property
    def step_cap(self) -> int:
        """The step count TRL runs to: ``steps`` if given, effectively none under a time budget alone,
        else :data:`DEFAULT_STEPS`."""
        if self.steps is not None:
            return self.steps
        return _NO_CAP if self.minutes else DEFAULT_STEPS


def task_rows(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """GRPO dataset rows: the question as a one-message conversation plus the gold the reward needs.

    ``meta`` travels as JSON: tasks from different sources carry different meta keys, which a
    columnar dataset cannot hold in one struct.
    """
    return [
        {
            "prompt": [{"role": "user", "content": t["question"]}],
            "question": t["question"],
            "gold_ids": [str(g) for g in t["gold_ids"]],
            "answers": [str(a) for a in t.get("answers") or []],
            "meta_json": json.dumps(t.get("meta") or {}, ensure_ascii=False),
            "task_id": str(t.get("id", "")),
        }
        for t in tasks
    ]


def grpo_args(cfg: RLConfig, num_processes: int = 1, reward_weights: list[float] | None = None) -> Any:
    """The ``GRPOConfig`` for ``cfg``: one generation batch (questions × generations) per optimizer step."""
    import torch
    from trl import GRPOConfig

    episodes = cfg.questions_per_step * cfg.group
    if episodes % (num_processes * cfg.micro_batches):
        raise InvalidInput(
            f"Expected questions_per_step * num_generations ({episodes}) divisible by processes x "
            f"micro_batches ({num_processes} x {cfg.micro_batches})"
        )
    per_device = episodes // (num_processes * cfg.micro_batches)
    eps_high = cfg.epsilon_high if cfg.epsilon_high is not None else (5.0 if cfg.loss_type == "cispo" else None)
    kwargs: dict[str, Any] = {}
    if cfg.use_vllm:
        kwargs.update(
            use_vllm=True,
            vllm_mode=cfg.vllm_mode,
            vllm_gpu_memory_utilization=cfg.vllm_gpu_memory_utilization,
            vllm_tensor_parallel_size=1,
        )
        if cfg.vllm_server_base_url:
            kwargs["vllm_server_base_url"] = cfg.vllm_server_base_url
    return GRPOConfig(
        output_dir=str(cfg.out / "trainer"),
        max_steps=cfg.step_cap,
        learning_rate=cfg.lr,
        per_device_train_batch_size=per_device,
        gradient_accumulation_steps=cfg.micro_batches,
        steps_per_generation=cfg.micro_batches,
        num_generations=cfg.group,
        num_iterations=1,
        loss_type=cfg.loss_type,
        beta=cfg.beta,
        epsilon_high=eps_high,
        temperature=cfg.temperature,
        top_p=cfg.top_p,
        max_completion_length=cfg.episode.max_new_tokens,
        scale_rewards=cfg.scale_rewards,
        mask_truncated_completions=cfg.mask_truncated,
        remove_unused_columns=False,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        bf16=cfg.bf16,
        use_cpu=not torch.cuda.is_available(),
        seed=cfg.seed,
        # TRL defaults to activation checkpointing (an extra forward per step); only when asked here.
        activation_checkpointing=cfg.gradient_checkpointing,
        lr_scheduler_type="constant",
        warmup_steps=0,
        disable_tqdm=True,
        log_completions=False,
        reward_weights=reward_weights,
        **kwargs,
    )


def curve_callback(trainer_ref: list, path: Path) -> Any:
    """A TrainerCallback writing one JSON line per step (TRL's metrics + the reward report), and
    saving ``OUT/step-N`` checkpoints when ``save_every`` asks for them."""
    from transformers import TrainerCallback

    class _Curve(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kw: Any) -> None:
            trainer = trainer_ref[0]
            if trainer is None or not logs or ("loss" not in logs and "reward" not in logs):
                return
            row = {"step": state.global_step, **{k: v for k, v in logs.items() if isinstance(v, (int, float))}}
            if trainer.reward_history:
                row["report"] = trainer.reward_history[-1]
            with path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            trainer = trainer_ref[0]
            every = getattr(trainer, "sieve_save_every", 0)
            if trainer is not None and every and state.global_step % every == 0:
                from sieve.train.llm.sft import save_merged

                save_merged(
                    trainer.accelerator.unwrap_model(trainer.model),
                    trainer.processing_class,
                    Path(args.output_dir).parent / f"step-{state.global_step}",
                )

    return _Curve()


def build_trainer(
    index: CorpusIndex,
    cfg: RLConfig,
    tasks: list[dict[str, Any]],
    *,
    model: Any = None,
    tokenizer: Any = None,
    extra_reward_funcs: list[Any] | None = None,
    reward_weights: list[float] | None = None,
    callbacks: list[Any] | None = None,
) -> Any:
    """A ready :class:`~sieve.train.llm.grpo.SieveGRPOTrainer` (model loaded from ``cfg.model_path`` unless given).

    ``extra_reward_funcs`` are added after the episode reward (TRL ``(completions, **kwargs)``
    callables; they also receive ``trace``); ``reward_weights`` then needs one weight per function.
    """
    from datasets import Dataset

    from sieve.train.llm.grpo import SieveGRPOTrainer
    from sieve.train.llm.sft import load_student, lora_config

    if model is None or tokenizer is None:
        model, tokenizer, _ = load_student(cfg.model_path, cfg.bf16, index.config.models_dir)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    epochs = max(1, math.ceil(cfg.step_cap * cfg.questions_per_step / max(1, len(tasks))))
    reward_cfg = replace(cfg.reward, beta_epochs=min(cfg.reward.beta_epochs, epochs))
    reward_funcs = [get_episode_reward(reward_cfg), *(extra_reward_funcs or [])]
    weights = check_reward_weights(reward_funcs, reward_weights)
    peft_config = lora_config(cfg.lora_r, model) if cfg.lora else None
    cfg.out.mkdir(parents=True, exist_ok=True)
    curve = cfg.out / "rl_curve.jsonl"
    curve.unlink(missing_ok=True)
    ref: list = [None]
    trainer = SieveGRPOTrainer(
        model=model,
        reward_funcs=reward_funcs,
        args=grpo_args(cfg, reward_weights=weights),
        train_dataset=Dataset.from_list(task_rows(tasks)),
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=[curve_callback(ref, curve), *(callbacks or [])],
        index=index,
        episode=cfg.episode,
        reward_config=reward_cfg,
        rollout_workers=cfg.rollout_workers,
    )
    trainer.sieve_save_every = cfg.save_every
    ref[0] = trainer
    return trainer


def run_rl(
    index: CorpusIndex,
    cfg: RLConfig,
    *,
    progress: bool = True,
    model: Any = None,
    tokenizer: Any = None,
    extra_reward_funcs: list[Any] | None = None,
    reward_weights: list[float] | None = None,
    callbacks: list[Any] | None = None,
) -> dict[str, Any]:
    """Train, save the merged checkpoint to ``OUT/model``, and write the curve and a report."""
    from sieve.train.llm.sft import save_merged

    t0 = time.perf_counter()
    tasks = read_tasks(cfg.tasks, cfg.limit)
    train_tasks, held = split_tasks(tasks, cfg.holdout, cfg.seed) if cfg.holdout > 0 else (tasks, [])
    timer = time_limit_callback(cfg.minutes * 60, anneal=cfg.steps is None) if cfg.minutes else None
    trainer = build_trainer(
        index,
        cfg,
        train_tasks,
        model=model,
        tokenizer=tokenizer,
        extra_reward_funcs=extra_reward_funcs,
        reward_weights=reward_weights,
        callbacks=[*(callbacks or []), *([timer] if timer else [])],
    )
    trainer.train()
    model_dir = save_merged(
        trainer.accelerator.unwrap_model(trainer.model), trainer.processing_class, cfg.out / "model"
    )
    hist = trainer.reward_history
    result = {
        "model_dir": str(model_dir),
        "steps": trainer.state.global_step,
        "log": str(cfg.out / "rl_curve.jsonl"),
        "reward_first": hist[0]["reward/total"] if hist else float("nan"),
        "reward_last": hist[-1]["reward/total"] if hist else float("nan"),
        "stopped_by": "minutes" if timer is not None and timer.stopped_by_time else "steps",
        "history": hist,
        "n_train_tasks": len(train_tasks),
        "heldout_ids": [t.get("id") for t in held],
        "seconds": round(time.perf_counter() - t0, 1),
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()},
    }
    (cfg.out / "rl_report.json").write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    return result


__all__ = [
    "DEFAULT_STEPS",
    "LOSS_TYPES",
    "RLConfig",
    "build_trainer",
    "curve_callback",
    "grpo_args",
    "run_rl",
    "task_rows",
    "time_limit_callback",
]
