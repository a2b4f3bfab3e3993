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
