"""The learned policy on the real sample index: decisions, log-probabilities, determinism, checkpoints.

Mechanics are checked with a freshly initialised (untrained, seeded) network; what the policy
*finds* is checked with the checkpoint shipped in the package.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from sieve.agent import AgentConfig, SearchAgent, make_policy
from sieve.agent.policies.learned import LearnedConfig, LearnedPolicy, PolicyNetwork, load_checkpoint, save_checkpoint
from sieve.agent.policies.learned.network import draw_sequence, score_decisions
from sieve.core.errors import InvalidInput, NotFound

DEMO = "What was the 2020 population of the city that Charles Lindbergh's transatlantic aircraft was named after?"


def _fresh(seed: int = 0, **kwargs) -> LearnedPolicy:
    torch.manual_seed(seed)
    return LearnedPolicy(PolicyNetwork(LearnedConfig().hidden), LearnedConfig(), **kwargs)


def test_network_is_small() -> None:
    assert PolicyNetwork().n_parameters() < 10_000_000


def test_sampled_logprobs_match_rescoring(sample_index, sample_tasks) -> None:
    policy = _fresh(1, sample=True, record=True)
    agent = SearchAgent(sample_index, policy, AgentConfig(k=10))
    for i, task in enumerate(sample_tasks[:3]):
        trace = agent.run(task["question"], seed=100 + i)
        decisions = policy.take_decisions(100 + i)
        kinds = {d.kind for d in decisions}
        assert {"select", "rank"} <= kinds and trace.stop_reason == "finished"
        # The trace records every decision with its log-probability, in order.
        logged = [d for t in trace.turns for d in t.meta["decisions"]]
        assert [d["kind"] for d in logged] == [d.kind for d in decisions]
        assert np.allclose([d["logp"] for d in logged], [d.logp for d in decisions], atol=1e-5)
        # Re-scoring the same decisions with the same weights (batched torch path) gives the same numbers.
        scored = score_decisions(policy.net, decisions)
        for kind, s in scored.items():
            mine = [d for d in decisions if d.kind == kind]
            for row, d in enumerate(mine):
                n = len(d.step_logps)
                assert torch.allclose(s.logp[row, :n], torch.tensor(d.step_logps, dtype=torch.float32), atol=1e-5)
                assert bool(s.mask[row, :n].all()) and not bool(s.mask[row, n:].any())


def test_same_seed_same_episode_and_greedy_ignores_seed(sample_index, sample_tasks) -> None:
    q = sample_tasks[1]["question"]
    greedy = SearchAgent(sample_index, _fresh(2), AgentConfig(k=8))
    a, b = greedy.run(q, seed=1), greedy.run(q, seed=99)
    assert a.returned_chunk_ids == b.returned_chunk_ids
    assert [t.completion for t in a.turns] == [t.completion for t in b.turns]
    sampler = SearchAgent(sample_index, _fresh(2, sample=True), AgentConfig(k=8))
    c, d = sampler.run(q, seed=7), sampler.run(q, seed=7)
    assert [t.completion for t in c.turns] == [t.completion for t in d.turns]
    others = {tuple(t.completion for t in sampler.run(q, seed=s).turns) for s in range(8, 14)}
    assert len(others) > 1  # sampling does explore


def test_episode_respects_the_harness(sample_index, sample_tasks) -> None:
    config = AgentConfig(k=10, budget_tokens=2048)
    agent = SearchAgent(sample_index, _fresh(3, sample=True), config)
    for i, task in enumerate(sample_tasks[:4]):
        trace = agent.run(task["question"], seed=i)
        assert trace.n_malformed == 0 and trace.n_searches >= 1
        assert 0 < len(trace.returned) <= 10
        assert set(trace.returned_chunk_ids) <= set(trace.seen_chunk_ids)
        assert not set(trace.returned_chunk_ids) & set(trace.pruned_chunk_ids)
        assert len(set(trace.returned_doc_ids)) == len(trace.returned_doc_ids) or len(trace.returned) > len(
            set(trace.returned_doc_ids)
        )
        assert trace.peak_context_tokens <= config.budget_tokens


def test_draw_sequence_respects_groups_and_stop() -> None:
    scores = np.array([5.0, 1.0, 0.5, 0.2])
    picks, logps = draw_sequence(scores, 3, stop_index=0, stop_first=False)
    assert picks[0] != 0 and picks[-1] == 0 and len(logps) == len(picks)
    picks, _ = draw_sequence(np.array([3.0, 2.0, 1.0]), 3, groups=[0, 0, 1])
    assert picks == [0, 2]  # item 1 shares item 0's document
    rng = np.random.default_rng(0)
    counts = np.zeros(3)
    for _ in range(2000):
        counts[draw_sequence(np.log(np.array([0.6, 0.3, 0.1])), 1, rng=rng)[0][0]] += 1
    assert np.allclose(counts / counts.sum(), [0.6, 0.3, 0.1], atol=0.04)


def test_checkpoint_round_trip_and_serving(sample_index, sample_tasks, tmp_path) -> None:
    policy = _fresh(4)
    folder = save_checkpoint(tmp_path / "ckpt", policy.net, policy.config, {"note": "test"})
    net, cfg, meta = load_checkpoint(folder)
    assert meta == {"note": "test"} and cfg == policy.config
    for (k1, v1), (k2, v2) in zip(policy.net.state_dict().items(), net.state_dict().items()):
        assert k1 == k2 and torch.equal(v1, v2)
    q = sample_tasks[2]["question"]
    direct = SearchAgent(sample_index, policy, AgentConfig(k=6)).run(q)
    config = AgentConfig(k=6, policy_path=folder)
    served = SearchAgent(sample_index, make_policy("learned", config), config).run(q)
    assert served.policy == "learned" and served.returned_chunk_ids == direct.returned_chunk_ids


def test_checkpoint_errors_are_clear(tmp_path) -> None:
    with pytest.raises(NotFound, match="Expected a learned-policy checkpoint folder"):
        load_checkpoint(tmp_path / "missing")
    policy = _fresh(5)
    folder = save_checkpoint(tmp_path / "ckpt", policy.net, policy.config)
    body = json.loads((folder / "config.json").read_text())
    body["features"]["chunk"] = body["features"]["chunk"][:-1]
    (folder / "config.json").write_text(json.dumps(body))
    with pytest.raises(InvalidInput, match="features"):
        load_checkpoint(folder)


@pytest.mark.parametrize(
    ("config_json", "weights", "problem"),
    [
        ("[]", None, "a JSON object"),
        ({"policy": {"bogus": 1}}, None, r"unknown \['bogus'\]"),
        ({"policy": []}, None, "objects under 'policy'"),
        (None, b"garbage", "unreadable file"),
        (None, "one head", "KeyError: 'select.0.bias'"),
        (None, "narrow", "fit this version's features"),
    ],
)
def test_a_broken_checkpoint_is_a_clear_error_at_load(tmp_path, config_json, weights, problem) -> None:
    """What a user's --policy-path may hold: each is InvalidInput naming the problem, never a traceback."""
    from safetensors.numpy import save_file

    from sieve.agent.policies.learned.decisions import NumpyNetwork

    folder = save_checkpoint(tmp_path / "ckpt", _fresh(5).net, _fresh(5).config)
    if config_json is not None:
        body = json.loads((folder / "config.json").read_text())
        text = config_json if isinstance(config_json, str) else json.dumps({**body, **config_json})
        (folder / "config.json").write_text(text)
    if weights == b"garbage":
        (folder / "model.safetensors").write_bytes(b"garbage")
    elif weights == "one head":
        save_file({"select.0.weight": np.zeros((4, 4), np.float32)}, str(folder / "model.safetensors"))
    elif weights == "narrow":  # every head present, the first layers two inputs short
        from safetensors.numpy import load_file

        tensors = {
            k: (v[:, :-2] if k.endswith(".0.weight") else v)
            for k, v in load_file(str(folder / "model.safetensors")).items()
        }
        save_file(tensors, str(folder / "model.safetensors"))
    with pytest.raises(InvalidInput, match=problem):
        NumpyNetwork.load(folder)


def test_shipped_checkpoint_finds_the_demo_answer_document(sample_index) -> None:
    """The README demo: the answer (population) is on St. Louis's page, reached through the bridge
    "Spirit of St. Louis" named on Lindbergh's page. The default checkpoint (trained on other
    corpora) must return it; nothing in the policy names this question."""
    config = AgentConfig(k=10)
    trace = SearchAgent(sample_index, make_policy("learned", config), config).run(DEMO)
    assert trace.stop_reason == "finished" and trace.n_searches >= 2
    assert "wiki-st-louis" in trace.returned_doc_ids
    assert "wiki-charles-lindbergh" in trace.returned_doc_ids


def test_numpy_serving_network_equals_the_torch_one():
    """Serving runs the shipped weights in numpy (no torch import); every head gives the torch network's scores."""
    import numpy as np

    from sieve.agent.policies.learned import NumpyNetwork, default_checkpoint
    from sieve.agent.policies.learned.features import CANDIDATE_FEATURES, CHUNK_FEATURES, STATE_FEATURES

    torch_net, _, _ = load_checkpoint(default_checkpoint())
    np_net, _, _ = NumpyNetwork.load(default_checkpoint())
    rng = np.random.default_rng(0)
    cands = rng.random((7, len(CANDIDATE_FEATURES)), dtype=np.float32)
    chunks = rng.random((9, len(CHUNK_FEATURES)), dtype=np.float32)
    state = rng.random(len(STATE_FEATURES), dtype=np.float32)
    with torch.no_grad():
        want = (
            torch_net.select_scores(torch.from_numpy(cands), torch.from_numpy(state)).numpy(),
            torch_net.prune_logits(torch.from_numpy(chunks), torch.from_numpy(state)).numpy(),
            torch_net.rank_scores(torch.from_numpy(chunks)).numpy(),
        )
    got = (np_net.select_scores(cands, state), np_net.prune_logits(chunks, state), np_net.rank_scores(chunks))
    for w, g in zip(want, got):
        assert w.shape == g.shape and np.allclose(w, g, atol=1e-5)
    assert isinstance(LearnedPolicy.load(None).net, NumpyNetwork)
    assert not isinstance(LearnedPolicy.load(None, sample=True).net, NumpyNetwork)


def test_evidence_is_drawn_by_chunk_unless_documents_are_asked_for() -> None:
    """A long document's three best chunks lead the policy's ranking; one per document only when grouped."""
    from sieve.agent.policies.learned.policy import draw_evidence

    scores = np.array([4.0, 3.5, 3.0, 1.0, 0.5])
    docs = ["filing", "filing", "filing", "other-company", "third"]
    assert draw_evidence(scores, docs, 4).order == [0, 1, 2, 3]
    grouped = draw_evidence(scores, docs, 4, by_doc=True)
    assert grouped.order == [0, 3, 4, 1] and grouped.picks == [0, 3, 4]
    assert grouped.groups == [0, 0, 0, 1, 2]
    # Sampling (training) draws every pick with its log-probability, k at most.
    drawn = draw_evidence(scores, docs, 3, rng=np.random.default_rng(0))
    assert len(drawn.order) == 3 == len(drawn.picks) == len(drawn.logps) and drawn.groups is None
