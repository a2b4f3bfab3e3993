"""GRPO over the Sieve harness with per-turn segments: a minimal ``GRPOTrainer`` subclass.

Why a subclass and not ``rollout_func``: TRL 1.16's ``rollout_func(prompts, trainer)`` must return
exactly one ``prompt_ids`` / ``completion_ids`` row per prompt row; rewards, the group
normalisation (``view(-1, num_generations)``) and the loss are all indexed by those rows. An
episode with live pruning is not one growing sequence (chunks leave the context between
turns), so it cannot be one row; it is one *segment* per turn (the prompt as the model saw it at
that turn + its completion), and the number of segments varies per episode. So this class
overrides one method, ``_generate_and_score_completions``:

1. run one real episode per input row (rows already repeat each question ``num_generations``
   times) through :func:`sieve.train.llm.rollout.run_rollouts`: tools execute against the retriever,
   pruning is live, each turn's exact tokens are recorded;
2. score every episode with the reward functions (TRL's own ``_calculate_rewards``; our
   :class:`~sieve.train.rewards.EpisodeReward` reads the trace), and normalise per group exactly as
   TRL does (``scale_rewards`` group / batch / none);
3. expand episodes into segments that all carry their episode's advantage (ReSum-GRPO). Tool
   results live in the segment's prompt part, so they are outside ``completion_mask`` and never
   in the loss;
4. pad the segment count (zero-mask rows) so that every process has the same number and it
   splits evenly into ``steps_per_generation`` micro-batches, then return TRL's usual batch
   dict; ``_compute_loss`` (grpo / dapo / dr_grpo / cispo / ...), KL, and the optimiser loop
   are TRL's, unchanged.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from trl import GRPOTrainer
from trl.trainer.utils import nanstd, pad

from sieve.train.rewards import Gold, RewardConfig, RewardReport, score_episode
from sieve.train.llm.rollout import GenParams, HFGenerate, run_rollouts
from sieve.train.llm.trl_tiles import cpu_logprob_tiles

if TYPE_CHECKING:
    from sieve.retriever.index import CorpusIndex
    from sieve.train.config import EpisodeConfig
    from sieve.train.llm.rollout import Rollout

logger = logging.getLogger(__name__)


def raise_if_all_failed(rollouts: list[Rollout]) -> None:
    """Stop the run when no episode of a batch ran: a step on them would still move the weights (a
    mixture-of-experts router's auxiliary loss needs no reward), training a model on nothing.

    Raises:
        RuntimeError: every rollout ended as ``backend_error``; names the first error.
    """
    if rollouts and all(r.trace.stop_reason == "backend_error" for r in rollouts):
        error = rollouts[0].trace.meta.get("error", "no message")
        raise RuntimeError(
            f"Expected rollouts that ran, got all {len(rollouts)} of this batch ending as backend_error "
            f"(first: {error}); the model cannot run Sieve's episodes as loaded"
        )


@dataclass
class _Segments:
    """The rows of one generation batch: every turn of every episode (prompt as the model saw it,
    completion, loss mask, its episode's advantage, sampling log-probs), then the padding rows."""

    prompts: list[list[int]] = field(default_factory=list)
    completions: list[list[int]] = field(default_factory=list)
    masks: list[list[int]] = field(default_factory=list)
    advantages: list[float] = field(default_factory=list)
    logps: list[list[float] | None] = field(default_factory=list)
    n_real: int = 0  # rows before the padding


class SieveGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` whose completions are multi-turn Sieve episodes, trained as per-turn segments.

    Args:
        index: the collection rollouts search.
        episode: episode settings (budget, turns, tokens per turn).
        reward_config: weights of the episode reward (used for the batch report).
        rollout_workers: episodes run concurrently (threads; generation is batched on the main thread).
        *args, **kwargs: as for ``GRPOTrainer`` (``reward_funcs`` should include
            :func:`sieve.train.rewards.get_episode_reward`). Dataset rows need ``prompt`` (the question as a
            one-message conversation), ``question``, ``gold_ids``, ``answers`` and ``meta_json``.
    """

    def __init__(
        self,
        *args: Any,
        index: CorpusIndex,
        episode: EpisodeConfig,
        reward_config: RewardConfig | None = None,
        rollout_workers: int = 4,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.index = index
        self.episode = episode
        self.reward_config = reward_config or RewardConfig()
        self.rollout_workers = rollout_workers
        self.agent_config = episode.training_agent_config()
        self.reward_history: list[dict[str, float]] = []  # one RewardReport per generation batch
        self.last_rollouts: list[Rollout] = []

    def training_step(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        # One step holds generation, the old log-probabilities, the loss and its backward.
        with cpu_logprob_tiles(self.accelerator.device):
            return super().training_step(*args, **kwargs)

    # -- generation -------------------------------------------------------------------------------
    def _batch_fn(self, model: Any) -> Any:
        if self.use_vllm:
            from sieve.train.llm.vllm_rollout import vllm_batch_fn

            return vllm_batch_fn(self)
        return HFGenerate(model, self._tokenizer, self.eos_token_ids)

    def _rollouts(self, questions: list[str]) -> list[Rollout]:
        from trl.models import unwrap_model_for_generation

        params = GenParams(
            max_new_tokens=min(self.max_completion_length, self.episode.max_new_tokens),
            temperature=self.temperature,
            top_p=self.top_p,
        )
        if self.use_vllm:
            if self.state.global_step != self._last_loaded_step:
                self.vllm_generation.sync_weights()
                self._last_loaded_step = self.state.global_step
            return run_rollouts(
                self.index,
                questions,
                self.agent_config,
                self._tokenizer,
                self._batch_fn(None),
                params,
                self.eos_token_ids,
                workers=self.rollout_workers,
            )
        with (
            unwrap_model_for_generation(
                self.model_wrapped, self.accelerator, gather_deepspeed3_params=self.args.ds3_gather_for_generation
            ) as unwrapped,
            torch.no_grad(),
            self._dist.summon_full_params(self.model_wrapped, recurse=False),
        ):
            was_training = unwrapped.training
            unwrapped.eval()
            try:
                return run_rollouts(
                    self.index,
                    questions,
                    self.agent_config,
                    self._tokenizer,
                    self._batch_fn(unwrapped),
                    params,
                    self.eos_token_ids,
                    workers=self.rollout_workers,
                )
            finally:
                unwrapped.train(was_training)

    # -- advantages (TRL's group normalisation, on episode rewards) -------------------------------------
    def _advantages(self, rewards_per_func: torch.Tensor, num_generations: int) -> tuple[torch.Tensor, torch.Tensor]:
        weights = self.reward_weights.to(rewards_per_func.device).unsqueeze(0)
        rewards = (rewards_per_func * weights).nansum(dim=1)
        grouped = rewards.view(-1, num_generations)
        mean = grouped.nanmean(dim=1).repeat_interleave(num_generations)
        if self.scale_rewards == "batch":
            std = nanstd(rewards).expand_as(rewards) if rewards.numel() > 1 else torch.zeros_like(rewards)
        elif num_generations > 1:
            std = nanstd(grouped, dim=1).repeat_interleave(num_generations)
        else:
            std = torch.zeros_like(rewards)
        adv = rewards - mean
        if self.scale_rewards != "none":
            adv = adv / (std + 1e-4)
        return torch.nan_to_num(adv, nan=0.0), rewards

    # -- the override -------------------------------------------------------------------------------
    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        import json

        mode = "train" if self.model.training else "eval"
        num_generations = self.num_generations if mode == "train" else self.num_generations_eval
        rollouts = self._rollouts([x["question"] for x in inputs])
        self.last_rollouts = rollouts
        raise_if_all_failed(rollouts)
        metas = [json.loads(x.get("meta_json") or "{}") for x in inputs]
        reward_rows = [
            {"trace": r.trace, "gold_ids": x["gold_ids"], "answers": x.get("answers") or [], "meta": m}
            for r, x, m in zip(rollouts, inputs, metas)
        ]
        prompts = [x["prompt"] for x in inputs]
        completions = [r.trace.turns[-1].completion if r.trace.turns else "" for r in rollouts]
        last_ids = [r.segments[-1].completion_ids if r.segments else [] for r in rollouts]
        rewards_per_func = self._calculate_rewards(reward_rows, prompts, completions, last_ids)  # gathered
        advantages, rewards = self._advantages(rewards_per_func, num_generations)
        lo = self.accelerator.process_index * len(inputs)
        segments = self._segments(rollouts, advantages[lo : lo + len(inputs)], mode)
        output = self._batch(segments)
        output.update(
            self._logps(
                output["prompt_ids"],
                output["prompt_mask"],
                output["completion_ids"],
                output["completion_mask"],
                segments.logps,
                mode,
            )
        )
        self._log_batch(
            rollouts,
            reward_rows,
            rewards_per_func,
            rewards,
            advantages,
            output["completion_mask"],
            mode,
            segments.n_real,
            num_generations,
        )
        return output

    def _segments(self, rollouts: list[Rollout], local_adv: torch.Tensor, mode: str) -> _Segments:
        """Every turn of this process's episodes as a row carrying its episode's advantage, then
        fully masked padding rows up to the count every process has."""
        rows = _Segments()
        for i, r in enumerate(rollouts):
            for s in r.segments:
                keep = bool(s.completion_ids) and not (self.mask_truncated_completions and s.truncated)
                completion = s.completion_ids or [self._tokenizer.pad_token_id]
                rows.prompts.append(s.prompt_ids)
                rows.completions.append(completion)
                rows.masks.append([1 if keep else 0] * len(completion))
                rows.advantages.append(float(local_adv[i]))
                rows.logps.append(s.logprobs)
        rows.n_real = len(rows.prompts)
        # Same number of rows on every process (DeepSpeed/FSDP need equal forward counts), divisible
        # into steps_per_generation micro-batches; padding rows are fully masked.
        counts = self.accelerator.gather(torch.tensor([rows.n_real], device=self.accelerator.device))
        target = max(int(counts.max().item()), 1)
        spg = self.args.steps_per_generation if mode == "train" else 1
        target = -(-target // spg) * spg
        pad_id = self._tokenizer.pad_token_id
        while len(rows.prompts) < target:
            rows.prompts.append([pad_id])
            rows.completions.append([pad_id])
            rows.masks.append([0])
            rows.advantages.append(0.0)
            rows.logps.append(None)
        return rows

    def _batch(self, rows: _Segments) -> dict[str, Any]:
        """TRL's batch dict of the segment rows: prompts padded on the left, completions on the right."""
        device = self.accelerator.device
        pad_id = self._tokenizer.pad_token_id
        n_real = rows.n_real
        prompt_ids = pad([torch.tensor(p) for p in rows.prompts], padding_value=pad_id, padding_side="left").to(device)
        prompt_mask = pad(
            [torch.tensor([0 if j >= n_real else 1] * len(p)) for j, p in enumerate(rows.prompts)],
            padding_value=0,
            padding_side="left",
        ).to(device)
        completion_ids = pad(
            [torch.tensor(c) for c in rows.completions], padding_value=pad_id, padding_side="right"
        ).to(device)
        completion_mask = pad([torch.tensor(m) for m in rows.masks], padding_value=0, padding_side="right").to(device)
        # A padding row needs one attended position or attention over it is undefined.
        prompt_mask[n_real:, -1] = 1
        return {
            "prompt_ids": prompt_ids,
            "prompt_mask": prompt_mask,
            "completion_ids": completion_ids,
            "completion_mask": completion_mask,
            "advantages": torch.tensor(rows.advantages, dtype=torch.float32, device=device),
            "num_items_in_batch": self.accelerator.gather(completion_mask.sum()).sum(),
        }

    def _logps(
        self,
        prompt_ids: torch.Tensor,
        prompt_mask: torch.Tensor,
        completion_ids: torch.Tensor,
        completion_mask: torch.Tensor,
        seg_logps: list[list[float] | None],
        mode: str,
    ) -> dict[str, Any]:
        """old / ref / sampling log-probs, under the same conditions as TRL's own method."""
        from trl.models.utils import disable_gradient_checkpointing
        from trl.trainer.utils import use_adapter

        out: dict[str, Any] = {}
        ids = torch.cat([prompt_ids, completion_ids], dim=1)
        attn = torch.cat([prompt_mask, completion_mask.clamp(min=0)], dim=1)
        keep = completion_ids.size(1)
        bs = self.args.per_device_train_batch_size if mode == "train" else self.args.per_device_eval_batch_size
        generate_every = self.args.steps_per_generation * self.num_iterations
        vllm_is = self.use_vllm and self.vllm_importance_sampling_correction
        with torch.no_grad(), disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs):
            if self.args.gradient_accumulation_steps % generate_every != 0 or vllm_is:
                out["old_per_token_logps"], _, _ = self._get_per_token_logps_and_entropies(
                    self.model, ids, attn, keep, batch_size=bs
                )
            if self.beta != 0.0:
                if self.ref_model is not None:
                    out["ref_per_token_logps"], _, _ = self._get_per_token_logps_and_entropies(
                        self.ref_model, ids, attn, keep, batch_size=bs
                    )
                else:
                    model = self.accelerator.unwrap_model(self.model)
                    with use_adapter(model, adapter_name="ref" if "ref" in model.peft_config else None):
                        out["ref_per_token_logps"], _, _ = self._get_per_token_logps_and_entropies(
                            self.model, ids, attn, keep, batch_size=bs
                        )
        if vllm_is:
            out.update(self._importance_sampling(out["old_per_token_logps"], seg_logps, completion_mask, ids.device))
        return out

    def _importance_sampling(
        self,
        old_logps: torch.Tensor,
        seg_logps: list[list[float] | None],
        completion_mask: torch.Tensor,
        device: torch.device,
    ) -> dict[str, Any]:
        """vLLM's sampling log-probs and the importance-sampling ratio that corrects for them (TRL's way)."""
        keep = completion_mask.size(1)
        if not all(lp is not None for lp in seg_logps[: int(completion_mask.any(dim=1).sum())]):
            raise ValueError(
                "Expected vLLM sampling log-probs for every segment, got some missing; "
                "set vllm_importance_sampling_correction=False"
            )
        sampling = pad(
            [torch.tensor(lp if lp is not None else [0.0]) for lp in seg_logps],
            padding_value=0.0,
            padding_side="right",
        ).to(device)[:, :keep]
        sampling = torch.nn.functional.pad(sampling, (0, keep - sampling.size(1)))
        diff = torch.nan_to_num((old_logps - sampling) * completion_mask, nan=0.0)
        if self.vllm_importance_sampling_mode.startswith("sequence"):
            diff = diff.sum(dim=-1, keepdim=True)
        ratio = torch.exp(diff)
        if self.vllm_importance_sampling_mode.endswith("truncate"):
            ratio = torch.clamp(
                ratio, min=self.vllm_importance_sampling_clip_min, max=self.vllm_importance_sampling_clip_max
            )
        else:
            ratio = ratio.masked_fill(ratio > self.vllm_importance_sampling_clip_max, 0.0)
        return {"importance_sampling_ratio": ratio, "sampling_per_token_logps": sampling}

    def _log_batch(
        self,
        rollouts: list[Rollout],
        reward_rows: list[dict[str, Any]],
        rewards_per_func: torch.Tensor,
        rewards: torch.Tensor,
        advantages: torch.Tensor,
        completion_mask: torch.Tensor,
        mode: str,
        n_segments: int,
        num_generations: int,
    ) -> None:
        total = self.state.max_steps or 1
        progress = min(1.0, self.state.global_step / total)
        breakdowns = [
            score_episode(r.trace, Gold.from_task(row), self.reward_config, progress)
            for r, row in zip(rollouts, reward_rows)
        ]
        report = RewardReport.from_breakdowns(breakdowns)
        report.log(self.state.global_step)
        m = self._metrics[mode]
        for i, name in enumerate(self.reward_func_names):
            m[f"rewards/{name}/mean"].append(torch.nanmean(rewards_per_func[:, i]).item())
            m[f"rewards/{name}/std"].append(nanstd(rewards_per_func[:, i]).item())
        m["reward"].append(torch.nanmean(rewards).item())
        m["reward_std"].append(nanstd(rewards).item())
        grouped_std = nanstd(rewards.view(-1, num_generations), dim=1) if num_generations > 1 else torch.zeros(1)
        m["frac_reward_zero_std"].append(
            torch.isclose(grouped_std, torch.zeros_like(grouped_std)).float().mean().item()
        )
        lengths = completion_mask.sum(dim=1)[:n_segments].float()
        m["completions/mean_length"].append(lengths.mean().item() if n_segments else 0.0)
        m["segments_per_episode"].append(n_segments / max(1, len(rollouts)))
        for k, v in report.to_metrics().items():
            m[k].append(v)
        tokens = int(sum(len(s.prompt_ids) + len(s.completion_ids) for r in rollouts for s in r.segments))
        self.state.num_input_tokens_seen += tokens
        m["num_tokens"] = [self.state.num_input_tokens_seen]
        self.reward_history.append(
            {
                "step": self.state.global_step,
                "n_episodes": len(rollouts),
                "segments": n_segments,
                **report.to_metrics(prefix=""),
                "advantage_abs_mean": advantages.abs().mean().item(),
            }
        )


__all__ = ["SieveGRPOTrainer"]
