"""``sieve.train.fusion`` end to end on the shipped sample: collect episodes as serving pools them, fit, reload."""

from __future__ import annotations

import numpy as np

from sieve.agent.fusion import FEATURES, FusionModel
from sieve.eval.data import load_tasks
from sieve.train.fusion import collect, fit, recall_table, split


def test_collect_fit_and_reload(sample_index, sample_dir, tmp_path):
    tasks = load_tasks(sample_dir / "tasks.jsonl", "sample")[:8]
    data = collect(sample_index, tasks, ["heuristic"], k=10, progress=False)
    assert len(data.x) == len(data.y) == len(data.episodes) == 8
    assert all(x.shape == (len(y), len(FEATURES)) for x, y in zip(data.x, data.y))
    assert sum(float(y.sum()) for y in data.y) > 0  # gold chunks are in the pools
    model = fit(data, hidden=4, c=10.0)
    back = FusionModel.load(model.save(tmp_path / "fusion.json"))
    assert np.allclose(back.predict(data.x[0]), model.predict(data.x[0]))
    table = recall_table(data, back)
    assert set(table) == {"sample/heuristic@k10/hybrid", "sample/heuristic@k10/policy", "sample/heuristic@k10/fused"}
    fit_part, held = split(data, 0.5)
    assert len(fit_part.x) + len(held.x) == 8
