"""RL of the learned policy on the real sample index: the retrieval cache, the GRPO update, a resumable run."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from sieve.agent import AgentConfig, SearchAgent
from sieve.agent.policies.learned import LearnedConfig, LearnedPolicy, PolicyNetwork, load_checkpoint, save_checkpoint
from sieve.cli.main import app
from sieve.train.learned import CachedIndex
from sieve.train.learned.grpo import ppo_loss, run_group, update
from sieve.train.learned.config import ImitationConfig
from sieve.train.learned.imitation import heuristic_label, imitation_loss
from sieve.train.rewards import RewardConfig


def _policy(seed: int, **kwargs) -> LearnedPolicy:
    torch.manual_seed(seed)
    return LearnedPolicy(PolicyNetwork(), LearnedConfig(), **kwargs)


def test_cached_search_equals_the_index(sample_index, tmp_path) -> None:
    cached = CachedIndex(sample_index, folder=tmp_path)
    for query in ("Charles Lindbergh aircraft", "Stanley Kubrick film", "capital of France"):
        first = sample_index.search(query, 10)
        seen = {h.chunk_id for h in first[:4]}
        for exclude in (None, seen):
            want = sample_index.search(query, 20, exclude=exclude)
            got = cached.search(query, 20, exclude=exclude)
            assert [(h.chunk_id, round(h.score, 9)) for h in got] == [(h.chunk_id, round(h.score, 9)) for h in want]
    assert cached.hits >= 3 and cached.misses == 3
    assert cached.search("Kubrick", 5, mode="bm25") == sample_index.search("Kubrick", 5, mode="bm25")
    cached.save()  # a later run reads the same lists and vectors back
    again = CachedIndex(sample_index, folder=tmp_path)
    got = again.search("Stanley Kubrick film", 20)
    assert again.misses == 0 and [h.chunk_id for h in got] == [
        h.chunk_id for h in cached.search("Stanley Kubrick film", 20)
    ]
    assert (again.embedder.embed_query("capital of France") == cached.embedder.embed_query("capital of France")).all()


@pytest.fixture(scope="module")
def batch(sample_index, sample_tasks):
    policy = _policy(11, sample=True, record=True)
    agent = SearchAgent(CachedIndex(sample_index), policy, AgentConfig(k=10, tool_workers=1))
    rollouts = []
    for g, task in enumerate(sample_tasks[:2]):
        rollouts += run_group(agent, policy, task, g, [1000 + 10 * g + j for j in range(3)], RewardConfig(), 0.0)
    return policy, rollouts


def test_one_update_lowers_the_loss_on_a_fixed_batch(batch) -> None:
    policy, rollouts = batch
    decisions = [d for i, r in enumerate(rollouts) for d in r.decisions]
    for i, r in enumerate(rollouts):
        for d in r.decisions:
            d.episode = i
    # A fixed batch: alternate advantages (labelled, not the rewards), so the objective is not flat.
    adv = torch.tensor([1.0 if i % 2 else -1.0 for i in range(len(rollouts))])
    net = policy.net
    before, _ = ppo_loss(net, decisions, adv, clip=0.2, entropy_coef=0.0)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    opt.zero_grad()
    before.backward()
    opt.step()
    after, _ = ppo_loss(net, decisions, adv, clip=0.2, entropy_coef=0.0)
    assert after.item() < before.item()


def test_update_uses_group_advantages(batch) -> None:
    policy, rollouts = batch
    net = PolicyNetwork()
    net.load_state_dict(policy.net.state_dict())
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    info = update(net, opt, rollouts, epochs=2, clip=0.2, entropy_coef=0.0, max_grad_norm=1.0)
    assert set(info) >= {"loss", "entropy", "clip_frac", "approx_kl", "groups_used"}
    assert all(r.trace.stop_reason == "finished" and r.decisions for r in rollouts)


def test_imitation_labels_are_valid_choices(batch) -> None:
    policy, rollouts = batch
    labelled = [heuristic_label(d, policy.config) for r in rollouts for d in r.decisions]
    loss = imitation_loss(policy.net, labelled)
    assert torch.isfinite(loss) and loss.item() > 0
    first_turn = [d for d in labelled if d.kind == "select" and not d.end_first]
    assert first_turn and all(d.picks[0] != 0 for d in first_turn)  # the first turn always searches


def test_learned_rl_run_resumes_and_serves(sample_index, session_data_dir, tmp_path) -> None:
    from sieve.train.learned import LearnedRLConfig, run_learned_rl

    cfg = LearnedRLConfig(
        tasks="data/sample/tasks.jsonl",
        out=tmp_path / "run",
        init="none",
        steps=2,
        questions_per_step=1,
        group=2,
        epochs=1,
        holdout=0.0,
        save_every=1,
        table_every=1,
        limit=4,
        seed=3,
        imitation=ImitationConfig(rounds=1, episodes=2, epochs=2),
    )
    first = run_learned_rl(sample_index, cfg, progress=False)
    assert first["updates"] == 2 and not first["resumed"] and first["imitation"]["rounds"]
    assert first["stopped_by"] == "steps" and first["stop"] == "stopped at the step cap (2 updates)"
    screen = first["screen"]  # the screen keeps every unsolved task and a share of the solved ones (at least 1 task)
    assert screen["tasks"] == 4 and screen["kept"] == screen["kept_unsolved"] + screen["kept_solved"] >= 1
    assert screen["kept_unsolved"] == 4 - screen["solved"]
    rows = [json.loads(line) for line in (tmp_path / "run" / "curve.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == [1, 2] and all(r["searches"] >= 1 for r in rows)
    assert (tmp_path / "run" / "curve.png").stat().st_size > 0 and "| 2 |" in (
        tmp_path / "run" / "curve.md"
    ).read_text()
    cfg.steps = 3
    again = run_learned_rl(sample_index, cfg, progress=False)
    assert again["resumed"] and again["updates"] == 3
    rows = [json.loads(line) for line in (tmp_path / "run" / "curve.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == [1, 2, 3]
    net, _, meta = load_checkpoint(tmp_path / "run" / "model")
    assert meta["updates"] == 3
    res = CliRunner().invoke(
        app,
        [
            "search",
            "Who directed Mirror?",
            "-c",
            "sample",
            "--data-dir",
            str(session_data_dir),
            "--policy",
            "learned",
            "--policy-path",
            str(tmp_path / "run" / "model"),
            "--json",
            "-k",
            "3",
        ],
    )
    assert res.exit_code == 0, res.output
    body = json.loads(res.stdout[res.stdout.index("{") :])
    assert body["policy"] == "learned" and 1 <= len(body["results"]) <= 3


def test_train_rl_cli_learned(sample_index, session_data_dir, tmp_path) -> None:
    start = save_checkpoint(tmp_path / "start", _policy(5).net, LearnedConfig())
    res = CliRunner().invoke(
        app,
        [
            "train",
            "rl",
            "--policy",
            "learned",
            "-c",
            "sample",
            "--data-dir",
            str(session_data_dir),
            "--tasks",
            "data/sample/tasks.jsonl",
            "--out",
            str(tmp_path / "rl"),
            "--init",
            str(start),
            "--steps",
            "1",
            "--questions",
            "1",
            "--num-generations",
            "2",
            "--n",
            "3",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    body = json.loads(res.stdout[res.stdout.index("{") :])
    assert body["updates"] == 1 and (tmp_path / "rl" / "model" / "model.safetensors").is_file()
    res = CliRunner().invoke(
        app,
        [
            "train",
            "rl",
            "--policy",
            "learned",
            "-c",
            "sample",
            "--data-dir",
            str(session_data_dir),
            "--tasks",
            "data/sample/tasks.jsonl",
            "--num-generations",
            "1",
        ],
    )
    assert res.exit_code == 2 and "num_generations >= 2" in res.stderr


class _OffTopicModel:
    """FAKE model: searches something unrelated to every question, then returns what it saw (its own ranking)."""

    def chat(self, messages, tools, **kw):
        from sieve.agent.backends.base import ChatResult, ParsedToolCall

        if any(m["role"] == "tool" for m in messages):
            call = ParsedToolCall(name="finish", arguments={"ids": [f"c{i}" for i in range(1, 11)]})
        else:
            call = ParsedToolCall(
                name="search", arguments={"query": "quarterly tax tariff of shipping insurance", "k": 10}
            )
        return ChatResult(text="", tool_calls=[call], prompt_tokens=0, completion_tokens=5)


def test_rl_checks_judge_the_policys_own_ranking_not_the_floor(sample_index, sample_tasks) -> None:
    # Served, the floor fuses any ranking with hybrid's; training must not credit that to the policy,
    # or the reward barely moves with what the policy ranks. An off-topic policy scores as off-topic.
    from sieve.agent import make_policy
    from sieve.agent.config import FloorConfig
    from sieve.eval.metrics import recall_at_k
    from sieve.train.learned import LearnedRLConfig
    from sieve.train.learned.trainer import policy_check

    k, tasks = 5, sample_tasks[:6]
    policy = make_policy("openai", AgentConfig(k=k), backend=_OffTopicModel())
    checked = policy_check(sample_index, policy, tasks, LearnedRLConfig(k=k))
    off = AgentConfig(k=k, floor=FloorConfig(enabled=False))
    own = sum(
        recall_at_k(SearchAgent(sample_index, policy, off).run(t["question"]).returned_doc_ids, t["gold_ids"], k)
        for t in tasks
    ) / len(tasks)
    floored = sum(
        recall_at_k(
            SearchAgent(sample_index, policy, AgentConfig(k=k)).run(t["question"]).returned_doc_ids, t["gold_ids"], k
        )
        for t in tasks
    ) / len(tasks)
    assert floored > own + 0.3  # the floor would have lifted it: the test can tell the two apart
    assert checked["recall"] == pytest.approx(own)


def test_train_rl_time_budget_ends_the_run_and_says_so(sample_index, session_data_dir, tmp_path) -> None:
    base = [
        "train",
        "rl",
        "-c",
        "sample",
        "--data-dir",
        str(session_data_dir),
        "--tasks",
        "data/sample/tasks.jsonl",
        "--n",
        "3",
        "--questions",
        "1",
        "--num-generations",
        "2",
        "--json",
    ]
    # --minutes alone: no step cap; the budget (set-up included) ends the run, after at least one update.
    res = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "budget"), "--minutes", "0.01"])
    assert res.exit_code == 0, res.output
    body = json.loads(res.stdout[res.stdout.index("{") :])
    assert body["stopped_by"] == "minutes" and body["updates"] >= 1 and "time budget (0.01 min)" in body["stop"]
    assert "imitation" not in body  # --init default: the shipped checkpoint, no warm start from scratch
    # both: the step cap came first, and the summary says so
    res = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "both"), "--minutes", "30", "--steps", "1"])
    assert res.exit_code == 0, res.output
    body = json.loads(res.stdout[res.stdout.index("{") :])
    assert body["stopped_by"] == "steps" and body["updates"] == 1 and body["stop"].endswith("of 30 minutes")
