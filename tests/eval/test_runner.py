"""The runner on the shipped sample: baselines, resumability, exports, pooled corpora and the CLI."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from sieve.core.errors import InvalidInput
from sieve.eval.data import collection_name, load_sets, open_eval_index
from sieve.eval.evaluator import RESULTS_FILE, RetrievalEvaluator, load_results
from sieve.eval.metrics import dedupe
from sieve.eval.runner import EvalConfig, run_eval
from sieve.eval.systems import RetrievalSystem, SystemOutput, parse_systems

QUESTION = "Who directed the film whose screenplay was co-written with Arthur C. Clarke?"


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_baseline_returns_depth_distinct_docs_from_one_search(sample_index, mode):
    out = RetrievalSystem(sample_index, mode, depth=5).run(QUESTION)
    hits = sample_index.search(QUESTION, 15, mode=mode)
    assert out.doc_ids == dedupe(h.doc_id for h in hits)[:5]
    assert len(out.doc_ids) == len(set(out.doc_ids)) == 5
    first_chunk = {}
    for h in hits:
        first_chunk.setdefault(h.doc_id, h.chunk)
    assert out.chunk_ids == [first_chunk[d].chunk_id for d in out.doc_ids]
    assert out.chunk_tokens == [first_chunk[d].n_tokens for d in out.doc_ids]
    assert all(t > 0 for t in out.chunk_tokens)
    assert out.tool_call_counts == {"search": 1} and out.trace is None


def test_parse_systems():
    # `agent` alone is Sieve's one default policy (sieve/core/defaults.py), as in `sieve search`.
    assert parse_systems("dense, hybrid,agent,agent:heuristic") == [
        "dense",
        "hybrid",
        "agent:learned",
        "agent:heuristic",
    ]
    assert parse_systems("agent:heuristic:nofloor,agent") == ["agent:heuristic:nofloor", "agent:learned"]
    for bad in ("sparse", "agent:gpt", "", "agent:heuristic:floorless"):
        with pytest.raises(InvalidInput, match="Expected"):
            parse_systems(bad)


class _ScriptedSystem:
    """A fake system (labelled so): returns fixed doc lists per question, to test the evaluator's bookkeeping."""

    name = "scripted"

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers

    def run(self, question: str) -> SystemOutput:
        docs = self.answers[question]
        return SystemOutput(
            doc_ids=docs,
            chunk_ids=[f"{d}#0" for d in docs],
            scores=[1.0] * len(docs),
            chunk_tokens=[7] * len(docs),
            wall_ms=5.0,
        )


def test_evaluator_keys_and_exact_values(sample_tasks):
    from sieve.eval.data import EvalTask

    tasks = [EvalTask(t["id"], t["question"], tuple(t["gold_ids"]), source="sample") for t in sample_tasks[:2]]
    g0 = tasks[0].gold_ids
    system = _ScriptedSystem({tasks[0].question: [g0[0], "noise", g0[1]], tasks[1].question: ["noise", "more"]})
    ev = RetrievalEvaluator(tasks, ks=[1, 3], name="sample", progress=False)
    m = ev(system)
    assert ev.primary_metric == "sample_recall@3" and ev.greater_is_better
    assert all(k.startswith("sample_") for k in m)
    assert m["sample_recall@1"] == pytest.approx(0.25)  # (1/2 + 0) / 2
    assert m["sample_recall@3"] == pytest.approx(0.5)
    assert m["sample_all_found@3"] == pytest.approx(0.5)
    assert m["sample_precision@3"] == pytest.approx((2 / 3 + 0) / 2)
    assert m["sample_mrr@10"] == pytest.approx(0.5)
    assert m["sample_returned_tokens@3"] == pytest.approx((21 + 14) / 2)
    assert ev.calls == 2


def _config(sample_dir: Path, out: Path, **kw) -> EvalConfig:
    kw.setdefault("systems", ["bm25", "hybrid"])
    kw.setdefault("ks", [2, 5])
    return EvalConfig(data=[sample_dir], out=out, progress=False, **kw)


def _n_lines(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def test_resume_skips_done_pairs(sample_index, sample_dir, tmp_path, counter):
    out = tmp_path / "rep"
    first = counter()
    r1 = run_eval(
        _config(sample_dir, out, limit=3, plots=False), sample_index.config, index=sample_index, system_factory=first
    )
    assert first.calls == {"bm25": 3, "hybrid": 3} and r1.calls == first.calls
    results = out / RESULTS_FILE
    assert _n_lines(results) == 6

    # Same run again: every (system, task) pair is already there, so no system is asked anything.
    again = counter()
    r2 = run_eval(
        _config(sample_dir, out, limit=3, plots=False), sample_index.config, index=sample_index, system_factory=again
    )
    assert again.calls == {"bm25": 0, "hybrid": 0}
    assert _n_lines(results) == 6
    assert r2.metrics == r1.metrics

    # Two more tasks: only they run.
    more = counter()
    run_eval(
        _config(sample_dir, out, limit=5, plots=False), sample_index.config, index=sample_index, system_factory=more
    )
    assert more.calls == {"bm25": 2, "hybrid": 2}

    # A run killed mid-write leaves a torn last line: exactly that task is redone.
    text = results.read_text(encoding="utf-8")
    last = text.rstrip("\n").rsplit("\n", 1)[1]
    torn_system = json.loads(last)["system"]
    results.write_text(text[: len(text) - len(last) // 2 - 1], encoding="utf-8")
    torn = counter()
    run_eval(
        _config(sample_dir, out, limit=5, plots=False), sample_index.config, index=sample_index, system_factory=torn
    )
    assert sum(torn.calls.values()) == 1 and torn.calls[torn_system] == 1

    # A larger k needs deeper lists than the stored rows have: everything is redone.
    deeper = counter()
    run_eval(
        _config(sample_dir, out, limit=5, ks=[2, 8], plots=False),
        sample_index.config,
        index=sample_index,
        system_factory=deeper,
    )
    assert deeper.calls == {"bm25": 5, "hybrid": 5}
    rows = load_results(results)
    assert all(len(r["returned_doc_ids"]) == 8 for r in rows.values() if r["depth"] == 8)


def test_metrics_exports_and_summary(sample_index, sample_dir, tmp_path, sample_tasks):
    out = tmp_path / "rep"
    report = run_eval(
        _config(sample_dir, out, limit=4, systems=["dense", "bm25"]), sample_index.config, index=sample_index
    )
    rows = list(load_results(out / RESULTS_FILE).values())
    assert len(rows) == 8
    gold = {t["id"]: set(t["gold_ids"]) for t in sample_tasks}
    for system in ("dense", "bm25"):
        mine = [r for r in rows if r["system"] == system]
        assert [r["task_id"] for r in mine] == [t["id"] for t in sample_tasks[:4]]
        by_hand = (
            sum(len(set(r["returned_doc_ids"][:5]) & gold[r["task_id"]]) / len(gold[r["task_id"]]) for r in mine) / 4
        )
        assert report.metrics["sample"][system]["recall@5"] == pytest.approx(by_hand)
        assert report.metrics["sample"][system]["n_tasks"] == 4

    # TREC: 6 columns, ranks 1..n, scores strictly decreasing; recall@5 from the files equals ours.
    trec = out / "trec" / "sample"
    qrels: dict[str, set[str]] = {}
    for line in (trec / "qrels.txt").read_text().splitlines():
        qid, zero, doc, rel = line.split()
        assert zero == "0" and rel == "1"
        qrels.setdefault(qid, set()).add(doc)
    assert qrels == {t["id"]: set(t["gold_ids"]) for t in sample_tasks[:4]}
    run: dict[str, list[tuple[int, float, str]]] = {}
    for line in (trec / "dense.run").read_text().splitlines():
        qid, q0, doc, rank, score, name = line.split()
        assert q0 == "Q0" and name == "dense"
        run.setdefault(qid, []).append((int(rank), float(score), doc))
    for ranked in run.values():
        assert [r for r, _, _ in ranked] == list(range(1, len(ranked) + 1))
        assert all(a[1] > b[1] for a, b in zip(ranked, ranked[1:]))
    from_files = sum(
        len({d for _, _, d in sorted(run[q], key=lambda x: -x[1])[:5]} & qrels[q]) / len(qrels[q]) for q in qrels
    ) / len(qrels)
    assert from_files == pytest.approx(report.metrics["sample"]["dense"]["recall@5"])

    # BrowseComp-Plus: one JSON per query and system with the fields its scorer reads.
    bcp = sorted((out / "bcp" / "sample" / "bm25").glob("*.json"))
    assert [p.stem for p in bcp] == sorted(t["id"] for t in sample_tasks[:4])
    rec = json.loads(bcp[0].read_text())
    assert {"query_id", "tool_call_counts", "status", "retrieved_docids", "result"} <= set(rec)
    assert rec["status"] == "completed" and rec["tool_call_counts"] == {"search": 1}
    assert rec["result"][-1]["type"] == "output_text"
    row = next(r for r in rows if r["system"] == "bm25" and r["task_id"] == rec["query_id"])
    assert rec["retrieved_docids"] == row["returned_doc_ids"]

    summary = json.loads((out / "summary.json").read_text())
    assert summary["metrics"]["sample"]["bm25"]["recall@5"] == report.metrics["sample"]["bm25"]["recall@5"]
    assert summary["primary_metric"] == "sample_recall@5"
    md = (out / "summary.md").read_text()
    assert "| `dense` |" in md and "R@5" in md and "![recall@k on sample](plots/recall_at_k_sample.png)" in md
    for png in ("recall_at_k_sample.png", "recall_vs_tokens_sample.png"):
        assert (out / "plots" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_pooled_corpus_renames_colliding_ids_and_scores_per_source(tiny_dirs, tmp_path, embedder):
    from sieve.retriever import RetrieverConfig

    alpha, beta = tiny_dirs
    sets, maps = load_sets([alpha, beta])
    assert maps == {
        "alpha": {"wiki-stanley-kubrick": "alpha/wiki-stanley-kubrick"},
        "beta": {"wiki-stanley-kubrick": "beta/wiki-stanley-kubrick"},
    }
    assert sets[0].tasks[0].gold_ids == ("wiki-2001-a-space-odyssey", "alpha/wiki-stanley-kubrick")
    assert all(t.source == "beta" for t in sets[1].tasks)

    rcfg = RetrieverConfig(data_dir=tmp_path / "data")
    out = tmp_path / "pooled"
    report = run_eval(
        EvalConfig(data=[alpha, beta], systems=["hybrid"], ks=[2, 5], out=out, progress=False, plots=False),
        rcfg,
        embedder=embedder,
    )
    assert set(report.metrics) == {"alpha", "beta"}
    assert report.metrics["alpha"]["hybrid"]["n_tasks"] == 3 == report.metrics["beta"]["hybrid"]["n_tasks"]
    assert report.meta["pooled"] and report.meta["collection"] == collection_name(sets, rcfg)
    assert set(report.flat["hybrid"]) >= {"alpha_recall@5", "beta_recall@5"}

    index = open_eval_index(sets, maps, rcfg, embedder, progress=False)
    docs = index.documents()
    assert len(docs) == 16 + 17  # one corpus, both sets, the clash kept apart
    assert {"alpha/wiki-stanley-kubrick", "beta/wiki-stanley-kubrick"} <= set(docs)
    assert "wiki-stanley-kubrick" not in docs
    # Opening the cached collection again writes nothing.
    generation = index.store.generation
    open_eval_index(sets, maps, rcfg, embedder, progress=False)
    assert index.store.generation == generation

    rows = load_results(out / RESULTS_FILE)
    assert {src for _, src, _ in rows} == {"alpha", "beta"}
    assert all(set(r["returned_doc_ids"]) <= set(docs) for r in rows.values())
    # A single set gets its own cache, not the pooled one.
    assert collection_name(sets[:1], rcfg) != collection_name(sets, rcfg)
    # The trec/bcp exports are split per source.
    assert (out / "trec" / "alpha" / "hybrid.run").is_file() and (out / "trec" / "beta" / "qrels.txt").is_file()


def test_cli_eval(tiny_dirs, tmp_path):
    from typer.testing import CliRunner

    from sieve.cli.main import app

    alpha, _ = tiny_dirs
    args = [
        "eval",
        "--data",
        str(alpha),
        "--systems",
        "bm25",
        "--k",
        "2,5",
        "--limit",
        "2",
        "--out",
        str(tmp_path / "rep"),
        "--data-dir",
        str(tmp_path / "data"),
        "--json",
        "--no-plots",
    ]
    runner = CliRunner()
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    body = json.loads(res.stdout)
    assert body["calls"] == {"bm25": 2}
    assert 0.0 <= body["metrics"]["alpha"]["bm25"]["recall@5"] <= 1.0
    assert json.loads(runner.invoke(app, args).stdout)["calls"] == {"bm25": 0}

    bad = runner.invoke(app, [*args[:4], "sparse", *args[5:]])
    assert bad.exit_code == 2 and "invalid_input" in bad.output
    bad_k = runner.invoke(app, [*args[:6], "five", *args[7:]])
    assert bad_k.exit_code == 2 and "--k" in bad_k.output


def test_agent_system_on_the_sample(sample_index, sample_dir, tmp_path):
    from sieve.eval.metrics import prune_accuracy as prune_acc

    out = tmp_path / "rep"
    report = run_eval(
        _config(sample_dir, out, limit=2, systems=["agent:heuristic"], plots=False),
        sample_index.config,
        index=sample_index,
    )
    assert report.calls == {"agent:heuristic": 2}
    rows = list(load_results(out / RESULTS_FILE).values())
    assert len(rows) == 2
    for row in rows:
        trace = row["trace"]
        assert trace is not None and trace["question"] == row["question"]
        assert len(row["returned_doc_ids"]) == len(set(row["returned_doc_ids"])) <= 5
        # Everything returned must have been shown to the agent, so trajectory recall bounds recall.
        assert set(row["returned_doc_ids"]) <= set(trace["seen_doc_ids"])
        m = row["metrics"]
        assert m["trajectory_recall"] >= m["recall@5"]
        assert m["prune_accuracy"] == prune_acc(trace["pruned_chunk_ids"], row["gold_ids"])
        n_calls = sum(len(t["tool_calls"]) for t in trace["turns"])
        assert sum(row["tool_call_counts"].values()) == n_calls == m["tool_calls"]
        bcp = json.loads((out / "bcp" / "sample" / "agent-heuristic" / f"{row['task_id']}.json").read_text())
        assert bcp["retrieved_docids"] == list(dict.fromkeys(trace["seen_doc_ids"]))
        assert [r["type"] for r in bcp["result"]] == ["tool_call"] * n_calls + ["output_text"]
    agg = report.metrics["sample"]["agent:heuristic"]
    assert {"trajectory_recall", "searches", "turns", "tokens"} <= set(agg)


def test_eval_warns_when_reporting_on_declared_tuning_data(tiny_dirs, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import sieve.eval.tuning as tuning
    from sieve.cli.main import app

    alpha, beta = tiny_dirs
    manifest = tmp_path / "tuning_sets.json"
    monkeypatch.setattr(tuning, "MANIFEST", manifest)
    assert tuning.tuning_overlap(load_sets([alpha])[0]) == {}  # nothing declared: no warning
    tuning.declare([alpha / "tasks.jsonl"])
    overlap = tuning.tuning_overlap(load_sets([alpha, beta])[0])
    n_alpha = len((alpha / "tasks.jsonl").read_text().splitlines())
    assert overlap == {"alpha": {"tasks": n_alpha, "of": n_alpha, "tuning_sets": ["alpha"]}}  # beta is clean
    # The CLI path of an agent system too (its settings' AgentConfig overrides reach the system).
    res = CliRunner().invoke(
        app,
        [
            "eval",
            "--data",
            str(alpha),
            "--systems",
            "bm25,agent:heuristic:nofloor",
            "--limit",
            "1",
            "--out",
            str(tmp_path / "rep"),
            "--data-dir",
            str(tmp_path / "data"),
            "--json",
            "--no-plots",
        ],
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["calls"] == {"bm25": 1, "agent:heuristic:nofloor": 1}
    assert "1 of 1 tasks of alpha are declared tuning data (alpha)" in res.stderr


def test_span_sets_are_scored_per_chunk(tmp_path, sample_index):
    """A set with gold_spans: every system is asked for chunks and summary.json has span_recall@k."""
    from sieve.eval.data import EvalTask

    chunks = sample_index.get_chunks(["wiki-st-louis#0"])
    assert chunks, "the sample holds the St. Louis page"
    c = chunks[0]
    span = (c.doc_id, c.char_start + 10, min(c.char_end, c.char_start + 200))
    task = EvalTask("t1", "St. Louis city Missouri", (c.doc_id,), source="spans", gold_spans=(span,))
    ev = RetrievalEvaluator([task], ks=[1, 5], name="spans", progress=False)
    assert ev.unit == "chunks" and ev.primary_metric == "spans_span_recall@5"
    m = ev(RetrievalSystem(sample_index, "hybrid", depth=5), tmp_path)
    assert m["spans_span_recall@5"] == 1.0 and m["spans_char_precision@5"] > 0
    row = ev.rows[0]
    assert row["unit"] == "chunks" and len(row["returned_chunk_ids"]) == 5
    assert row["returned_ranges"][0][1] > row["returned_ranges"][0][0]


def test_gold_spans_are_read_and_checked(tmp_path):
    from sieve.eval.data import load_tasks

    good = {"id": "a", "question": "q?", "gold_ids": ["d"], "gold_spans": [{"doc_id": "d", "start": 5, "end": 9}]}
    bad = {"id": "b", "question": "q?", "gold_ids": ["d"], "gold_spans": [{"doc_id": "e", "start": 5, "end": 9}]}
    p = tmp_path / "tasks.jsonl"
    p.write_text(json.dumps(good) + "\n", encoding="utf-8")
    assert load_tasks(p, "s")[0].gold_spans == (("d", 5, 9),)
    p.write_text(json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="gold_ids"):
        load_tasks(p, "s")


def test_agent_system_returns_chunks_with_their_ranges(sample_index):
    """Scored per chunk, the agent returns its k best chunks with the character ranges the span metrics read."""
    from sieve.eval.systems import AgentSystem

    system = AgentSystem(sample_index, "heuristic", depth=5)
    out = system.run(QUESTION, unit="chunks")
    assert out.unit == "chunks" and 0 < len(out.chunk_ids) <= 5
    chunks = {c.chunk_id: c for c in sample_index.get_chunks(out.chunk_ids)}
    assert out.chunk_ranges == [(chunks[c].char_start, chunks[c].char_end) for c in out.chunk_ids]
    assert out.doc_ids == [chunks[c].doc_id for c in out.chunk_ids]
    grouped = system.run(QUESTION)
    assert grouped.unit == "docs" and len(grouped.doc_ids) == len(set(grouped.doc_ids))


def test_agent_set_reaches_a_nested_config_and_names_every_valid_key():
    from sieve.agent import AgentConfig
    from sieve.agent.config import FloorConfig
    from sieve.cli.commands._common import parse_assignments

    got = parse_assignments(["max_turns=3", "floor.fusion_path=f.json", "floor.hybrid_depth=40"], AgentConfig)
    # The nested config is its default with only the named fields replaced.
    assert got == {"max_turns": 3, "floor": replace(FloorConfig(), fusion_path="f.json", hybrid_depth=40)}
    for bad in ("floor.nope=1", "nope=1", "max_turns", "k.x=1"):
        with pytest.raises(InvalidInput, match="valid keys: .*'floor.fusion_path'"):
            parse_assignments([bad], AgentConfig)
