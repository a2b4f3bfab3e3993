"""vLLM generation for harness rollouts (GPU scale; not runnable on the CPU dev machine).

Multi-turn episodes end at different turns on different processes, so the lock-step
``VLLMGeneration.generate`` (which gathers prompts across ranks) cannot serve them. Instead each
process talks to vLLM directly: in ``server`` mode through TRL's ``VLLMClient`` (one HTTP request
per batch; ``trl vllm-serve`` handles concurrent clients), in ``colocate`` mode through its own
in-process ``LLM`` (tensor parallel size 1). Weights are still synced by TRL
(``vllm_generation.sync_weights()``, called by the trainer once per optimizer step).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sieve.train.llm.rollout import GenParams


def vllm_batch_fn(trainer: Any) -> Any:
    """A batch function for :class:`sieve.train.llm.rollout.BatchedGenerator` backed by the trainer's vLLM."""
    gen = trainer.vllm_generation
    if gen.mode == "colocate" and getattr(gen, "tensor_parallel_size", 1) > 1:
        raise ValueError(
            f"Expected vllm_tensor_parallel_size == 1 for harness rollouts in colocate mode, got "
            f"{gen.tensor_parallel_size}; use server mode for tensor-parallel generation"
        )

    def run(batch: list[list[int]], params: GenParams) -> list[tuple[list[int], list[float] | None]]:
        if gen.mode == "server":
            out = gen.vllm_client.generate(
                prompts=batch,
                n=1,
                temperature=params.temperature,
                top_p=params.top_p,
                max_tokens=params.max_new_tokens,
                logprobs=0,
            )
            lps = out.get("logprobs")
            return [
                (list(c), [seq_lp[0] for seq_lp in lps[i]] if lps else None)
                for i, c in enumerate(out["completion_ids"])
            ]
        from vllm import SamplingParams

        sp = SamplingParams(
            n=1, temperature=params.temperature, top_p=params.top_p, max_tokens=params.max_new_tokens, logprobs=0
        )
        if getattr(gen, "enable_sleep_mode", False):
            gen.llm.wake_up(tags=["kv_cache"])
        outs = gen.llm.generate([{"prompt_token_ids": ids} for ids in batch], sampling_params=sp, use_tqdm=False)
        results = []
        for o in outs:
            c = o.outputs[0]
            lp = [d[t].logprob for t, d in zip(c.token_ids, c.logprobs)] if c.logprobs else None
            results.append((list(c.token_ids), lp))
        return results

    return run


__all__ = ["vllm_batch_fn"]
