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


def test_synth_on_text_the_template_writer_cannot_read_fails_clearly_and_leaves_nothing(
        abstracts_index, session_data_dir, tmp_path):
    """Scientific abstracts give the template writer no facts or title links: a clear error, no empty file."""
    out = tmp_path / "tasks.jsonl"
    res = CliRunner().invoke(app, ["train", "synth", "-c", "abstracts", "--data-dir", str(session_data_dir),
                                   "--n", "5", "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert "Expected synthesized tasks from collection 'abstracts', got none" in res.stderr
    assert "--generator claims" in res.stderr and "--generator local|openai" in res.stderr
    assert not out.exists()


def test_train_all_fills_up_with_claims_where_templates_find_nothing(abstracts_corpus, tmp_path):
    """`train all` (generator auto) on abstracts: the template writer writes none, the claims writer fills
    up, and the learned policy trains and is reported on them; --generator heuristic alone fails clearly."""
    base = ["train", "all", "--corpus", str(abstracts_corpus), "-c", "abs", "--data-dir", str(tmp_path / "data"),
            "--n-tasks", "4", "--rl-steps", "2", "--json"]
    res = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "heur"), "--generator", "heuristic"])
    assert res.exit_code == 2 and "--generator claims" in res.stdout, res.output  # --json: the error is JSON on stdout
    res = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "auto")])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in (tmp_path / "auto" / "tasks.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and {r["meta"]["generator"] for r in rows} == {"claims"}
    body = json.loads(res.stdout[res.stdout.index("{"):])
    assert body["config"]["generator"] == "auto" and body["rl"]["updates"] == 2
