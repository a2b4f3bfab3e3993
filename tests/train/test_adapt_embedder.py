"""Adapting the embedder for real: pairs mined from a small docs collection, a few CPU steps of
sentence-transformers on the real MiniLM, its ONNX export, the verdict, and `sieve eval --embedder` on the
adapted model in a `sieve` process of its own (which indexes its own cached copy of the set with it)."""

from __future__ import annotations

import json
import os
import subprocess
from functools import partial
from pathlib import Path

import pytest

from _docs_pages import TOPICS, docs_page
from _server_process import sieve_command

from sieve.core.errors import InvalidInput
from sieve.eval.runner import agent_recall_per_task
from sieve.retriever import CorpusIndex, Document, RetrieverConfig
from sieve.retriever.types import Chunk
from sieve.train.adapt_embedder import AdaptConfig, adapt, split_pairs
from sieve.train.weak_pairs import WeakPair


@pytest.fixture(scope="module")
def docs() -> list[Document]:
    return [Document(f"{t}.md", docs_page(t), title=t.title()) for t in TOPICS]


@pytest.fixture(scope="module")
def eval_dir(tmp_path_factory: pytest.TempPathFactory, docs: list[Document]) -> Path:
    d = tmp_path_factory.mktemp("docs-eval")
    (d / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": x.doc_id, "title": x.title, "text": x.text}) + "\n" for x in docs), encoding="utf-8"
    )
    tasks = [
        {"id": f"t{i}", "question": f"what should I check when {t} breaks?", "gold_ids": [f"{t}.md"]}
        for i, t in enumerate(TOPICS[:4])
    ]
    (d / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    return d


@pytest.fixture(scope="module")
def adapted_run(
    tmp_path_factory: pytest.TempPathFactory, embedder, docs, eval_dir
) -> tuple[Path, dict, RetrieverConfig]:
    data = tmp_path_factory.mktemp("adapt-data")
    rc = RetrieverConfig(data_dir=data, model_dir=data / "models")
    index = CorpusIndex.open(rc, "docs", create=True, embedder=embedder)
    index.writer.index_documents(docs, progress=False)
    cfg = AdaptConfig(batch_size=4, max_seq_length=64, max_pairs=16, minutes=2, holdout=0.2, filter_trivial=False)
    out = data / "run"
    scorer = partial(agent_recall_per_task, progress=False)
    result = adapt(index, cfg, out, rc, eval_data=eval_dir, score_tasks=scorer, progress=False)
    return out, result, rc


def test_adapt_trains_saves_and_judges(adapted_run, embedder, eval_dir):
    from sieve.retriever.embeddings import Embedder

    out, result, rc = adapted_run
    assert (out / "embedder" / "modules.json").is_file()
    # the run folder holds the model, the pairs, the eval reports and the summary: no trainer scratch
    assert sorted(p.name for p in out.iterdir()) == [
        "embedder",
        "eval-adapted",
        "eval-shipped",
        "heldout_pairs.jsonl",
        "summary.json",
        "train_pairs.jsonl",
    ]
    assert result["training"]["steps"] >= 1 and result["pairs"]["train"] <= 16
    assert result["pairs"]["hard_negatives"] >= 1
    held = [json.loads(x) for x in (out / "heldout_pairs.jsonl").read_text().splitlines()]
    trained = [json.loads(x) for x in (out / "train_pairs.jsonl").read_text().splitlines()]
    # held-apart pairs ask for chunks never trained on as a positive
    assert held and not {p["positive_id"] for p in held} & {p["positive_id"] for p in trained}
    names = [s["set"] for s in result["sets"]]
    assert names == ["held-apart pairs", f"--eval-data {eval_dir.name}"]
    assert result["deciding_set"] == names[-1]
    assert result["better"] == (result["sets"][-1]["better"] and not any(s["worse"] for s in result["sets"]))
    # the weights moved, and the ONNX backend loads the saved folder (it was exported by adapt)
    adapted = Embedder.from_config(
        RetrieverConfig(data_dir=rc.data_dir, model_dir=rc.model_dir, embedder_path=result["embedder"])
    )
    assert adapted.identity.fingerprint != embedder.identity.fingerprint
    text = ["The settings of caching cover case number 1 in detail."]
    cos = float(adapted.embed_passages(text)[0] @ embedder.embed_passages(text)[0])
    assert 0.5 < cos < 0.99999


def test_sieve_eval_scores_the_adapted_embedder_on_its_own_copy(adapted_run, eval_dir, tmp_path):
    out, result, rc = adapted_run
    env = {
        **os.environ,
        "SIEVE_DATA_DIR": str(rc.data_dir),
        "SIEVE_MODEL_DIR": str(rc.model_dir),
        "HF_HUB_OFFLINE": "1",
    }
    cmd = [*sieve_command(), "eval", "--data", str(eval_dir), "--systems", "hybrid", "--k", "5"]
    cmd += ["--no-exports", "--no-plots", "--out", str(tmp_path / "report"), "--embedder", result["embedder"], "--json"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(x) for x in (tmp_path / "report" / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(r["system"] == "hybrid" for r in rows)
    # its own cached copy: a collection named for the adapted model's content, never the shipped one's cache
    from sieve.eval.data import collection_name, load_sets

    sets, _ = load_sets([eval_dir])
    shipped = collection_name(sets, RetrieverConfig(data_dir=rc.data_dir, model_dir=rc.model_dir))
    adapted = collection_name(
        sets, RetrieverConfig(data_dir=rc.data_dir, model_dir=rc.model_dir, embedder_path=result["embedder"])
    )
    assert shipped != adapted
    assert (
        CorpusIndex.open(
            RetrieverConfig(data_dir=rc.data_dir, model_dir=rc.model_dir, embedder_path=result["embedder"]), adapted
        ).count()
        > 0
    )


def test_the_shipped_side_reads_the_collections_own_vectors(tmp_path, embedder, docs):
    from sieve.retriever.types import passage_text
    from sieve.train.adapt_embedder import stored_vectors
    from sieve.train.task_io import all_chunks

    index = CorpusIndex.open(RetrieverConfig(data_dir=tmp_path), "own", create=True, embedder=embedder)
    index.writer.index_documents(docs[:2], progress=False)
    chunks = all_chunks(index)
    stored = stored_vectors(index, chunks, page=3)  # several pages, in order
    fresh = embedder.embed_passages([passage_text(c.title, c.text, c.heading_path) for c in chunks])
    assert stored.shape == fresh.shape and (stored * fresh).sum(axis=1).min() > 0.9999
    ghost = Chunk("ghost.md#0", "ghost.md", 0, "never stored")
    assert stored_vectors(index, [*chunks, ghost]) is None


def test_split_is_by_chunk_and_bad_settings_are_refused():
    pairs = [WeakPair("heading", f"q{i}", f"doc{i % 5}.md#{i % 10}", "passage " * 20) for i in range(20)]
    train, held = split_pairs(pairs, 0.2, seed=0)
    assert len(held) == 4 and len({p.positive_id for p in held}) == 2  # two chunks, both of their pairs
    assert not {p.positive_id for p in train} & {p.positive_id for p in held}
    with pytest.raises(InvalidInput, match="pair kinds"):
        AdaptConfig(kinds=("headings",))
    with pytest.raises(InvalidInput, match="holdout"):
        AdaptConfig(holdout=1.5)


def test_too_few_pairs_is_a_clear_error(tmp_path, embedder):
    rc = RetrieverConfig(data_dir=tmp_path)
    index = CorpusIndex.open(rc, "tiny", create=True, embedder=embedder)
    index.writer.index_documents([Document("a", "One short note.")], progress=False)
    with pytest.raises(InvalidInput, match="usable pairs"):
        adapt(index, AdaptConfig(), tmp_path / "run", rc, progress=False)
    assert not (tmp_path / "run").exists()  # a refused run leaves nothing behind
