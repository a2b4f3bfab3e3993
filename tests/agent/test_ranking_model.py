"""The closing ranker: the learned model, its file, and the pool ranked by it (plus the shipped model on the real sample)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sieve.agent.ranking.features import FEATURES, ClosingPool, features, pool
from sieve.agent.ranking.model import DEFAULT_RANKER, Ranker, capped_head, decayed_order, fuse
from sieve.agent.trace import Evidence
from sieve.core.errors import InvalidInput


def ev(cid: str) -> Evidence:
    return Evidence(chunk_id=cid, doc_id=cid.split("#")[0], score=0.0, rank=0)


def _model(**weights: float) -> Ranker:
    return Ranker(coef=[weights.get(n, 0.0) for n in FEATURES], intercept=0.0)


def test_fuse_ranks_chunks_by_probability_and_groups_on_request():
    policy = [ev("long#3"), ev("long#4"), ev("x#0")]
    hybrid = [ev("long#4"), ev("b#0"), ev("long#3")]
    cos = {"long#3": 0.7, "long#4": 0.6, "x#0": 0.1, "b#0": 0.3}
    closing = ClosingPool(hybrid, cos, {"long#3": 0.9})
    model = _model(cos=5.0, in_policy=1.0)
    chunks = fuse(policy, closing, model, 3)
    assert [e.chunk_id for e in chunks] == ["long#3", "long#4", "b#0"]  # two chunks of one document, best first
    assert all(0.0 <= e.score <= 1.0 for e in chunks)
    assert [e.score for e in chunks] == sorted((e.score for e in chunks), reverse=True)
    assert [e.rank for e in chunks] == [1, 2, 3]
    assert chunks[0].metadata["policy_rank"] == 1 and chunks[0].metadata["hybrid_rank"] == 3
    assert chunks[0].metadata["cover"] == 0.9 and chunks[1].metadata["cover"] == 0.0
    grouped = fuse(policy, closing, model, 3, group_by_doc=True)
    assert [e.doc_id for e in grouped] == ["long", "b", "x"]


def test_a_document_decay_lets_a_second_document_in_without_giving_up_depth():
    """Each chunk already placed from a document discounts that document's next chunk by the decay."""
    p = [0.9, 0.85, 0.8, 0.78, 0.5]
    docs = ["10k", "10k", "10k", "10q", "other"]
    assert decayed_order(range(5), p, docs, 1.0, 5) == [0, 1, 2, 3, 4]  # no decay: probability order
    # 0.85 * 0.9 = 0.765 < 0.78: the other filing's best chunk comes second; the 10-K's chunks follow.
    assert decayed_order(range(5), p, docs, 0.9, 5) == [0, 3, 1, 2, 4]
    assert decayed_order(range(5), p, docs, 0.9, 2) == [0, 3, 1, 2, 4]  # past k, the rest keep their order
    # A document far ahead keeps its places: 0.9 * 0.9 = 0.81 > 0.5.
    assert decayed_order(range(3), [0.9, 0.9, 0.5], ["a", "a", "b"], 0.9, 3) == [0, 1, 2]
    policy = [ev("10k#1"), ev("10k#2"), ev("10q#4")]
    closing = ClosingPool(policy, {"10k#1": 0.9, "10k#2": 0.85, "10q#4": 0.8}, {})
    model = _model(cos=5.0)
    assert [e.chunk_id for e in fuse(policy, closing, model, 3)] == ["10k#1", "10k#2", "10q#4"]
    decayed = fuse(policy, closing, model, 3, doc_decay=0.5)
    assert [e.chunk_id for e in decayed] == ["10k#1", "10q#4", "10k#2"]
    assert [e.score for e in decayed] == sorted((e.score for e in decayed), reverse=True)


def test_the_head_holds_no_more_of_a_page_than_hybrid_s_own_head_does():
    """A page the policy piled chunks on keeps as many top-5 places as hybrid's top 5 gives it (at least 2)."""
    # the reference page the policy searched over and over, then the page hybrid ranked 3rd
    policy = [ev("cli#1"), ev("cli#2"), ev("cli#3"), ev("cli#4"), ev("env#4")]
    hybrid = [ev("cli#1"), ev("faq#1"), ev("env#4"), ev("cli#2"), ev("pyproject#9")]
    cos = {"cli#1": 0.9, "cli#2": 0.85, "cli#3": 0.84, "cli#4": 0.83, "env#4": 0.5, "faq#1": 0.4, "pyproject#9": 0.3}
    closing = ClosingPool(hybrid, cos, {})
    model = _model(cos=5.0)
    plain = [e.chunk_id for e in fuse(policy, closing, model, 5)]
    assert plain == ["cli#1", "cli#2", "cli#3", "cli#4", "env#4"]
    capped = fuse(policy, closing, model, 6, head_cap=5)
    assert [e.chunk_id for e in capped] == ["cli#1", "cli#2", "env#4", "faq#1", "pyproject#9", "cli#3"]
    assert [e.score for e in capped] == sorted((e.score for e in capped), reverse=True)
    # a document hybrid itself ranks three times in its top 5 keeps three places (a filing holding the answer)
    hybrid3 = [ev("cli#1"), ev("cli#2"), ev("cli#3"), ev("env#4"), ev("faq#1")]
    kept = fuse(policy, ClosingPool(hybrid3, cos, {}), model, 5, head_cap=5)
    assert [e.chunk_id for e in kept] == ["cli#1", "cli#2", "cli#3", "env#4", "faq#1"]
    assert capped_head([0, 1, 2], ["a", "a", "a"], [], 5, floor=1) == [0, 1, 2]  # nothing else to place
    # only the first 2 x 5 places are reordered: a chunk the ranker put 11th is never pulled into the head
    docs = ["a"] * 10 + ["b"]
    assert capped_head(list(range(11)), docs, ["a"], 5) == list(range(11))
    docs = ["a"] * 9 + ["b", "c"]
    assert capped_head(list(range(11)), docs, ["a"], 5) == [0, 1, 9, 2, 3, 4, 5, 6, 7, 8, 10]


def test_floor_config_checks_the_decay():
    from sieve.agent.config import FloorConfig

    assert FloorConfig().doc_decay == 0.9 and FloorConfig().head_cap == 5
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(InvalidInput, match="doc_decay"):
            FloorConfig(doc_decay=bad)
    with pytest.raises(InvalidInput, match="head_cap"):
        FloorConfig(head_cap=-1)


def test_model_round_trip_and_bad_files(tmp_path):
    m = Ranker(
        coef=list(np.linspace(-1, 1, len(FEATURES))),
        intercept=0.3,
        mean=[0.0] * len(FEATURES),
        scale=[2.0] * len(FEATURES),
        meta={"rows": 3},
    )
    back = Ranker.load(m.save(tmp_path / "f.json"))
    x = np.random.default_rng(0).random((4, len(FEATURES)))
    assert np.allclose(back.predict(x), m.predict(x))
    raw = json.loads((tmp_path / "f.json").read_text())
    raw["names"] = raw["names"][:-1]
    (tmp_path / "g.json").write_text(json.dumps(raw))
    with pytest.raises(InvalidInput, match="refit"):
        Ranker.load(tmp_path / "g.json")
    with pytest.raises(InvalidInput, match="fusion model JSON"):
        Ranker.load(tmp_path / "missing.json")


def test_hidden_layer_round_trip_and_by_hand(tmp_path):
    n = len(FEATURES)
    w = [[0.0] * 2 for _ in range(n)]
    w[FEATURES.index("cos")] = [1.0, -1.0]
    m = Ranker(coef=[2.0, 0.5], intercept=-0.1, hidden=[(w, [0.0, 0.2])])
    x = np.zeros((1, n))
    x[0, FEATURES.index("cos")] = 0.3
    expected = 1 / (1 + np.exp(-(2.0 * np.tanh(0.3) + 0.5 * np.tanh(-0.3 + 0.2) - 0.1)))
    assert m.predict(x)[0] == pytest.approx(expected)
    back = Ranker.load(m.save(tmp_path / "mlp.json"))
    assert back.predict(x)[0] == pytest.approx(expected)
    with pytest.raises(InvalidInput, match="output weights"):
        Ranker(coef=[1.0] * n, intercept=0.0, hidden=[(w, [0.0, 0.2])])


def test_shipped_model_is_fitted_and_ignores_a_ranking_off_the_question():
    model = Ranker.load(DEFAULT_RANKER)
    assert model.meta.get("rows", 0) > 1000, "the shipped model was fitted (python -m sieve.train.ranking)"
    assert "command" in model.meta and model.meta.get("data"), "the model says how it was made"
    # A policy that drifted off the question (shares nothing with its search, low cosine) counts for
    # nothing: hybrid's head stays first, whatever places the policy gave its chunks.
    policy = [ev(f"g{i}#0") for i in range(5)]
    hybrid = [ev(f"h{i}#0") for i in range(30)]
    cos = {**{f"g{i}#0": 0.05 for i in range(5)}, **{f"h{i}#0": 0.6 - 0.01 * i for i in range(30)}}
    cover = {**{f"g{i}#0": 0.1 for i in range(5)}, **{f"h{i}#0": 0.8 for i in range(30)}}
    fused = fuse(policy, ClosingPool(hybrid, cos, cover), model, 5)
    assert [e.chunk_id for e in fused] == [f"h{i}#0" for i in range(5)]
    # A chunk both rankings put first, with the best cosine and cover, comes first.
    items = pool([ev("a#0"), ev("x#0")], [ev("a#0"), ev("b#0")])
    p = model.predict(features(items, [0.6, 0.3, 0.4], 1.0, [1.0, 0.4, 0.5]))
    assert p[0] == p.max() and 0.0 < p.min() and p.max() < 1.0
