"""``sieve train`` through Typer's runner on the shared sample index."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from sieve.server.cli import app


def test_train_synth_json(sample_index, session_data_dir, tmp_path):
    out = tmp_path / "tasks.jsonl"
    res = CliRunner().invoke(app, ["train", "synth", "-c", "sample", "--data-dir", str(session_data_dir), "--n", "2",
                                   "--seed", "5", "--out", str(out), "--json"])
    assert res.exit_code == 0, res.output
    body = json.loads(res.stdout[res.stdout.index("{"):])
    assert body["written"] == 2 and body["existing"] == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and all(r["meta"]["seed"] == 5 for r in rows)


def test_train_errors_are_one_line(sample_index, session_data_dir, tmp_path):
    runner = CliRunner()
    res = runner.invoke(app, ["train", "synth", "-c", "sample", "--data-dir", str(session_data_dir),
                              "--generator", "magic", "--out", str(tmp_path / "t.jsonl")])
    assert res.exit_code == 2 and "Expected --generator" in res.stderr
    res = runner.invoke(app, ["train", "synth", "-c", "nope", "--data-dir", str(session_data_dir),
                              "--out", str(tmp_path / "t.jsonl")])
    assert res.exit_code == 2 and "unknown_collection" in res.stderr
    res = runner.invoke(app, ["train", "rl", "--tasks", str(tmp_path / "missing.jsonl"), "-c", "sample",
                              "--data-dir", str(session_data_dir)])
    assert res.exit_code == 2 and "Expected a tasks JSONL file" in res.stderr
    res = runner.invoke(app, ["train", "rl", "--tasks", "data/sample/tasks.jsonl", "-c", "sample",
                              "--data-dir", str(session_data_dir), "--num-generations", "1"])
    assert res.exit_code == 2 and "num_generations >= 2" in res.stderr
    res = runner.invoke(app, ["train", "rl", "--tasks", "data/sample/tasks.jsonl", "-c", "sample", "--policy", "llm",
                              "--data-dir", str(session_data_dir), "--init", "none"])
    assert res.exit_code == 2 and "a fresh network is the learned policy's option" in res.stderr


def test_sft_and_rl_share_one_episode_definition():
    from dataclasses import asdict

    import typer.main

    from sieve.train.config import EpisodeConfig
    from sieve.train.rl import RLConfig
    from sieve.train.sft import WarmStartConfig

    names = {"budget_tokens", "max_turns", "max_new_tokens", "search_k", "search_tokens"}
    train = typer.main.get_command(app).commands["train"]

    def flags(command: str) -> dict:
        return {p.name: p.default for p in train.commands[command].params if p.name in names}

    expected = {n: v for n, v in asdict(EpisodeConfig()).items() if n in names}
    assert flags("sft") == flags("rl") == expected
    assert RLConfig().episode == WarmStartConfig().episode == EpisodeConfig()


def test_synth_on_text_the_template_writer_cannot_read_fails_clearly_and_leaves_nothing(
        abstracts_index, session_data_dir, tmp_path):
    """Scientific abstracts give the template writer no facts or title links: a clear error, no empty file."""
    out = tmp_path / "tasks.jsonl"
    res = CliRunner().invoke(app, ["train", "synth", "-c", "abstracts", "--data-dir", str(session_data_dir),
                                   "--n", "5", "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert "Expected synthesized tasks from collection 'abstracts', got none" in res.stderr
    assert "(6 chunks tried," in res.stderr  # each of the 6 chunks once, though two passes visit them
    assert "--generator claims" in res.stderr and "--generator local|openai" in res.stderr
    assert not out.exists()


def test_train_all_fills_up_with_claims_where_templates_find_nothing(abstracts_corpus, tmp_path):
    """`train all` (generator auto) on abstracts: the template writer writes none, the claims writer fills
    up, and the learned policy trains and is reported on them; --generator heuristic alone fails clearly.
    summary.json and report.md tell the same story (counts, figures, verdict), and so does rl/summary.json."""
    base = ["train", "all", "--corpus", str(abstracts_corpus), "-c", "abs", "--data-dir", str(tmp_path / "data"),
            "--json"]
    res = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "heur"), "--generator", "heuristic",
                                   "--n-tasks", "4", "--rl-steps", "2"])  # the old spellings still work, and warn
    assert res.exit_code == 2 and "--generator claims" in res.stdout, res.output  # --json: the error is JSON on stdout
    assert "--n-tasks is deprecated; use --n" in res.stderr and "--rl-steps is deprecated; use --steps" in res.stderr
    out = tmp_path / "auto"
    labelled = tmp_path / "questions.jsonl"  # real questions of the corpus: they decide the verdict
    labelled.write_text("".join(json.dumps({"id": f"q{i}", "question": q, "gold_ids": [g]}) + "\n" for i, (q, g) in
                                enumerate([("Does fibre supplementation prevent colon polyps from coming back?", "a1"),
                                           ("Which gut bacteria predict who responds to PD-1 blockade?", "a4"),
                                           ("Can walking enlarge the hippocampus of elderly people?", "a5")])))
    res = CliRunner().invoke(app, [*base, "--out", str(out), "--n", "4", "--steps", "2", "--eval-tasks", str(labelled)])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and {r["meta"]["generator"] for r in rows} == {"claims"}
    body = json.loads(res.stdout[res.stdout.index("{"):])
    assert body["config"]["generator"] == "auto" and body["rl"]["updates"] == 2
    assert body["rl"]["stopped_by"] == "steps" and body["config"]["init"] == "default"

    summary = json.loads((out / "summary.json").read_text())
    rl_summary = json.loads((out / "rl" / "summary.json").read_text())
    report = (out / "report.md").read_text()
    n_held = len((out / "heldout_tasks.jsonl").read_text().splitlines())
    assert summary == json.loads(json.dumps(body, default=str))
    assert n_held >= 1 and summary["n_heldout"] == rl_summary["n_heldout"] == n_held
    assert f"{summary['n_train']} train, {n_held} held out" in report
    held = summary["evals"]["held-apart synthesized tasks"]
    for name, r in held.items():
        assert f"| {name} | {r['n']} | {r['recall']:.3f} | {r['all_gold']:.3f} |" in report
    assert held["learned (retrained)"] == rl_summary["heldout_end"]
    assert held["learned (shipped)"] == rl_summary["heldout_start"]  # --init default: the start is the shipped one
    real = summary["evals"]["labelled questions (--eval-tasks)"]
    assert summary["n_eval_tasks"] == 3 and {r["n"] for r in real.values()} == {3}
    assert set(real) == set(held) == {"heuristic", "learned (shipped)", "learned (retrained)"}
    verdict = summary["verdict"]
    assert verdict["deciding_set"] == "labelled questions (--eval-tasks)" and verdict["rule"] in report
    assert [s["name"] for s in verdict["sets"]] == list(summary["evals"])
    assert all(reason in report for reason in verdict["reasons"])
    if verdict["better"]:
        assert summary["policy_path"] == summary["model_dir"] and "Use it:" in report
    else:
        assert summary["policy_path"] is None and "Keep the shipped default" in report


def test_one_vocabulary_of_flags():
    """`train all`, `synth`, `sft` and `rl` name the same knobs alike; the old spellings are hidden aliases."""
    import typing

    import typer.main

    train = typer.main.get_command(app).commands["train"]

    def options(command: str, hidden: bool = False) -> dict:
        return {o: p for p in train.commands[command].params if bool(getattr(p, "hidden", False)) == hidden
                for o in p.opts}

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
    assert all(rl[f].default is None for f in ("--questions", "--num-generations", "--lr", "--epochs", "--n"))
    old = {"--n-tasks", "--rl-steps", "--rl-minutes", "--model-path", "--limit"}
    for command in ("all", "sft", "rl"):
        assert not old & set(options(command)), command
    assert not (old - {"--model-path"}) & set(options("synth"))  # synth's --model-path: the task writer's model
    assert set(options("all", hidden=True)) == {"--n-tasks", "--rl-steps", "--rl-minutes", "--model-path"}
    assert set(options("rl", hidden=True)) == set(options("sft", hidden=True)) == {"--model-path", "--limit"}


def test_step_caps_never_cut_a_time_budget_short():
    from sieve.train.learned.trainer import DEFAULT_UPDATES, LearnedRLConfig
    from sieve.train.rl import DEFAULT_STEPS, RLConfig

    assert LearnedRLConfig().update_cap == DEFAULT_UPDATES and LearnedRLConfig().init == "default"
    assert LearnedRLConfig(minutes=10).update_cap is None  # the time budget alone ends the run
    assert LearnedRLConfig(minutes=10, updates=50).update_cap == 50
    assert RLConfig().step_cap == DEFAULT_STEPS and RLConfig(max_steps=7, minutes=1).step_cap == 7
    assert RLConfig(minutes=10).step_cap >= 100_000


def test_time_budget_callback_stops_and_anneals_over_the_budget(monkeypatch):
    from types import SimpleNamespace

    import sieve.train.rl as rl

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
