"""GRPO smoke run over the real harness: rollouts, per-turn segments, a weight update, a loadable checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def distinct_token_reward(completions, **kwargs):
    """TEST-ONLY reward (labelled fake): an untrained model never calls a tool, so every episode
    reward ties and GRPO's advantage is zero; this term varies between rollouts so the smoke run
    has a gradient to apply."""
    return [float(len(set(str(c)))) / 10.0 for c in completions]


@pytest.mark.slow
def test_grpo_smoke_run_through_the_harness(sample_index, tiny_model_dir, tmp_path):
    import torch

    from sieve.agent import AgentConfig, SearchAgent, make_policy
    from sieve.agent.tool_specs import tool_specs
    from sieve.train.chat_format import prompt_ids
    from sieve.eval.data import read_tasks
    from sieve.train.config import EpisodeConfig
    from sieve.train.rl import RLConfig, build_trainer
    from sieve.train.sft import load_student, save_merged

    cfg = RLConfig(tasks=Path("data/sample/tasks.jsonl"), out=tmp_path / "rl", model_path=str(tiny_model_dir),
                   max_steps=2, questions_per_step=1, num_generations=2, learning_rate=1e-3, limit=2,
                   rollout_workers=2,
                   episode=EpisodeConfig(budget_tokens=1024, max_turns=2, search_k=2, search_tokens=256,
                                         max_new_tokens=16))
    model, tok, _ = load_student(cfg.model_path)
    before = model.model.layers[0].self_attn.q_proj.weight.detach().clone()
    trainer = build_trainer(sample_index, cfg, read_tasks(cfg.tasks, cfg.limit), model=model, tokenizer=tok,
                            extra_reward_funcs=[distinct_token_reward], reward_weights=[1.0, 1.0])
    trainer.train()

    # Real rollouts went through the harness, one per row of the generation batch, and every
    # segment's prompt is exactly the rendered view the model saw that turn.
    assert trainer.state.global_step == 2 and len(trainer.reward_history) == 2
    rollouts = trainer.last_rollouts
    assert len(rollouts) == 2 and all(r.trace.turns for r in rollouts)
    for r in rollouts:
        assert len(r.segments) == len(r.trace.turns)
        for seg, turn in zip(r.segments, r.trace.turns):
            assert seg.prompt_ids == prompt_ids(tok, turn.prompt_messages, tool_specs())
            assert seg.completion_ids and len(seg.completion_ids) <= 16
    assert trainer.reward_history[-1]["n_episodes"] == 2
    assert "reward/total" in trainer.reward_history[-1]
    curve = [json.loads(line) for line in (cfg.out / "rl_curve.jsonl").read_text().splitlines()]
    assert len(curve) == 2 and "report" in curve[-1]

    after = trainer.model.model.layers[0].self_attn.q_proj.weight.detach()
    assert not torch.equal(before, after), "GRPO step did not change the weights"

    ckpt = save_merged(trainer.model, tok, tmp_path / "ckpt")
    config = AgentConfig(local_model=ckpt, max_turns=1, max_new_tokens=8, budget_tokens=1024)
    trace = SearchAgent(sample_index, make_policy("local", config), config).run("Who directed Mirror?")
    assert trace.turns and trace.stop_reason in ("no_tool_call", "finished", "max_turns")


@pytest.mark.slow
def test_grpo_time_budget_alone_ends_the_run(sample_index, tiny_model_dir, tmp_path):
    """--minutes without --steps: no step cap (TRL runs to a cap it never reaches); the budget ends the run."""
    from sieve.train.config import EpisodeConfig
    from sieve.train.rl import DEFAULT_STEPS, RLConfig, run_rl

    cfg = RLConfig(tasks=Path("data/sample/tasks.jsonl"), out=tmp_path / "rl", model_path=str(tiny_model_dir),
                   minutes=0.01, questions_per_step=1, num_generations=2, limit=2, rollout_workers=2,
                   episode=EpisodeConfig(budget_tokens=1024, max_turns=1, search_k=2, search_tokens=256,
                                         max_new_tokens=8))
    assert cfg.step_cap > DEFAULT_STEPS
    result = run_rl(sample_index, cfg, progress=False, extra_reward_funcs=[distinct_token_reward],
                    reward_weights=[1.0, 1.0])
    assert result["stopped_by"] == "minutes" and 1 <= result["steps"] < DEFAULT_STEPS
    assert (tmp_path / "rl" / "model" / "config.json").is_file()


def test_logprob_tiles_are_capped_on_cpu_only_while_a_step_runs():
    """TRL's 4,096-token lm-head tiles (512 MiB float32 copies on CPU) are cut for the step and restored after."""
    import torch
    from trl.kernels import chunked_logprob

    from sieve.train.grpo import CPU_TOKEN_TILE, cpu_logprob_tiles

    before = chunked_logprob.TOKEN_CHUNK_SIZE
    assert before > CPU_TOKEN_TILE
    with cpu_logprob_tiles(torch.device("cpu")):
        assert chunked_logprob.TOKEN_CHUNK_SIZE == CPU_TOKEN_TILE
    assert chunked_logprob.TOKEN_CHUNK_SIZE == before
    with cpu_logprob_tiles(torch.device("meta")):  # a GPU keeps TRL's own tile
        assert chunked_logprob.TOKEN_CHUNK_SIZE == before
