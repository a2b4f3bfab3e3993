"""``sieve.train.ranking`` end to end on the shipped sample: collect episodes as serving pools them, fit, reload."""

from __future__ import annotations

import numpy as np
import pytest

from sieve.agent.config import FloorConfig
from sieve.agent.ranking.features import FEATURES
from sieve.agent.ranking.model import Ranker
from sieve.core.errors import InvalidInput
from sieve.eval.data import load_tasks
from sieve.train.ranking.episodes import RankingData, add_cover, collect, refeaturize, split
from sieve.train.ranking.fit import crossval_tables, ensemble, finetune, fit, fold_of, recall_table


@pytest.fixture(scope="module")
def heuristic_episodes(sample_index, sample_dir):
    """The heuristic policy's episodes of 8 sample tasks, collected once (read-only for the tests)."""
    tasks = load_tasks(sample_dir / "tasks.jsonl", "sample")[:8]
    return collect(sample_index, tasks, ["heuristic"], k=10, progress=False)


def test_collect_fit_and_reload(heuristic_episodes, tmp_path):
    data = heuristic_episodes
    assert len(data.x) == len(data.y) == len(data.episodes) == 8
    assert all(x.shape == (len(y), len(FEATURES)) for x, y in zip(data.x, data.y))
    assert sum(float(y.sum()) for y in data.y) > 0  # gold chunks are in the pools
    model = fit(data, hidden=4, c=10.0)
    back = Ranker.load(model.save(tmp_path / "fusion.json"))
    assert np.allclose(back.predict(data.x[0]), model.predict(data.x[0]))
    table = recall_table(data, back)
    assert set(table) == {"sample/heuristic@k10/hybrid", "sample/heuristic@k10/policy", "sample/heuristic@k10/fused"}
    fit_part, held = split(data, 0.5)
    assert len(fit_part.x) + len(held.x) == 8


def test_span_sets_are_scored_by_span_recall_of_the_chunk_ranking(heuristic_episodes):
    """A task with gold spans is scored as `sieve eval` scores it: span recall of chunks, not document recall."""
    from dataclasses import replace

    ep = dict(heuristic_episodes.episodes[0])
    first, second = ep["hybrid"][0], ep["hybrid"][1]
    a0, a1 = ep["ranges"][first.chunk_id]
    b0, b1 = ep["ranges"][second.chunk_id]
    # one span inside hybrid's first chunk, one inside its second, one nowhere in the pool
    spans = ((first.doc_id, a0, a0 + 5), (second.doc_id, b1 - 5, b1), ("no-such-page", 0, 10))
    ep["task"] = replace(ep["task"], gold_spans=spans)
    data = RankingData(x=[heuristic_episodes.x[0]], y=[heuristic_episodes.y[0]], episodes=[ep])
    table = recall_table(data, fit(heuristic_episodes, c=1.0))
    row = table["sample/heuristic@k10/hybrid"]
    assert set(row) == {"SR@5", "SR@10", "SR@20"}
    assert row["SR@5"] == pytest.approx(2 / 3)
    assert set(table["sample/heuristic@k10/fused"]) == {"SR@5", "SR@10", "SR@20"}


def test_crossval_scores_every_task_once_by_a_model_that_never_saw_it(heuristic_episodes):
    from dataclasses import replace

    # Tasks given 0-3 gold pages that are nowhere: recalls differ task by task, so a task scored twice
    # or skipped moves the mean.
    episodes = [
        {**ep, "task": replace(ep["task"], gold_ids=(*ep["task"].gold_ids, *(f"nowhere-{j}" for j in range(i % 4))))}
        for i, ep in enumerate(heuristic_episodes.episodes)
    ]
    data = RankingData(x=list(heuristic_episodes.x), y=list(heuristic_episodes.y), episodes=episodes)
    everywhere = fit(data, c=1.0)
    tables = crossval_tables(data, 3, c=1.0, hidden=0, baseline=everywhere)
    # the baseline is scored on every held fold: together, each task exactly once, as on the whole set
    whole = recall_table(data, everywhere)
    assert 0 < whole["sample/heuristic@k10/hybrid"]["R@5"] < 1
    for name, row in whole.items():
        assert tables["baseline"][name] == pytest.approx(row), name
    assert set(tables["refit"]) == set(tables["baseline"])
    assert {fold_of(ep, 3) for ep in data.episodes} == {0, 1, 2}  # 8 tasks spread over the folds
    with pytest.raises(InvalidInput, match="at least 2 folds"):
        crossval_tables(data, 1, c=1.0, hidden=0)


def test_older_episodes_get_their_cover_from_the_index(heuristic_episodes, sample_index):
    """Episode files collected before the cover features refit after add_cover, to the same features."""
    old = RankingData(
        x=list(heuristic_episodes.x[:3]),
        y=list(heuristic_episodes.y[:3]),
        episodes=[{k: v for k, v in ep.items() if k != "cover"} for ep in heuristic_episodes.episodes[:3]],
    )
    with pytest.raises(InvalidInput, match="add_cover"):
        refeaturize(old)
    with pytest.raises(InvalidInput, match="index for episode source"):
        add_cover(old, {})
    assert add_cover(old, {"sample": sample_index}) == 3
    refeaturize(old)
    for ep, collected in zip(old.episodes, heuristic_episodes.episodes[:3]):
        assert ep["cover"] == pytest.approx(collected["cover"]) and max(ep["cover"].values()) > 0
    assert all(np.allclose(a, b) for a, b in zip(old.x, heuristic_episodes.x[:3]))


def _log_loss(model: Ranker, data) -> float:
    p = np.clip(np.concatenate([model.predict(x) for x in data.x]), 1e-6, 1 - 1e-6)
    y = np.concatenate(data.y)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def test_finetune_adapts_the_shipped_ranker_and_the_anchor_holds_it_back(heuristic_episodes):
    data = heuristic_episodes
    base = Ranker.load(None)
    free = finetune(data, base, anchor=0.0, steps=200)
    held = finetune(data, base, anchor=1e6, steps=200)
    assert _log_loss(free, data) < _log_loss(base, data)  # it learns from the episodes
    assert np.abs(np.asarray(held.coef) - np.asarray(base.coef)).max() < 0.02  # a strong anchor keeps the weights
    assert free.mean == base.mean and free.scale == base.scale  # the shipped feature scaling is kept
    assert free.meta["finetuned"]["episodes"] == 8


def test_a_retrained_policy_folder_serves_its_own_ranker(tmp_path, sample_index):
    import shutil

    from sieve.agent import AgentConfig, SearchAgent
    from sieve.agent.policies.learned import LearnedPolicy, default_checkpoint

    folder = tmp_path / "model"
    shutil.copytree(default_checkpoint(), folder)
    assert LearnedPolicy.load(folder).ranker_path is None  # no fusion.json: the shipped ranker serves
    base = Ranker.load(None)
    flipped = Ranker(
        coef=[-c for c in base.coef],
        intercept=-base.intercept,
        names=base.names,
        mean=base.mean,
        scale=base.scale,
        meta={},
        hidden=base.hidden,
    )
    flipped.save(folder / "fusion.json")
    policy = LearnedPolicy.load(folder)
    assert policy.ranker_path == folder / "fusion.json"
    agent = SearchAgent(sample_index, policy, AgentConfig(k=5))
    assert agent.ranker is not None and agent.ranker.coef == flipped.coef
    # an explicit fusion_path wins over the folder's ranker (here a missing one: it fails clearly, before any episode)
    with pytest.raises(InvalidInput, match="Expected a fusion model JSON"):
        SearchAgent(sample_index, policy, AgentConfig(k=5, floor=FloorConfig(fusion_path=tmp_path / "none.json")))


def test_ensemble_is_the_mean_of_the_models_logits(heuristic_episodes):
    data = heuristic_episodes
    models = [fit(data, hidden=3, c=10.0, seed=s) for s in (0, 1, 2)]
    both = ensemble(models)
    x = np.concatenate(data.x)

    def logit(p: np.ndarray) -> np.ndarray:
        p = np.clip(p, 1e-12, 1 - 1e-12)
        return np.log(p / (1 - p))

    expected = np.mean([logit(m.predict(x)) for m in models], axis=0)
    assert np.allclose(logit(both.predict(x)), expected, atol=1e-6)
    assert len(both.hidden[0][1]) == 9 and both.meta["seeds"] == [0, 1, 2]
    with pytest.raises(InvalidInput, match="one hidden layer"):
        ensemble([fit(data, hidden=0, c=10.0)])


def test_the_command_refits_from_pickled_episodes(heuristic_episodes, tmp_path):
    """``python -m sieve.train.ranking`` on an existing episode file: no index opened, a model written."""
    import pickle

    from sieve.train.ranking.__main__ import main

    episodes = tmp_path / "episodes.pkl"
    episodes.write_bytes(pickle.dumps(heuristic_episodes))
    out = tmp_path / "ranker.json"
    main(["--data", "unused/sample", "--episodes", str(episodes), "--out", str(out), "--check", "0.5", "--c", "10"])
    model = Ranker.load(out)
    assert model.meta["data"] == ["unused/sample"] and model.meta["episodes"] == 8 and not model.hidden
