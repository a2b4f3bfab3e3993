"""The LLM training runs (GRPO and SFT of a 2-layer SmolLM2, a GRPO step of a tiny random gpt-oss, all over the
real harness), run in a process of their own.

``tests/train/test_llm_training.py`` runs this file in a fresh ``pytest`` and turns each of its
results into one test of the suite. A training step holds the model, its gradients, AdamW's
state and TRL's log-prob tiles (~1.4 GB on top of the process); in the suite's process, which by
then holds the shared index, the embedders, the live server and every library the other tests
imported, that made the run's peak. Not named ``test_*.py``: the suite collects it only through
that runner.
"""

from __future__ import annotations

import json
from typing import Any
from pathlib import Path

import pytest

from sieve.train.config import EpisodeConfig, split_tasks

SFT_EPISODE = EpisodeConfig(budget_tokens=1024, max_turns=2, search_k=2, search_tokens=256, max_new_tokens=48)
SAMPLE = Path("data/sample")


@pytest.fixture(scope="module")
def training_index(embedder, tmp_path_factory: pytest.TempPathFactory):
    """The sample corpus cut to what these runs search: the gold documents of the first four tasks
    (the most any run here reads) and every sixth other document as distractors, indexed once in this
    process. Embedding all 360 pages was a third of this file's time; the runs check the training
    machinery, which a smaller corpus exercises the same way."""
    from sieve.eval.data import read_tasks
    from sieve.retriever import CorpusIndex, RetrieverConfig

    gold = {g for t in read_tasks(SAMPLE / "tasks.jsonl", 4) for g in t["gold_ids"]}
    lines = (SAMPLE / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    kept = [line for i, line in enumerate(lines) if json.loads(line)["id"] in gold or i % 6 == 0]
    corpus = tmp_path_factory.mktemp("training-corpus") / "corpus.jsonl"
    corpus.write_text("\n".join(kept) + "\n", encoding="utf-8")
    data = tmp_path_factory.mktemp("training-data")
    index = CorpusIndex.open(RetrieverConfig(data_dir=data), "sample-cut", create=True, embedder=embedder)
    index.writer.index_path(corpus, progress=False)
    assert gold <= set(index.documents()) and len(index.documents()) < len(lines) / 4
    return index


def distinct_token_reward(completions, **kwargs):
    """TEST-ONLY reward (labelled fake): an untrained model never calls a tool, so every episode
    reward ties and GRPO's advantage is zero; this term varies between rollouts so the smoke run
    has a gradient to apply."""
    return [float(len(set(str(c)))) / 10.0 for c in completions]


@pytest.mark.slow
def test_grpo_smoke_run_through_the_harness(training_index, tiny_model_dir, tmp_path):
    import torch

    from sieve.agent import AgentConfig, SearchAgent, make_policy
    from sieve.agent.tool_specs import tool_specs
    from sieve.train.llm.chat_format import prompt_ids
    from sieve.eval.data import read_tasks
    from sieve.train.config import EpisodeConfig
    from sieve.train.llm.rl import RLConfig, build_trainer
    from sieve.train.llm.sft import load_student, save_merged

    cfg = RLConfig(
        tasks=Path("data/sample/tasks.jsonl"),
        out=tmp_path / "rl",
        model_path=str(tiny_model_dir),
        steps=2,
        questions_per_step=1,
        group=2,
        lr=1e-3,
        limit=2,
        rollout_workers=2,
        episode=EpisodeConfig(budget_tokens=1024, max_turns=2, search_k=2, search_tokens=256, max_new_tokens=16),
    )
    model, tok, _ = load_student(cfg.model_path)
    before = model.model.layers[0].self_attn.q_proj.weight.detach().clone()
    trainer = build_trainer(
        training_index,
        cfg,
        read_tasks(cfg.tasks, cfg.limit),
        model=model,
        tokenizer=tok,
        extra_reward_funcs=[distinct_token_reward],
        reward_weights=[1.0, 1.0],
    )
    trainer.train()

    # Real rollouts went through the harness, one per row of the generation batch, and every
    # segment's prompt is exactly the rendered view the model saw that turn.
    assert trainer.state.global_step == 2 and len(trainer.reward_history) == 2
    rollouts = trainer.last_rollouts
    assert len(rollouts) == 2 and all(r.trace.turns for r in rollouts)
    for r in rollouts:
        assert len(r.segments) == len(r.trace.turns)
        for seg, turn in zip(r.segments, r.trace.turns):
            # The tool texts state the episode's own numbers (search_k=2 here), as the model was shown them.
            assert seg.prompt_ids == prompt_ids(
                tok, turn.prompt_messages, tool_specs(config=cfg.episode.training_agent_config())
            )
            assert seg.completion_ids and len(seg.completion_ids) <= 16
    assert trainer.reward_history[-1]["n_episodes"] == 2
    assert "reward/total" in trainer.reward_history[-1]
    curve = [json.loads(line) for line in (cfg.out / "rl_curve.jsonl").read_text().splitlines()]
    assert len(curve) == 2 and "report" in curve[-1]

    after = trainer.model.model.layers[0].self_attn.q_proj.weight.detach()
    assert not torch.equal(before, after), "GRPO step did not change the weights"

    ckpt = save_merged(trainer.model, tok, tmp_path / "ckpt")
    # No retry of a turn cut at 8 tokens (it would generate 2048 more on the CPU): such a turn ends "truncated".
    config = AgentConfig(local_model=ckpt, max_turns=1, max_new_tokens=8, length_retry_tokens=0, budget_tokens=1024)
    trace = SearchAgent(training_index, make_policy("local", config), config).run("Who directed Mirror?")
    assert trace.turns and trace.stop_reason in ("no_tool_call", "finished", "max_turns", "truncated")


@pytest.mark.slow
def test_grpo_time_budget_alone_ends_the_run(training_index, tiny_model_dir, tmp_path):
    """--minutes without --steps: no step cap (TRL runs to a cap it never reaches); the budget ends the run."""
    from sieve.train.config import EpisodeConfig
    from sieve.train.llm.rl import DEFAULT_STEPS, RLConfig, run_rl

    cfg = RLConfig(
        tasks=Path("data/sample/tasks.jsonl"),
        out=tmp_path / "rl",
        model_path=str(tiny_model_dir),
        minutes=0.01,
        questions_per_step=1,
        group=2,
        limit=2,
        rollout_workers=2,
        episode=EpisodeConfig(budget_tokens=1024, max_turns=1, search_k=2, search_tokens=256, max_new_tokens=8),
    )
    assert cfg.step_cap > DEFAULT_STEPS
    result = run_rl(
        training_index, cfg, progress=False, extra_reward_funcs=[distinct_token_reward], reward_weights=[1.0, 1.0]
    )
    assert result["stopped_by"] == "minutes" and 1 <= result["steps"] < DEFAULT_STEPS
    assert (tmp_path / "rl" / "model" / "config.json").is_file()


@pytest.mark.slow
def test_tiny_sft_run_saves_a_loadable_checkpoint(training_index, tiny_model_dir, tmp_path) -> None:
    from sieve.train.llm.sft import WarmStartConfig, run_sft

    cfg = WarmStartConfig(
        tasks=Path("data/sample/tasks.jsonl"),
        out=tmp_path / "sft",
        model_path=str(tiny_model_dir),
        limit=4,
        holdout=0.25,
        epochs=1,
        # One optimizer step on one example: the machinery (teacher episodes, examples, the trainer,
        # the merged save, the held-out check) is the same as for a full epoch, at a sixth of its cost
        # (six examples of 1-2k tokens through SmolLM2's 49k-word head were this file's slowest minute).
        steps=1,
        grad_accum=1,
        check_before=False,
        max_heldout=1,
        episode=SFT_EPISODE,
    )
    result = run_sft(training_index, cfg, progress=False)
    assert result["n_kept_episodes"] >= 1 and result["n_train_examples"] >= result["n_kept_episodes"]
    assert result["heldout"]["n_tasks"] == 1 and 0.0 <= result["heldout"]["valid_tool_call_rate"] <= 1.0
    from sieve.eval.data import read_tasks

    _, held = split_tasks(read_tasks(cfg.tasks, 4), 0.25, cfg.seed)
    assert result["heldout_ids"] == [t["id"] for t in held] and result["n_train_tasks"] == 3
    assert result["steps"] == 1 and result["stopped_by"] == "steps"
    report = json.loads((tmp_path / "sft" / "sft_report.json").read_text())
    assert report["model_dir"] == result["model_dir"] and (Path(result["model_dir"]) / "config.json").is_file()


@pytest.fixture(scope="module")
def tiny_gpt_oss_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny RANDOMLY INITIALISED gpt-oss with gpt-oss's own tokenizer and chat template (tests/_tiny_gpt_oss.py)."""
    from _tiny_gpt_oss import save_tiny_gpt_oss

    return save_tiny_gpt_oss(tmp_path_factory.mktemp("models") / "tiny-gpt-oss")


GPT_OSS_EPISODE = EpisodeConfig(budget_tokens=2048, max_turns=2, search_k=2, search_tokens=256, max_new_tokens=16)


def _gpt_oss_rl_config(model_dir: Path, out: Path, group: int) -> Any:
    from sieve.train.llm.rl import RLConfig

    return RLConfig(
        tasks=SAMPLE / "tasks.jsonl",
        out=out,
        model_path=str(model_dir),
        steps=1,
        questions_per_step=1,
        group=group,
        lr=1e-2,
        limit=1,
        rollout_workers=group,
        episode=GPT_OSS_EPISODE,
    )


def _harmony_turns(tok: Any) -> list[list[int]]:
    """Crafted gpt-oss turns, as token ids: a search naming both gold pages, a call with broken JSON, and no call."""
    turns = [
        "<|channel|>analysis<|message|>Find the film, then its director.<|end|><|start|>assistant<|channel|>commentary"
        ' to=functions.search <|constrain|>json<|message|>{"query": "2001: A Space Odyssey Stanley Kubrick"}<|call|>',
        '<|channel|>commentary to=functions.search <|constrain|>json<|message|>{"query": 2001 Space<|call|>',
        "<|channel|>final<|message|>I do not know.<|return|>",
    ]
    return [tok(t, add_special_tokens=False)["input_ids"] for t in turns]


@pytest.mark.slow
def test_gpt_oss_rollout_and_grpo_step(training_index, tiny_gpt_oss_dir, tmp_path):
    """A tiny random gpt-oss through `sieve train rl`'s own trainer: one step on its own samples, then one on
    crafted harmony turns (a SCRIPTED generator) whose rewards differ, so the policy-gradient term is not zero."""
    import itertools

    import torch

    from _tiny_gpt_oss import EOS_IDS
    from sieve.eval.data import read_tasks
    from sieve.train.llm.rl import build_trainer
    from sieve.train.llm.sft import load_student

    cfg = _gpt_oss_rl_config(tiny_gpt_oss_dir, tmp_path / "rl", group=2)
    model, tok, _ = load_student(cfg.model_path)
    lm_head = model.lm_head.weight.detach().clone()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    trainer = build_trainer(training_index, cfg, read_tasks(cfg.tasks, cfg.limit), model=model, tokenizer=tok)
    assert set(EOS_IDS) <= set(trainer.eos_token_ids)  # <|call|> ends a turn as <|return|> does
    trainer.train()
    assert trainer.state.global_step == 1 and len(trainer.last_rollouts) == cfg.group
    for r in trainer.last_rollouts:  # every prompt is gpt-oss's harmony rendering of the turn
        first = r.segments[0].prompt_ids
        assert first[0] == 200_006 and tok.decode(first[-2:]) == "<|start|>assistant"
        question = r.trace.turns[0].prompt_messages[-1]["content"]
        ask = tok(f"<|start|>user<|message|>{question}<|end|><|start|>assistant", add_special_tokens=False)["input_ids"]
        assert first[-len(ask) :] == ask
    report = trainer.reward_history[-1]
    assert report["n_episodes"] == cfg.group and "advantage_abs_mean" in report
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(before[n], p.detach())]
    assert changed, "the GRPO step changed no parameter"
    if report["reward_std"] == 0:  # the random model's samples tied: no policy gradient reached the output layer
        assert report["advantage_abs_mean"] == 0 and torch.equal(trainer.model.lm_head.weight.detach(), lm_head)

    # The same trainer code on crafted turns: a SCRIPTED (fake) generator replaces sampling, nothing else.
    turns = itertools.cycle(_harmony_turns(tok))
    final = tok("<|channel|>final<|message|>Done.<|return|>", add_special_tokens=False)["input_ids"]

    def scripted(batch, params):  # a first turn (no tool result yet) takes the next crafted turn; later ones stop
        return [(list(final if "<|start|>functions." in tok.decode(ids) else next(turns)), None) for ids in batch]

    crafted = build_trainer(
        training_index,
        _gpt_oss_rl_config(tiny_gpt_oss_dir, tmp_path / "rl2", group=3),
        read_tasks(cfg.tasks, 1),
        model=trainer.model,
        tokenizer=tok,
    )
    crafted._batch_fn = lambda model: scripted
    head = crafted.model.lm_head.weight.detach().clone()
    crafted.train()
    rollouts = crafted.last_rollouts
    calls = sorted((c.name, c.malformed) for r in rollouts for c in r.trace.tool_calls)
    assert calls == [("search", False), ("search", True)], calls  # read from harmony
    assert any(r.trace.turns[0].reasoning == "Find the film, then its director." for r in rollouts)
    report = crafted.reward_history[-1]
    assert report["reward_std"] > 0 and report["advantage_abs_mean"] > 0
    assert not torch.equal(crafted.model.lm_head.weight.detach(), head), "the policy-gradient term changed nothing"
