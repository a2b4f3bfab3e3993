"""Smoke tests of ``sieve index``, ``sieve retrieve`` and ``sieve collections`` through Typer's CliRunner."""

from __future__ import annotations

import json


def test_index_retrieve_list_delete(run, sample_dir):
    res = run("index", str(sample_dir / "docs"), "--collection", "cli-docs", "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert [s["where"] for s in report["skipped"]] == [str(sample_dir / "docs" / "latin1-note.txt")]
    assert "UTF-8" in report["skipped"][0]["reason"]
    assert report["added"] == report["documents"] == 3 and report["files_read"] == 4
    assert report["chunks_written"] > 0

    again = json.loads(run("index", str(sample_dir / "docs"), "-c", "cli-docs", "--json").stdout)
    assert (again["unchanged"], again["chunks_written"]) == (3, 0)

    res = run("retrieve", "How does pruning work?", "-k", "3", "--mode", "hybrid", "-c", "cli-docs", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert (out["mode"], out["collection"]) == ("hybrid", "cli-docs")
    assert [r["rank"] for r in out["results"]] == [1, 2, 3]
    assert {r["doc_id"] for r in out["results"]} <= {"faq.txt", "glossary.html", "sieve-overview.md"}
    assert all(r["id"].startswith(r["doc_id"] + "#") and r["text"] for r in out["results"])

    before = run("retrieve", "pruning", "-k", "3", "--mode", "bm25", "-c", "cli-docs", "--json").stdout
    merged = run("index", "--optimize", "-c", "cli-docs", "--json")
    assert merged.exit_code == 0 and json.loads(merged.stdout)["bm25_segments_merged"] == 1, merged.output
    assert run("retrieve", "pruning", "-k", "3", "--mode", "bm25", "-c", "cli-docs", "--json").stdout == before
    assert run("index", "-c", "cli-docs").exit_code == 2  # neither PATH nor --optimize

    table = run("retrieve", "pruning", "-k", "2", "--mode", "bm25", "-c", "cli-docs")
    assert table.exit_code == 0 and "bm25 results for: pruning" in table.stdout

    listed = json.loads(run("collections", "--json").stdout)
    assert listed == [{"name": "cli-docs", "chunks": report["chunks_written"]}]
    assert "cli-docs" in run("collections").stdout

    res = run("collections", "--delete", "cli-docs", "--yes")
    assert res.exit_code == 0 and "Deleted cli-docs" in res.stdout
    assert json.loads(run("collections", "--json").stdout) == []


def test_errors_are_one_line_and_exit_2(run, sample_dir):
    res = run("retrieve", "anything", "-c", "never-made")
    assert res.exit_code == 2 and "unknown_collection" in res.stderr and "Traceback" not in res.output
    res = run("collections", "--delete", "never-made", "--yes")
    assert res.exit_code == 2 and "unknown_collection" in res.stderr
    res = run("collections", "--delete", "never-made", "--json")  # no question asked for what is not there
    assert res.exit_code == 2 and "unknown_collection" in res.stdout and "Delete collection" not in res.output
    run("index", str(sample_dir / "docs" / "faq.txt"), "-c", "cli-one", "--json")
    res = run("retrieve", "anything", "-c", "cli-one", "--mode", "sparse")
    assert res.exit_code == 2 and "invalid_input" in res.stderr
    res = run("retrieve", "anything", "-c", "cli-one", "-k", "0")
    assert res.exit_code == 2 and "k between" in res.stderr
    for command in ("search", "retrieve"):  # one cap on k, the server's too (SIEVE_MAX_REQUEST_K)
        res = run(command, "anything", "-c", "cli-one", "-k", "100000")
        assert res.exit_code == 2 and "k between 1 and 100" in res.stderr, (command, res.stderr)
    res = run("collections", "--delete", "cli-one", "--json")  # no terminal to ask on, and no --yes
    assert res.exit_code == 2 and "Expected --yes" in res.stdout
    assert "cli-one" in run("collections").stdout
