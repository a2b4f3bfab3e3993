"""SFT warm start: teacher trajectories → per-turn tool-calling examples → TRL ``SFTTrainer``.

The teacher (the no-LLM heuristic policy by default, or any backend) runs episodes through the
real harness with ``record_prompts`` on; episodes whose trajectory recall reaches
``min_recall`` are kept. Every turn becomes one example: the prompt exactly as the
:class:`~sieve.agent.backends.local.LocalBackend` renders that turn's (pruned) view, and the target the
same template appends for the teacher's assistant message (tool calls as ``<tool_call>`` markup,
end-of-turn token included). Examples are pre-tokenized with loss on the target only, so TRL
trains on exactly the tokens the served model will see and write.

The saved folder (``OUT/model``) is a plain HF checkpoint (LoRA merged): it loads with
``make_policy("local", AgentConfig(local_model=OUT/model))`` and serves with vLLM.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from sieve.core.errors import InvalidInput
from sieve.eval.data import read_tasks
from sieve.train.llm.chat_format import assistant_target
from sieve.train.llm.teachers import TeacherOptions, build_teacher, check_teacher
from sieve.train.config import EpisodeConfig, split_tasks
from sieve.train.rewards import Gold
from sieve.train.rewards.context1 import trajectory_recall

if TYPE_CHECKING:
    from sieve.agent.trace import Trace, Turn
    from sieve.retriever.index import CorpusIndex

logger = logging.getLogger(__name__)

TeacherName = str  # a name in sieve.train.llm.teachers.TEACHERS


@dataclass
class WarmStartConfig:
    tasks: Path = field(default=Path("tasks.jsonl"), metadata={"help": "Tasks JSONL."})
    out: Path = field(default=Path("runs/sft"), metadata={"help": "Output folder; the model goes to OUT/model."})
    model_path: str | None = field(default=None, metadata={"help": "Student HF folder (default SmolLM2-135M)."})
    teacher: TeacherName = field(
        default="heuristic", metadata={"help": "Trajectory source policy (sieve.train.llm.teachers.TEACHERS)."}
    )
    teacher_base_url: str | None = field(default=None, metadata={"help": "openai teacher endpoint."})
    teacher_model: str | None = field(default=None, metadata={"help": "openai teacher model name."})
    teacher_model_path: str | None = field(default=None, metadata={"help": "local teacher HF folder."})
    min_recall: float = field(default=0.5, metadata={"help": "Keep episodes with trajectory recall >= this."})
    epochs: float = field(default=2.0, metadata={"help": "Training epochs (unless `steps` is set)."})
    steps: int | None = field(default=None, metadata={"help": "Optimizer steps instead of `epochs` (unset: epochs)."})
    minutes: float | None = field(
        default=None,
        metadata={
            "help": "Wall-clock budget of training: it stops when spent (the model is saved), whatever epochs remain."
        },
    )
    learning_rate: float = field(default=5e-5, metadata={"help": "Peak learning rate."})
    batch_size: int = field(default=1, metadata={"help": "Per-device batch size."})
    grad_accum: int = field(default=4, metadata={"help": "Gradient accumulation steps."})
    max_length: int = field(default=2048, metadata={"help": "Examples longer than this (tokens) are dropped."})
    holdout: float = field(default=0.2, metadata={"help": "Share of tasks held out for the tool-call check."})
    max_heldout: int = field(default=20, metadata={"help": "Most held-out tasks run for the check."})
    check_before: bool = field(default=True, metadata={"help": "Also measure the student before SFT."})
    limit: int | None = field(default=None, metadata={"help": "Use only the first N tasks."})
    lora: bool = field(default=False, metadata={"help": "Train a LoRA adapter (merged on save)."})
    lora_r: int = field(default=16, metadata={"help": "LoRA rank."})
    bf16: bool = field(default=False, metadata={"help": "bfloat16 autocast (faster on CPUs with AVX512-BF16, GPUs)."})
    gradient_checkpointing: bool = field(
        default=False,
        metadata={"help": "Recompute activations in the backward pass (saves memory, costs ~30% more compute)."},
    )
    seed: int = field(default=0, metadata={"help": "Seed of the split and of training."})
    episode: EpisodeConfig = field(
        default_factory=EpisodeConfig,
        metadata={"help": "The teacher's and the held-out check's episode (as served; RL uses the same defaults)."},
    )

    def __post_init__(self) -> None:
        self.tasks, self.out = Path(self.tasks), Path(self.out)
        if not 0.0 <= self.min_recall <= 1.0:
            raise InvalidInput(f"Expected 0 <= min_recall <= 1, got {self.min_recall}")
        check_teacher(self.teacher)
        if (self.steps is not None and self.steps < 1) or (self.minutes is not None and self.minutes <= 0):
            raise InvalidInput(f"Expected steps >= 1 and minutes > 0 when set, got {self.steps}, {self.minutes}")
        if self.epochs <= 0 or self.learning_rate <= 0 or self.max_length < 64:
            raise InvalidInput(
                f"Expected epochs > 0, learning_rate > 0, max_length >= 64, got "
                f"{self.epochs}, {self.learning_rate}, {self.max_length}"
            )


def assistant_message(turn: Turn) -> dict[str, Any]:
    """The teacher's assistant message of one turn (its calls, as the harness recorded them)."""
    from sieve.agent.backends.parsing import parse_tool_calls
    from sieve.agent.tool_specs import known_tool_names

    calls = parse_tool_calls(turn.completion or "", known_tool_names())
    if calls and all(c.arguments is not None for c in calls):
        return {
            "role": "assistant",
            "content": "",
            "tool_calls": [c.to_openai() | {"id": c.call_id or f"call_{turn.index}_{i}"} for i, c in enumerate(calls)],
        }
    return {"role": "assistant", "content": turn.completion or ""}


def trace_examples(trace: Trace, tokenizer: Any, tools: list[dict[str, Any]], max_length: int) -> list[dict[str, Any]]:
    """Pre-tokenized examples (``input_ids``, ``labels`` with -100 on the prompt), one per turn."""
    out = []
    for turn in trace.turns:
        if not turn.prompt_messages or not turn.completion:
            continue
        prompt, target = assistant_target(tokenizer, turn.prompt_messages, assistant_message(turn), tools)
        p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        t_ids = tokenizer(target, add_special_tokens=False)["input_ids"]
        if len(p_ids) + len(t_ids) > max_length:
            continue
        out.append({"input_ids": p_ids + t_ids, "labels": [-100] * len(p_ids) + t_ids})
    return out


def _teacher_policy(cfg: WarmStartConfig, agent_config: Any) -> Any:
    options = TeacherOptions(base_url=cfg.teacher_base_url, model=cfg.teacher_model, model_path=cfg.teacher_model_path)
    return build_teacher(cfg.teacher, agent_config, options)


def collect_teacher(
    index: CorpusIndex, tasks: list[dict[str, Any]], cfg: WarmStartConfig, progress: bool = True
) -> list[tuple[dict[str, Any], Trace, float]]:
    """Teacher episodes on ``tasks``: (task, trace, trajectory recall), all of them (filter after)."""
    from sieve.agent import SearchAgent

    agent_config = cfg.episode.training_agent_config(models_dir=index.config.models_dir)
    agent = SearchAgent(index, _teacher_policy(cfg, agent_config), agent_config)
    out = []
    for task in tqdm(tasks, desc=f"Teacher ({cfg.teacher})", disable=not progress):
        trace = agent.run(task["question"])
        out.append((task, trace, trajectory_recall(trace, Gold.from_task(task))))
    return out


def load_student(model_path: str | None, bf16: bool = False, models_dir: Path | None = None) -> tuple[Any, Any, str]:
    """(model, tokenizer, path) of the student (default: SmolLM2-135M converted once into ``models_dir``)."""
    from sieve.core.runtime import prepare_runtime

    prepare_runtime()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if model_path is None:
        from sieve.agent.backends.models import smollm2_path

        model_path = str(smollm2_path(models_dir))
    tok = AutoTokenizer.from_pretrained(model_path, local_files_only=True)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    # --bf16 loads the weights in bfloat16 (half the memory of float32: what a 20B model needs).
    dtype = torch.bfloat16 if bf16 else torch.float32
    model = AutoModelForCausalLM.from_pretrained(model_path, local_files_only=True, dtype=dtype)
    return model, tok, model_path


# gpt-oss's experts are plain 3-D tensors, not Linear modules: peft reaches them by parameter name.
GPT_OSS_EXPERT_PARAMETERS = ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"]


def lora_config(r: int, model: Any | None = None) -> Any:
    """The LoRA adapter SFT and RL train, alpha = 2r, no dropout: every attention and MLP projection; for
    gpt-oss (``model_type == "gpt_oss"``) the attention projections and every expert's ``gate_up_proj``
    and ``down_proj`` (peft's ``target_parameters``; the router stays frozen)."""
    from peft import LoraConfig

    if model is not None and getattr(getattr(model, "config", None), "model_type", "") == "gpt_oss":
        return LoraConfig(
            r=r,
            lora_alpha=2 * r,
            lora_dropout=0.0,
            task_type="CAUSAL_LM",
            target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
            target_parameters=GPT_OSS_EXPERT_PARAMETERS,
        )
    return LoraConfig(
        r=r,
        lora_alpha=2 * r,
        lora_dropout=0.0,
        task_type="CAUSAL_LM",
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    )


def save_merged(model: Any, tokenizer: Any, dest: Path) -> Path:
    """Save a plain HF folder (LoRA merged), loadable by LocalBackend and servable by vLLM."""
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    dest.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(dest, safe_serialization=True)
    tokenizer.save_pretrained(dest)
    return dest


def run_sft(index: CorpusIndex, cfg: WarmStartConfig, *, progress: bool = True) -> dict[str, Any]:
    """Collect, filter, train, save, and measure the held-out valid tool-call rate (before and after)."""
    # Loaded first, so that a missing training extra fails before the teacher's episodes, not after them.
    import datasets  # noqa: F401
    import trl  # noqa: F401

    from sieve.agent.backends.local import LocalBackend
    from sieve.train.llm.heldout import run_heldout

    t0 = time.perf_counter()
    tasks = read_tasks(cfg.tasks, cfg.limit)
    train_tasks, held = split_tasks(tasks, cfg.holdout, cfg.seed)
    held = held[: cfg.max_heldout]
    episodes = collect_teacher(index, train_tasks, cfg, progress)
    kept = [(t, tr) for t, tr, r in episodes if r >= cfg.min_recall and tr.turns]
    model, tok, base_path = load_student(cfg.model_path, cfg.bf16, index.config.models_dir)
    rows = _examples(kept, len(episodes), tok, cfg)
    before = None
    if cfg.check_before and held:
        before, _ = run_heldout(index, held, cfg.episode, backend=LocalBackend(model.eval(), tok), progress=progress)
    trainer, train_out, timer = _train(model, tok, rows, cfg, progress)
    model_dir = save_merged(trainer.model, tok, cfg.out / "model")
    trained = LocalBackend.load(model_dir)
    after, traces = run_heldout(index, held, cfg.episode, backend=trained, progress=progress) if held else (None, [])
    result = {
        "model_dir": str(model_dir),
        "base_model": base_path,
        "teacher": cfg.teacher,
        "n_tasks": len(tasks),
        "n_train_tasks": len(train_tasks),
        "n_kept_episodes": len(kept),
        "teacher_traj_recall": sum(r for _, _, r in episodes) / max(1, len(episodes)),
        "n_train_examples": len(rows),
        "train_loss": float(train_out.training_loss),
        "steps": trainer.state.global_step,
        "stopped_by": (
            "minutes" if timer is not None and timer.stopped_by_time else "steps" if cfg.steps else "epochs"
        ),
        "heldout": after.to_dict() if after else {},
        "heldout_before": before.to_dict() if before else {},
        "heldout_ids": [t["id"] for t in held],
        "seconds": round(time.perf_counter() - t0, 1),
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(cfg).items()},
    }
    (cfg.out / "sft_report.json").write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    with (cfg.out / "heldout_traces.jsonl").open("w", encoding="utf-8") as f:
        for tr in traces:
            f.write(tr.to_json() + "\n")
    return result


def _examples(
    kept: list[tuple[dict[str, Any], Trace]], n_episodes: int, tok: Any, cfg: WarmStartConfig
) -> list[dict[str, Any]]:
    """The turn examples of the kept teacher episodes, as the student will be shown them.

    Raises:
        InvalidInput: no episode kept (none reached ``min_recall``).
    """
    from sieve.agent.tool_specs import tool_specs

    tools = tool_specs(config=cfg.episode.training_agent_config())  # the tool texts the episodes were shown
    rows = [ex for _, tr in kept for ex in trace_examples(tr, tok, tools, cfg.max_length)]
    if not rows:
        raise InvalidInput(
            f"Expected teacher episodes with trajectory recall >= {cfg.min_recall}, got none of "
            f"{n_episodes}; lower --min-recall or check the collection"
        )
    logger.info("SFT: %d/%d teacher episodes kept, %d turn examples", len(kept), n_episodes, len(rows))
    return rows


def _train(
    model: Any, tok: Any, rows: list[dict[str, Any]], cfg: WarmStartConfig, progress: bool
) -> tuple[Any, Any, Any]:
    """TRL's SFTTrainer on ``rows`` (a LoRA adapter with ``cfg.lora``), ended by ``cfg.minutes`` if set;
    (the trainer, its output, the time-budget callback or None)."""
    from datasets import Dataset
    from trl import SFTTrainer

    from sieve.train.llm.time_budget import time_limit_callback
    from sieve.train.llm.trl_tiles import cpu_logprob_tiles

    peft_config = lora_config(cfg.lora_r, model) if cfg.lora else None
    cfg.out.mkdir(parents=True, exist_ok=True)
    args = _trainer_args(cfg, progress)
    model.train()
    timer = time_limit_callback(cfg.minutes * 60) if cfg.minutes else None
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tok,
        peft_config=peft_config,
        callbacks=[timer] if timer else None,
    )
    with cpu_logprob_tiles(trainer.accelerator.device):
        train_out = trainer.train()
    return trainer, train_out, timer


def _trainer_args(cfg: WarmStartConfig, progress: bool) -> Any:
    """TRL's SFTConfig of a warm start: cosine schedule, no checkpoints (the merged model is saved at the end)."""
    from trl import SFTConfig as TRLSFTConfig

    return TRLSFTConfig(
        output_dir=str(cfg.out / "trainer"),
        num_train_epochs=cfg.epochs,
        max_steps=cfg.steps or -1,
        learning_rate=cfg.learning_rate,
        per_device_train_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.grad_accum,
        lr_scheduler_type="cosine",
        warmup_steps=0.05,
        logging_steps=5,
        save_strategy="no",
        report_to=[],
        bf16=cfg.bf16,
        use_cpu=not _has_gpu(),
        seed=cfg.seed,
        max_length=None,
        dataset_num_proc=None,
        disable_tqdm=not progress,
        activation_checkpointing=cfg.gradient_checkpointing,
    )


def _has_gpu() -> bool:
    import torch

    return bool(torch.cuda.is_available())


__all__ = [
    "WarmStartConfig",
    "assistant_message",
    "collect_teacher",
    "load_student",
    "lora_config",
    "run_sft",
    "save_merged",
    "trace_examples",
]
