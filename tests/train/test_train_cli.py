"""``sieve train`` through Typer's runner on the shared sample index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from typer.testing import CliRunner

from sieve.cli.main import app


def test_train_synth_json(sample_index, session_data_dir, tmp_path):
    out = tmp_path / "tasks.jsonl"
    res = CliRunner().invoke(
        app,
        [
            "train",
            "synth",
            "-c",
            "sample",
            "--data-dir",
            str(session_data_dir),
            "--n",
            "2",
            "--seed",
            "5",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    body = json.loads(res.stdout[res.stdout.index("{") :])
    assert body["written"] == 2 and body["existing"] == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and all(r["meta"]["seed"] == 5 for r in rows)


def test_train_errors_are_one_line(sample_index, session_data_dir, tmp_path):
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "train",
            "synth",
            "-c",
            "sample",
            "--data-dir",
            str(session_data_dir),
            "--generator",
            "magic",
            "--out",
            str(tmp_path / "t.jsonl"),
        ],
    )
    assert res.exit_code == 2 and "Expected --generator" in res.stderr
    res = runner.invoke(
        app, ["train", "synth", "-c", "nope", "--data-dir", str(session_data_dir), "--out", str(tmp_path / "t.jsonl")]
    )
    assert res.exit_code == 2 and "unknown_collection" in res.stderr
    res = runner.invoke(
        app,
        [
            "train",
            "rl",
            "--tasks",
            str(tmp_path / "missing.jsonl"),
            "-c",
            "sample",
            "--data-dir",
            str(session_data_dir),
        ],
    )
    assert res.exit_code == 2 and "Expected a tasks JSONL file" in res.stderr
    res = runner.invoke(
        app,
        [
            "train",
            "rl",
            "--tasks",
            "data/sample/tasks.jsonl",
            "-c",
            "sample",
            "--data-dir",
            str(session_data_dir),
            "--num-generations",
            "1",
        ],
    )
    assert res.exit_code == 2 and "num_generations >= 2" in res.stderr
    res = runner.invoke(
        app,
        [
            "train",
            "rl",
            "--tasks",
            "data/sample/tasks.jsonl",
            "-c",
            "sample",
            "--policy",
            "llm",
            "--data-dir",
            str(session_data_dir),
            "--init",
            "none",
        ],
    )
    assert res.exit_code == 2 and "a fresh network is the learned policy's option" in res.stderr


def test_sft_and_rl_share_one_episode_definition():
    from dataclasses import asdict

    import typer.main

    from sieve.train.config import EpisodeConfig
    from sieve.train.llm.rl import RLConfig
    from sieve.train.llm.sft import WarmStartConfig

    names = {"budget_tokens", "max_turns", "max_new_tokens", "search_k", "search_tokens"}
    train = typer.main.get_command(app).commands["train"]

    def flags(command: str) -> dict:
        return {p.name: p.default for p in train.commands[command].params if p.name in names}

    expected = {n: v for n, v in asdict(EpisodeConfig()).items() if n in names}
    assert flags("sft") == flags("rl") == expected
    assert RLConfig().episode == WarmStartConfig().episode == EpisodeConfig()


def test_synth_on_text_the_template_writer_cannot_read_fails_clearly_and_leaves_nothing(
    abstracts_index, session_data_dir, tmp_path
):
    """Scientific abstracts give the template writer no facts or title links: a clear error, no empty file."""
    out = tmp_path / "tasks.jsonl"
    res = CliRunner().invoke(
        app, ["train", "synth", "-c", "abstracts", "--data-dir", str(session_data_dir), "--n", "5", "--out", str(out)]
    )
    assert res.exit_code == 2, res.output
    assert "Expected synthesized tasks from collection 'abstracts', got none" in res.stderr
    assert "(6 chunks tried," in res.stderr  # each of the 6 chunks once, though two passes visit them
    assert "--generator claims" in res.stderr and "--generator local|openai" in res.stderr
    assert not out.exists()


def test_train_all_writes_hard_tasks_retrains_policy_and_ranker_and_judges_sieve_as_served(abstracts_corpus, tmp_path):
    """`train all` (generator auto) on abstracts: the hard writer finds no phrase pairs in six one-chunk
    abstracts, the template writer none either (alone, it fails clearly), so claims fill up; the learned
    policy trains, its ranker is retrained beside it, and the
    verdict compares Sieve as served before and after. summary.json and report.md tell the same story
    (counts, figures, verdict), and so does rl/summary.json."""
    base = [
        "train",
        "all",
        "--corpus",
        str(abstracts_corpus),
        "-c",
        "abs",
        "--data-dir",
        str(tmp_path / "data"),
        "--json",
    ]
    res = CliRunner().invoke(
        app, [*base, "--out", str(tmp_path / "heur"), "--generator", "heuristic", "--n-tasks", "4", "--rl-steps", "2"]
    )  # the old spellings still work, and warn
    assert res.exit_code == 2 and "--generator claims" in res.stdout, res.output  # --json: the error is JSON on stdout
    assert "--n-tasks is deprecated; use --n" in res.stderr and "--rl-steps is deprecated; use --steps" in res.stderr
    out = tmp_path / "auto"
    labelled = tmp_path / "questions.jsonl"  # real questions of the corpus: they decide the verdict
    labelled.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "question": q, "gold_ids": [g]}) + "\n"
            for i, (q, g) in enumerate(
                [
                    ("Does fibre supplementation prevent colon polyps from coming back?", "a1"),
                    ("Which gut bacteria predict who responds to PD-1 blockade?", "a4"),
                    ("Can walking enlarge the hippocampus of elderly people?", "a5"),
                ]
            )
        )
    )
    res = CliRunner().invoke(
        app,
        [*base, "--out", str(out), "--n", "4", "--steps", "2", "--eval-tasks", str(labelled), "--ranker", "retrain"],
    )
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and "claims" in {r["meta"]["generator"] for r in rows} <= {"hard", "claims"}
    body = json.loads(res.stdout[res.stdout.index("{") :])
    assert body["config"]["generator"] == "auto" and body["rl"]["updates"] == 2
    assert body["rl"]["stopped_by"] == "steps" and body["config"]["init"] == "default"

    summary = json.loads((out / "summary.json").read_text())
    rl_summary = json.loads((out / "rl" / "summary.json").read_text())
    report = (out / "report.md").read_text()
    n_held = len((out / "heldout_tasks.jsonl").read_text().splitlines())
    assert summary == json.loads(json.dumps(body, default=str))
    assert n_held >= 1 and summary["n_heldout"] == rl_summary["n_heldout"] == n_held
    assert f"{summary['n_train']} train, {n_held} held out" in report
    # the policy alone, as RL scored it on the held-apart tasks
    held = summary["evals"]["held-apart synthesized tasks"]
    for name, r in held.items():
        assert f"| {name} | {r['n']} | {r['recall']:.3f} | {r['all_gold']:.3f} |" in report
    assert held["learned (retrained)"] == rl_summary["heldout_end"]
    assert held["learned (shipped)"] == rl_summary["heldout_start"]  # --init default: the start is the shipped one
    # the ranker retrained beside the policy: one --policy-path serves both
    from sieve.agent.policies.learned import LearnedPolicy

    ranker = Path(summary["model_dir"]) / "fusion.json"
    assert summary["ranker"]["path"] == str(ranker) and ranker.is_file()
    assert LearnedPolicy.load(summary["model_dir"]).ranker_path == ranker
    assert json.loads(ranker.read_text())["meta"]["finetuned"]["episodes"] == summary["ranker"]["episodes"]
    # Sieve as served, before and after, on both sets; the verdict is decided on the labelled questions
    served = summary["served"]
    assert list(served) == ["held-apart synthesized tasks", "labelled questions (--eval-tasks)"]
    assert served["labelled questions (--eval-tasks)"]["shipped"]["n"] == 3 == summary["n_eval_tasks"]
    for s, systems in served.items():
        assert set(systems) == {"shipped", "retrained"}
        for system, r in systems.items():
            assert (
                f"| {s} | {system} | {r['n']} | {r['recall']:.3f} | {r['all_gold']:.3f} | {r['recall_2k']:.3f} |"
                in report
            )
    verdict = summary["verdict"]
    assert verdict["deciding_set"] == "labelled questions (--eval-tasks)" and verdict["rule"] in report
    assert [s["name"] for s in verdict["sets"]] == list(served)
    for s in verdict["sets"]:
        assert s["recall"]["shipped"] == pytest.approx(served[s["name"]]["shipped"]["recall"])
        assert s["recall"]["retrained"] == pytest.approx(served[s["name"]]["retrained"]["recall"])
    assert all(reason in report for reason in verdict["reasons"])
    if verdict["better"]:
        assert summary["policy_path"] == summary["model_dir"] and "Use it:" in report
    else:
        assert summary["policy_path"] is None and "Keep the shipped default" in report


def test_train_synth_hard_writes_span_tasks_from_documentation(docs_index, tmp_path):
    out = tmp_path / "tasks.jsonl"
    res = CliRunner().invoke(
        app,
        [
            "train",
            "synth",
            "-c",
            "docs",
            "--data-dir",
            str(docs_index.config.data_dir),
            "--generator",
            "hard",
            "--n",
            "3",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    body = json.loads(res.stdout)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert body["written"] == len(rows) == 3 and {r["meta"]["generator"] for r in rows} == {"hard"}
    assert any(r.get("gold_spans") for r in rows)


def test_one_vocabulary_of_flags():
    """`train all`, `synth`, `sft` and `rl` name the same knobs alike; the old spellings are hidden aliases."""
    import typing

    import typer.main

    train = typer.main.get_command(app).commands["train"]

    def options(command: str, hidden: bool = False) -> dict:
        return {
            o: p for p in train.commands[command].params if bool(getattr(p, "hidden", False)) == hidden for o in p.opts
        }

    shared = {"--n": int, "--minutes": float, "--steps": int, "--init": str}
    for command in ("all", "sft", "rl"):
        opts = options(command)
        hints = typing.get_type_hints(train.commands[command].callback)
        for flag, kind in shared.items():
            assert flag in opts, (command, flag)
            assert kind in (hints[opts[flag].name], *typing.get_args(hints[opts[flag].name])), (command, flag)
        assert opts["--init"].default == "default", command  # retraining starts from the shipped checkpoint
        assert opts["--minutes"].default is None and opts["--steps"].default is None, command  # configs decide
    assert "--n" in options("synth")
    rl = options("rl")  # knobs whose default differs by route: unset on the CLI, so each config's default holds
    assert all(rl[f].default is None for f in ("--questions", "--num-generations", "--lr", "--epochs", "--n", "--out"))
    old = {"--n-tasks", "--rl-steps", "--rl-minutes", "--model-path", "--limit"}
    for command in ("all", "sft", "rl"):
        assert not old & set(options(command)), command
    assert not (old - {"--model-path"}) & set(options("synth"))  # synth's --model-path: the task writer's model
    assert set(options("all", hidden=True)) == {"--n-tasks", "--rl-steps", "--rl-minutes", "--model-path"}
    assert set(options("rl", hidden=True)) == set(options("sft", hidden=True)) == {"--model-path", "--limit"}


def test_step_caps_never_cut_a_time_budget_short():
    from sieve.train.learned.config import DEFAULT_UPDATES, LearnedRLConfig
    from sieve.train.llm.rl import DEFAULT_STEPS, RLConfig

    assert LearnedRLConfig().step_cap == DEFAULT_UPDATES and LearnedRLConfig().init == "default"
    assert LearnedRLConfig(minutes=10).step_cap is None  # the time budget alone ends the run
    assert LearnedRLConfig(minutes=10, steps=50).step_cap == 50
    assert RLConfig().step_cap == DEFAULT_STEPS and RLConfig(steps=7, minutes=1).step_cap == 7
    assert RLConfig(minutes=10).step_cap >= 100_000


def test_time_budget_callback_stops_and_anneals_over_the_budget(monkeypatch):
    from types import SimpleNamespace

    import sieve.train.llm.rl as rl

    clock = [100.0]
    monkeypatch.setattr(rl.time, "perf_counter", lambda: clock[0])
    cb = rl.time_limit_callback(60.0, anneal=True)
    state, control = SimpleNamespace(global_step=3, max_steps=1_000_000), SimpleNamespace(should_training_stop=False)
    clock[0] += 20.0  # 3 steps in 20 s of a 60 s budget: the budget ends near step 9
    cb.on_step_end(None, state, control)
    assert state.max_steps == 9 and not control.should_training_stop and not cb.stopped_by_time
    clock[0] += 41.0
    cb.on_step_end(None, state, control)
    assert control.should_training_stop and cb.stopped_by_time


def test_the_ranker_is_kept_unless_retraining_is_asked_for(abstracts_corpus, tmp_path):
    from sieve.core.errors import InvalidInput
    from sieve.train.pipeline import PipelineConfig

    assert PipelineConfig(corpus=abstracts_corpus).ranker == "keep"  # synthetic tasks alone do not move the ranker
    with pytest.raises(InvalidInput, match="ranker"):
        PipelineConfig(corpus=abstracts_corpus, ranker="always")  # type: ignore[arg-type]
    res = CliRunner().invoke(
        app, ["train", "all", "--corpus", str(abstracts_corpus), "--ranker", "always", "--out", str(tmp_path / "x")]
    )
    assert res.exit_code == 2 and "--ranker" in res.output and not (tmp_path / "x").exists()
