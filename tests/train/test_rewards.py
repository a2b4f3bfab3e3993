"""Rewards on hand-made traces: every expected value below is worked out by hand from the formula."""

from __future__ import annotations

import pickle
from concurrent.futures import ThreadPoolExecutor

import pytest

from sieve.agent.trace import Evidence, ToolCall, Trace, Turn
from sieve.train.rewards import (
    Gold,
    RewardConfig,
    RewardReport,
    check_reward_weights,
    get_component_reward,
    get_episode_reward,
    score_episode,
)
from sieve.train.rewards.context1 import prune_streak_penalty, turn_penalty
from sieve.train.rewards.metrics import contains_answer, f_beta, recall

TASK = {
    "id": "t1",
    "question": "q",
    "answers": ["verismo"],
    "gold_ids": ["A", "B"],
    "meta": {"gold_chunk_ids": ["A#0", "B#0"]},
}
GOLD = Gold.from_task(TASK)


def ev(chunk_id: str, text: str = "", rank: int = 1) -> Evidence:
    return Evidence(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], score=1.0, rank=rank, text=text)


def search(query: str, results: list[str], name: str = "search") -> ToolCall:
    return ToolCall(name=name, arguments={"query": query}, result_chunk_ids=results)


def prune(ids: list[str]) -> ToolCall:
    return ToolCall(name="prune", arguments={"chunk_ids": ids})


def make_trace(calls_per_turn: list[list[ToolCall]], returned: list[Evidence], pruned: list[str] = ()) -> Trace:
    turns = [Turn(index=i, tool_calls=calls) for i, calls in enumerate(calls_per_turn)]
    seen = list(dict.fromkeys(c for t in turns for call in t.tool_calls for c in call.result_chunk_ids))
    return Trace(
        question="q",
        turns=turns,
        seen_chunk_ids=seen,
        seen_doc_ids=list(dict.fromkeys(c.split("#")[0] for c in seen)),
        pruned_chunk_ids=list(pruned),
        returned=returned,
    )


def perfect() -> Trace:
    return make_trace(
        [
            [search("composer of la boheme", ["A#0", "X#0"])],
            [search("puccini style", ["B#0", "Y#0"])],
            [prune(["X#0", "Y#0"])],
        ],
        [ev("A#0", "La bohème by Puccini", 1), ev("B#0", "Puccini, exponent of verismo.", 2)],
        pruned=["X#0", "Y#0"],
    )


def test_metric_maths_by_hand() -> None:
    assert f_beta({"a", "b"}, {"a"}, beta=1.0) == pytest.approx(2 * 0.5 * 1 / 1.5)
    # β=4: (1+16)·P·R/(16P+R) with P=0.5, R=1 -> 8.5/9
    assert f_beta({"a", "b"}, {"a"}, beta=4.0) == pytest.approx(8.5 / 9)
    assert f_beta(set(), {"a"}) == 0.0 and recall(["a"], []) == 0.0
    assert contains_answer("The Verismo style.", ["verismo"]) and not contains_answer("verismos", ["verismo"])
    with pytest.raises(ValueError, match="beta > 0"):
        f_beta({"a"}, {"a"}, beta=0)
    # Agrees with the evaluation's ranked-list metric when the cut-off covers the whole set.
    from sieve.eval.metrics import fbeta_at_k

    assert f_beta(["a", "x", "b"], {"a", "b", "c"}, 2.0) == pytest.approx(
        fbeta_at_k(["a", "x", "b"], {"a", "b", "c"}, 10, 2.0)
    )


def test_perfect_set_gets_the_maximum() -> None:
    cfg = RewardConfig()
    best = score_episode(perfect(), GOLD, cfg)
    assert best.total == pytest.approx(cfg.max_reward) == pytest.approx(2.0)
    assert (best.f_beta, best.traj_recall, best.answer) == (1.0, 1.0, 1.0)
    # Any degradation scores strictly lower.
    extra = perfect()
    extra.returned.append(ev("X#0", "noise", 3))
    half = perfect()
    half.returned = half.returned[:1]
    for worse in (extra, half):
        assert score_episode(worse, GOLD, cfg).total < best.total


def test_context1_terms_by_hand() -> None:
    # Found A only (returned A + one distractor), saw A and B; answer string not in A's text.
    t = make_trace([[search("q1", ["A#0", "X#0"])], [search("q2", ["B#0"])]], [ev("A#0", "no"), ev("X#0", "no")])
    b = score_episode(t, GOLD, RewardConfig(), progress=0.0)
    p, r, beta2 = 0.5, 0.5, 16.0
    fb = (1 + beta2) * p * r / (beta2 * p + r)
    assert b.f_beta == pytest.approx(fb)
    assert b.traj_recall == 1.0 and b.answer == 0.0
    assert b.total == pytest.approx(0.7 * fb + 0.3)
    # β anneals to 2 in the last epoch: F_2 = 5·0.25/(2+0.5) = 0.5
    assert score_episode(t, GOLD, RewardConfig(), progress=1.0).f_beta == pytest.approx(0.5)


def test_trajectory_recall_counts_pruned_gold() -> None:
    t = make_trace([[search("q1", ["A#0"])], [search("q2", ["B#0"])], [prune(["B#0"])]], [ev("A#0")], pruned=["B#0"])
    b = score_episode(t, GOLD)
    assert b.traj_recall == 1.0  # B was seen before it was pruned
    assert b.p_gold_prune == pytest.approx(0.2) and b.n_pruned_gold == 1


def test_single_search_collapse_is_penalised() -> None:
    collapsed = make_trace([[search("q", ["A#0", "X#0"])]], [ev("A#0")])
    tried = make_trace([[search("q", ["A#0", "X#0"])], [search("q other", ["Y#0"])]], [ev("A#0")])
    bc, bt = score_episode(collapsed, GOLD), score_episode(tried, GOLD)
    assert bc.p_collapse == pytest.approx(0.5) and bt.p_collapse == 0.0
    assert bc.total == pytest.approx(bt.total - 0.5)  # same outcome otherwise
    # One search that already saw all gold is not collapse.
    lucky = make_trace([[search("q", ["A#0", "B#0"])]], [ev("A#0"), ev("B#0")])
    assert score_episode(lucky, GOLD).p_collapse == 0.0


def test_gold_prune_repeat_and_malformed_penalties() -> None:
    bad = ToolCall(name="search", arguments={}, malformed=True, error="Expected JSON")
    t = make_trace(
        [[search("Same  Query", ["A#0"])], [search("same query", ["X#0"]), bad], [prune(["A#0", "X#0"])]],
        [ev("X#0")],
        pruned=["A#0", "X#0"],
    )
    b = score_episode(t, GOLD)
    assert b.n_repeats == 1 and b.p_repeat == pytest.approx(0.1)
    assert b.n_malformed == 1 and b.p_malformed == pytest.approx(0.1)
    assert b.n_pruned_gold == 1 and b.p_gold_prune == pytest.approx(0.2)
    # Auxiliary penalties sit outside the clamp: only traj_recall 0.5 is earned (context1 = 0.3·0.5), and the
    # three penalties (0.4 in all) are subtracted after it, so the total goes below ε.
    assert b.p_collapse == 0.0 and b.context1 == pytest.approx(0.15)
    assert b.total == pytest.approx(0.15 - 0.4)


def test_prune_streak_and_turn_penalties() -> None:
    calls = [[prune(["x"])] for _ in range(6)]  # 6 consecutive prunes -> 3 beyond the streak of 3
    assert prune_streak_penalty(make_trace(calls, [])) == pytest.approx(0.3)
    broken = [[prune(["x"])], [prune(["x"])], [search("s", [])], [prune(["x"])], [prune(["x"])], [prune(["x"])]]
    assert prune_streak_penalty(make_trace(broken, [])) == 0.0
    assert prune_streak_penalty(make_trace([[prune(["x"])]] * 20, [])) == pytest.approx(0.5)  # cap
    assert (turn_penalty(64), turn_penalty(96), turn_penalty(128), turn_penalty(200)) == (0.0, 0.25, 0.5, 0.5)


def test_penalties_never_push_context1_below_epsilon_or_above_pre() -> None:
    many_prunes = [[search("a", ["A#0"])], [search("b", ["B#0"])]] + [[prune(["z"])] for _ in range(10)]
    t = make_trace(many_prunes, [ev("A#0"), ev("B#0", "verismo")])
    b = score_episode(t, GOLD)
    assert b.p_prune == pytest.approx(0.5) and b.context1 == pytest.approx(2.0 - 0.5)
    nothing = make_trace([[search("a", ["X#0"])], [search("b", ["Y#0"])]] + [[prune(["z"])] for _ in range(10)], [])
    assert score_episode(nothing, GOLD).context1 == pytest.approx(RewardConfig().epsilon)


def test_annealing_schedule() -> None:
    cfg = RewardConfig(beta_epochs=5)
    assert [cfg.beta_at(p) for p in (0.0, 0.19, 0.2, 0.5, 0.99, 1.0)] == [4.0, 4.0, 3.5, 3.0, 2.0, 2.0]
    w0, wm, w1 = cfg.weights_at(0.0), cfg.weights_at(0.5), cfg.weights_at(1.0)
    assert w0.collapse == 0.5 and wm.collapse == pytest.approx(0.25) and w1.collapse == pytest.approx(0.0)
    assert w0.f_beta == w1.f_beta == 0.7  # the outcome weights do not anneal
    collapsed = make_trace([[search("q", ["A#0"])]], [ev("A#0")])
    assert score_episode(collapsed, GOLD, cfg, 0.0).total < score_episode(collapsed, GOLD, cfg, 1.0).total
    assert RewardConfig(aux_anneal="constant").weights_at(1.0).collapse == 0.5
    assert RewardConfig(aux_anneal="linear").weights_at(0.25).collapse == pytest.approx(0.375)
    with pytest.raises(ValueError, match="aux_final_scale"):
        RewardConfig(aux_final_scale=2.0)
    with pytest.raises(ValueError, match="non-negative"):
        RewardConfig(collapse=-1.0)


def test_trl_callable_pickles_and_is_thread_safe() -> None:
    fn = get_episode_reward(RewardConfig(beta_epochs=2))
    clone = pickle.loads(pickle.dumps(fn))
    comp = pickle.loads(pickle.dumps(get_component_reward("traj_recall")))
    traces = [perfect(), make_trace([[search("q", ["A#0"])]], [ev("A#0")])] * 8
    kwargs = {
        "trace": [t.to_dict() for t in traces],
        "gold_ids": [TASK["gold_ids"]] * 16,
        "answers": [TASK["answers"]] * 16,
        "meta": [TASK["meta"]] * 16,
    }
    expected = fn(completions=[None] * 16, **kwargs)
    assert clone(completions=[None] * 16, **kwargs) == expected
    assert expected[0] == pytest.approx(2.0) and expected[1] < 1.0
    assert comp(**kwargs)[1] == pytest.approx(0.5)
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: fn(completions=None, **kwargs), range(32)))
    assert all(r == expected for r in results)
    with pytest.raises(ValueError, match="trace"):
        fn(completions=[None], gold_ids=[["A"]])
    with pytest.raises(ValueError, match="one weight per reward function"):
        check_reward_weights([fn, comp], [1.0])
    with pytest.raises(ValueError, match="RewardBreakdown field"):
        get_component_reward("nope")


def test_batch_report() -> None:
    items = [score_episode(perfect(), GOLD), score_episode(make_trace([[search("q", ["X#0"])]], []), GOLD)]
    rep = RewardReport.from_breakdowns(items)
    assert rep.n == 2 and rep.searches_per_episode == pytest.approx(1.5)
    assert rep.collapse_rate == 0.5 and rep.prune_calls_per_episode == pytest.approx(0.5)
    assert rep.means["total"] == pytest.approx((items[0].total + items[1].total) / 2)
    metrics = rep.to_metrics()
    assert metrics["sieve/reward/total"] == rep.means["total"] and "sieve/collapse_rate" in metrics
    assert RewardReport.from_breakdowns([]).n == 0
