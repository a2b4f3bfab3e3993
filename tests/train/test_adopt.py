"""One retrained artifact: `sieve train all` with the embedder stage writes a run folder that `sieve adopt`
switches a collection to (re-embedding it into a new version), that `sieve search` then uses with no flag,
and that `sieve eval --policy-path RUN` scores on a cached copy embedded with the run's embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _docs_pages import TOPICS, docs_page, nudged_minilm
from typer.testing import CliRunner

from sieve.cli.main import app
from sieve.core.errors import InvalidInput
from sieve.retriever import CorpusIndex, RetrieverConfig
from sieve.retriever.store import list_collections
from sieve.core.runs import RunArtifact


@pytest.fixture(scope="module")
def docs_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("docs-folder")
    for t in TOPICS:
        (folder / f"{t}.md").write_text(docs_page(t), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def other_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return nudged_minilm(tmp_path_factory.mktemp("nudged") / "model")


def _run(folder: Path, embedder: Path | None) -> RunArtifact:
    """A hand-made run: the shipped policy's checkpoint copied in as its policy, and ``embedder``."""
    import shutil

    from sieve.agent.policies.learned.policy import default_checkpoint

    shutil.copytree(default_checkpoint(), folder / "policy")
    run = RunArtifact(folder, policy=folder / "policy", embedder=embedder, verdict={"note": "hand-made for the test"})
    run.save()
    return run


def test_adopt_switches_the_collection_and_commands_follow_it(tmp_path, embedder, docs_folder, other_model):
    rc = RetrieverConfig(data_dir=tmp_path / "data")
    index = CorpusIndex.open(rc, "docs", create=True, embedder=embedder)
    index.writer.index_path(docs_folder, progress=False)
    n = index.count()
    run = _run(tmp_path / "run", other_model)
    args = ["--data-dir", str(rc.data_dir)]
    question = "what should I check first when caching breaks?"

    # not adopted yet: a run with an adapted embedder cannot serve over the shipped vectors
    res = CliRunner().invoke(app, ["search", question, "-c", "docs", "--policy-path", str(run.folder), *args])
    assert res.exit_code == 2 and "sieve adopt" in res.output, res.output

    res = CliRunner().invoke(app, ["adopt", str(run.folder), "-c", "docs", "--json", *args])
    assert res.exit_code == 0, res.output
    body = json.loads(res.stdout)
    assert body["switch"]["old"] == "docs" and body["switch"]["new"] == "docs--v2" and body["switch"]["chunks"] == n
    adopted = CorpusIndex.open(rc, "docs")
    assert adopted.store.name == "docs--v2" and adopted.recorded_run == str(run.folder.resolve())
    assert adopted.embedded_with(other_model) and list_collections(rc) == {"docs": n}

    # no flag: the collection's run serves (its embedder followed from the collection's stamp)
    res = CliRunner().invoke(app, ["search", question, "-c", "docs", "--json", "-q", *args])
    assert res.exit_code == 0, res.output
    found = json.loads(res.stdout)["results"]
    assert found and found[0]["doc_id"].startswith("caching")
    from sieve.agent import AgentConfig
    from sieve.agent.factory import adopted_config
    from sieve.agent.policies.learned import LearnedPolicy

    config = adopted_config(adopted, AgentConfig())
    assert config.policy_path == run.folder.resolve()  # what SearchAgent.with_policy and the server build from
    assert LearnedPolicy.load(config.policy_path).path == run.policy  # the run's own checkpoint
    assert adopted_config(adopted, AgentConfig(policy_path=Path("/elsewhere"))).policy_path == Path("/elsewhere")

    # adopting again changes nothing more: the vectors are already the run's
    res = CliRunner().invoke(app, ["adopt", str(run.folder), "-c", "docs", "--json", *args])
    assert res.exit_code == 0 and json.loads(res.stdout)["switch"] is None, res.output
    res = CliRunner().invoke(app, ["collections", "--drop-old", "docs", *args])
    assert res.exit_code == 0 and "Dropped docs" in res.output, res.output
    assert CorpusIndex.open(rc, "docs").store.name == "docs--v2"

    # a run that kept the shipped embedder is only recorded
    shipped = _run(tmp_path / "run-shipped", None)
    other = CorpusIndex.open(rc, "notes", create=True, embedder=embedder)
    other.writer.index_path(docs_folder, progress=False)
    res = CliRunner().invoke(app, ["adopt", str(shipped.folder), "-c", "notes", "--json", *args])
    assert res.exit_code == 0 and json.loads(res.stdout)["switch"] is None, res.output
    assert CorpusIndex.open(rc, "notes").recorded_run == str(shipped.folder.resolve())


def test_a_folder_that_is_not_a_run_is_refused(tmp_path):
    (tmp_path / "run.json").write_text('{"format": "something-else"}')
    with pytest.raises(InvalidInput, match="sieve-run/1"):
        RunArtifact.load(tmp_path)
    with pytest.raises(InvalidInput, match="run folder"):
        RunArtifact.load(tmp_path / "missing")
    (tmp_path / "run.json").write_text(json.dumps({"format": "sieve-run/1", "embedder": "gone"}))
    with pytest.raises(InvalidInput, match="embedder folder"):
        RunArtifact.load(tmp_path)


def test_sieve_eval_scores_a_run_on_its_own_copy(tmp_path, docs_folder, other_model, model_cache_dir):
    data = tmp_path / "set"
    data.mkdir()
    (data / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": f"{t}.md", "title": t.title(), "text": docs_page(t)}) + "\n" for t in TOPICS),
        encoding="utf-8",
    )
    (data / "tasks.jsonl").write_text(
        "".join(
            json.dumps({"id": f"q{i}", "question": f"what breaks {t}?", "gold_ids": [f"{t}.md"]}) + "\n"
            for i, t in enumerate(TOPICS[:3])
        ),
        encoding="utf-8",
    )
    run = _run(tmp_path / "run", other_model)
    common = ["eval", "--data", str(data), "--systems", "hybrid,agent", "--k", "5", "--no-exports", "--no-plots"]
    common += ["--data-dir", str(tmp_path / "d"), "--json"]
    shipped = CliRunner().invoke(app, [*common, "--out", str(tmp_path / "r1")])
    retrained = CliRunner().invoke(app, [*common, "--out", str(tmp_path / "r2"), "--policy-path", str(run.folder)])
    assert shipped.exit_code == 0 and retrained.exit_code == 0, (shipped.output, retrained.output)
    meta = [json.loads((tmp_path / r / "summary.json").read_text())["meta"] for r in ("r1", "r2")]
    assert meta[0]["collection"] != meta[1]["collection"]  # the run's embedder: a cached copy of its own
    assert meta[1]["policy_path"] == str(run.folder)
    rc = RetrieverConfig(data_dir=tmp_path / "d")
    assert CorpusIndex.open(rc, meta[1]["collection"]).embedded_with(other_model)


def test_train_all_adapts_judges_and_writes_one_run(tmp_path, docs_index):
    from sieve.train.adapt_embedder import AdaptConfig
    from sieve.train.pipeline import PipelineConfig, run_pipeline

    corpus = docs_index.config.data_dir.parent / "docs.jsonl"  # Tidewater's docs: varied enough to write tasks from
    rc = RetrieverConfig(data_dir=tmp_path / "data", chunk_tokens=48, chunk_overlap=8)
    cfg = PipelineConfig(
        corpus=corpus,
        collection="docs",
        out=tmp_path / "run",
        n=8,
        steps=1,
        adapt=AdaptConfig(batch_size=4, max_seq_length=64, max_pairs=16, minutes=1, holdout=0.2, filter_trivial=False),
    )
    result = run_pipeline(cfg, rc, progress=False)
    stage = result["embedder"]
    assert stage["pairs"]["train"] > 0 and stage["training"]["steps"] > 0
    assert [s["set"] for s in stage["sets"]] == ["held-apart pairs", "held-apart synthesized tasks"]
    report = (cfg.out / "report.md").read_text()
    assert "## Embedder" in report and stage["reason"] in report
    run_json = json.loads((cfg.out / "run.json").read_text())
    assert run_json["verdict"]["embedder"]["kept"] == stage["kept"]
    current = CorpusIndex.open(rc, "docs")
    if stage["kept"]:  # adopted: the collection serves the adapted version, the run recorded on it
        assert run_json["embedder"] == "adapt/embedder" and current.store.name == "docs--v2"
        assert current.recorded_run == str(cfg.out.resolve()) and result["adopted"]
        assert (
            "held-apart synthesized tasks" in result["served"]
            and "adapted embedder" in result["served"]["held-apart synthesized tasks"]
        )
    else:  # not kept: its version was deleted, the collection is as it was
        assert run_json["embedder"] is None and current.store.name == "docs"
        from sieve.retriever.store import make_client

        assert "docs--v2" not in [c.name for c in make_client(rc).list_collections()]
