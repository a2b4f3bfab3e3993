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


ABSTRACTS = [
    ("Microglial activation after ischemic stroke in aged mice",
     "Microglia respond within hours of an ischemic insult. We measured activation markers in aged and young mice "
     "and found a delayed but prolonged response in the aged group, which correlated with larger infarct volumes."),
    ("Dietary fibre intake and colorectal adenoma recurrence",
     "Higher fibre intake has been linked to lower adenoma recurrence in observational cohorts. In this randomised "
     "trial the intervention did not reduce recurrence over three years of follow-up."),
    ("Statin therapy modulates endothelial nitric oxide synthase expression",
     "Statins raise endothelial nitric oxide synthase levels in cultured cells. Here the effect depended on "
     "geranylgeranyl pyrophosphate depletion and was abolished by mevalonate supplementation."),
    ("Sleep restriction impairs glucose tolerance in healthy adults",
     "Five nights of restricted sleep lowered insulin sensitivity by a fifth in healthy volunteers, an effect that "
     "reversed after two nights of recovery sleep."),
]


def test_synth_on_text_the_template_writer_cannot_read_fails_clearly_and_leaves_nothing(
        session_data_dir, embedder, tmp_path):
    """Scientific abstracts give the template writer no facts or title links: a clear error, no empty file."""
    from sieve.retriever import CorpusIndex, RetrieverConfig

    corpus = tmp_path / "abstracts.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"a{i}", "title": t, "text": x}) + "\n"
                              for i, (t, x) in enumerate(ABSTRACTS)), encoding="utf-8")
    index = CorpusIndex.open(RetrieverConfig(data_dir=session_data_dir), "abstracts", create=True, embedder=embedder)
    index.index_path(corpus, progress=False)
    out = tmp_path / "tasks.jsonl"
    res = CliRunner().invoke(app, ["train", "synth", "-c", "abstracts", "--data-dir", str(session_data_dir),
                                   "--n", "5", "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert "Expected synthesized tasks from collection 'abstracts', got none" in res.stderr
    assert "--generator local|openai" in res.stderr
    assert not out.exists()
