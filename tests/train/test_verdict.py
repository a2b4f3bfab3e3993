"""The verdict of ``sieve train all``: a retrained policy is recommended only when it beats the shipped one."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from sieve.core.errors import InvalidInput
from sieve.train.verdict import PairedDiff, SetComparison, VerdictConfig, decide

CFG = VerdictConfig()
HELD = "held-apart synthesized tasks"


def _rows(recalls: list[float], rewards: list[float] | None = None) -> list[dict]:
    rewards = rewards if rewards is not None else recalls
    return [
        {"id": f"t{i}", "recall": r, "reward": w, "all_gold": float(r == 1.0)}
        for i, (r, w) in enumerate(zip(recalls, rewards))
    ]


def _set(name: str, shipped: list[float], retrained: list[float], shipped_reward=None, retrained_reward=None):
    return SetComparison.of(name, _rows(shipped, shipped_reward), _rows(retrained, retrained_reward), CFG)


def test_paired_noise_is_two_standard_errors_of_the_mean_difference() -> None:
    p = PairedDiff.of([0.0, 0.5, 0.5, 1.0], [0.5, 0.5, 1.0, 1.0], 2.0)
    d = [0.5, 0.0, 0.5, 0.0]
    se = math.sqrt(sum((x - 0.25) ** 2 for x in d) / 3 / 4)
    assert p.diff == pytest.approx(0.25) and p.noise == pytest.approx(2 * se)
    assert (p.shipped, p.retrained) == (0.5, 0.75)
    assert PairedDiff.of([1.0], [0.0], 2.0).noise == math.inf  # one task: no noise estimate, never "above" it


def test_a_worse_retrained_policy_is_not_recommended() -> None:
    # The case: recall flat at 1.000, reward down (1.475 -> 1.429): the default stays.
    held = _set("held-apart synthesized tasks", [1.0] * 24, [1.0] * 24, [1.5, 1.45] * 12, [1.45, 1.41] * 12)
    v = decide([held], held.name, CFG)
    assert not v.better
    assert any("not above the noise" in r for r in v.reasons)
    assert any("tasks saturated: the shipped policy already solves 24 of 24" in r for r in v.reasons)
    worse = _set("held", [1.0, 1.0, 0.5, 1.0] * 6, [0.5, 0.5, 0.5, 0.5] * 6)
    v = decide([worse], "held", CFG)
    assert not v.better and "is lower" in v.reasons[0]
    assert "not better than the shipped default: the default stays" in v.headline()


def test_a_better_retrained_policy_is_recommended() -> None:
    better = _set("held", [0.5, 0.5, 1.0, 0.0] * 6, [1.0, 0.5, 1.0, 0.5] * 6)
    v = decide([better], "held", CFG)
    assert v.better and v.deciding_set == "held" and "better than the shipped default: recommended" in v.headline()
    assert not any("saturated" in r or "weak" in r for r in v.reasons)


def test_noise_and_the_reward_tie_break() -> None:
    # One task of 24 gains: within the noise, and the reward did not move either: not better.
    one = _set("held", [0.5] * 24, [1.0] + [0.5] * 23)
    assert not decide([one], "held", CFG).better
    # Recall equal, reward up on every task: the tie-break recommends it.
    tie = _set("held", [0.5] * 24, [0.5] * 24, [1.0, 1.1] * 12, [1.2, 1.3] * 12)
    v = decide([tie], "held", CFG)
    assert v.better and "within the noise; recall@20" in v.reasons[0]  # the tie-breaker named as what it is
    # Recall slightly lower (within the noise): no tie-break, whatever the reward.
    lower = _set("held", [0.5] * 23 + [1.0], [0.5] * 24, [1.0] * 24, [2.0] * 24)
    assert not decide([lower], "held", CFG).better


def test_the_labelled_questions_decide_and_no_set_may_get_worse() -> None:
    held_up = _set("held", [0.5, 0.0] * 12, [1.0, 0.5] * 12)
    real_flat = _set("real", [0.5, 1.0] * 12, [0.5, 1.0] * 12)
    assert not decide([held_up, real_flat], "real", CFG).better  # synthetic gains alone do not decide
    real_up = _set("real", [0.5, 0.0] * 12, [1.0, 0.5] * 12)
    held_down = _set("held", [1.0, 0.5] * 12, [0.5, 0.0] * 12)
    v = decide([held_down, real_up], "real", CFG)
    assert not v.better and any("recall@10 on held is lower" in r for r in v.reasons)
    assert decide([held_up, real_up], "real", CFG).better
    with pytest.raises(InvalidInput, match="deciding set"):
        decide([held_up], "real", CFG)
    with pytest.raises(InvalidInput, match="same tasks"):
        SetComparison.of("held", _rows([1.0, 1.0]), _rows([1.0]), CFG)


def test_few_tasks_are_flagged() -> None:
    v = decide([_set("held", [0.0, 0.5, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0])], "held", CFG)
    assert v.better and v.reasons[0].startswith("only 4 tasks in held: too few to tell")
    assert "on only 4 tasks of held (a weak verdict" in v.headline()


def test_fifteen_held_apart_tasks_are_too_few_to_tell_and_each_metric_is_named() -> None:
    """The issue's run: 15 held-apart tasks, recall@10 and recall@20 flat (the verdict called the latter
    "reward 0.967 -> 0.967"): the small set decides the wording, before the advice, and every figure
    is named as what it is."""
    held = _set(HELD, [1.0] * 14 + [0.5], [1.0] * 14 + [0.5], [1.0] * 14 + [0.5], [1.0] * 14 + [0.5])
    v = decide([held], HELD, CFG, k=10)
    assert not v.better and v.weak
    assert v.headline().startswith("Too few tasks to tell whether the retrained policy is better: 15 in " + HELD)
    assert "not better" not in v.headline() and "the shipped default stays" in v.headline()
    assert v.reasons[0].startswith(f"only 15 tasks in {HELD}: too few to tell")
    assert any(r.startswith("recall@10 on ") for r in v.reasons)
    assert any(r.startswith("recall@20 0.967 -> 0.967") for r in v.reasons)
    assert not any("reward" in r for r in v.reasons) and "reward" not in v.rule
    assert "recall@10" in v.rule and "recall@20" in v.rule
    assert v.to_dict()["headline"] == v.headline() and v.to_dict()["tie_metric"] == "recall@20"
    enough = _set(HELD, [1.0] * 23 + [0.5], [1.0] * 23 + [0.5])
    assert decide([enough], HELD, CFG).headline() == (
        "Retrained policy not better than the shipped default: the default stays."
    )


def test_the_report_names_each_metric_and_shows_the_most_natural_tasks(tmp_path: Path) -> None:
    from sieve.train.pipeline import PipelineConfig, learned_report

    cfg = PipelineConfig(corpus=tmp_path, out=tmp_path / "run")
    cfg.out.mkdir()
    questions = [
        "In GN Build, what is said about execute, and about configuration options?",
        "What is said about toolchain files in connection with GN Build?",
        "Which file declares the toolchain that GN uses for host builds?",
        "What do execute and toolchain have in common?",
    ] + [f"In GN Build, what is said about option_{i}, and about flag_{i}?" for i in range(11)]
    (cfg.out / "heldout_tasks.jsonl").write_text(
        "".join(json.dumps({"id": f"h{i}", "question": q}) + "\n" for i, q in enumerate(questions)), encoding="utf-8"
    )
    scores = {"reward": 1.082, "recall": 0.9, "all_gold": 0.8, "traj_recall": 0.95, "searches": 3.0, "n": 15}
    result = {
        "n_tasks": 60,
        "n_train": 45,
        "n_heldout": 15,
        "model_dir": "run/rl/model",
        "rl": {"updates": 3, "rl_seconds": 60.0, "stop": "stopped"},
        "evals": {HELD: {"learned (shipped)": scores, "learned (retrained)": {**scores, "reward": 1.021}}},
        "served": {HELD: {"shipped": {"recall": 0.9, "all_gold": 0.8, "recall_2k": 0.967, "n": 15}}},
        "ranker": None,
        "n_eval_tasks": 0,
        "embedder": {"kept": False, "reason": "kept as shipped (--embedder keep)", "sets": []},
        "adopted": None,
        "run": None,
    }
    held = _set(HELD, [1.0] * 14 + [0.5], [1.0] * 14 + [0.5])
    text = learned_report(cfg, result, decide([held], HELD, CFG, k=10), 10)
    assert "Too few tasks to tell" in text and "not better" not in text
    assert "| recall@20 shipped -> retrained |" in text and "| RL reward |" in text
    shown = text.split("read most like a person's question")[1].split("\n\n")[1].splitlines()
    assert shown[0] == "- Which file declares the toolchain that GN uses for host builds?"
    assert len(shown) == 3 and not any("what is said about" in line for line in shown[:2])


def test_the_report_recommends_only_a_better_model(tmp_path: Path) -> None:
    from sieve.train.pipeline import PipelineConfig, learned_report

    cfg = PipelineConfig(corpus=tmp_path, out=tmp_path / "run")
    scores = {"reward": 1.0, "recall": 0.5, "all_gold": 0.5, "traj_recall": 0.5, "searches": 2.0, "n": 24}
    result = {
        "n_tasks": 96,
        "n_train": 72,
        "n_heldout": 24,
        "model_dir": "run/rl/model",
        "rl": {
            "updates": 3,
            "rl_seconds": 60.0,
            "stop": "stopped by the time budget (1 min) after 3 updates",
            "screen": {"tasks": 72, "solved": 60, "kept": 18, "kept_unsolved": 12, "kept_solved": 6},
        },
        "evals": {"held": {"learned (shipped)": scores, "learned (retrained)": scores}},
        "served": {
            "held": {
                "shipped": {"recall": 0.75, "all_gold": 0.5, "recall_2k": 0.8, "n": 24},
                "retrained": {"recall": 0.5, "all_gold": 0.5, "recall_2k": 0.6, "n": 24},
            }
        },
        "ranker": None,
        "n_eval_tasks": 0,
        "embedder": {"kept": False, "reason": "kept as shipped (--embedder keep)", "sets": []},
        "adopted": None,
        "run": None,
    }
    worse = decide([_set("held", [1.0, 0.5] * 12, [0.5, 0.5] * 12)], "held", CFG)
    text = learned_report(cfg, result, worse, 10)
    assert "Keep the shipped default" in text and "--policy-path" not in text.replace("(no `--policy-path`)", "")
    assert "24 held out" in text and "solves 60 of 72 training tasks; trained on 18 (12 unsolved + 6 solved" in text
    assert "stopped by the time budget (1 min)" in text and worse.rule in text
    assert "the shipped closing ranker kept" in text and "| held | shipped | 24 | 0.750 | 0.500 | 0.800 |" in text
    assert "Decided on synthetic tasks only" in text  # no --eval-tasks: the report says what that verdict rests on
    better = decide([_set("held", [0.5, 0.0] * 12, [1.0, 0.5] * 12)], "held", CFG)
    text = learned_report(cfg, result, better, 10)
    assert f"--policy-path {cfg.out}`" in text and "Keep the shipped default" not in text
