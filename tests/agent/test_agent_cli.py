"""``sieve search`` through Typer's runner, on the shared sample index (real retrieval, the default policy)."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from sieve.core.defaults import DEFAULT_POLICY
from sieve.cli.main import app


def test_search_json_trace_and_step_log(sample_index, session_data_dir, tmp_path):
    out = tmp_path / "traces.jsonl"
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "search",
            "Which city was the Spirit of St. Louis named after?",
            "-c",
            "sample",
            "--data-dir",
            str(session_data_dir),
            "-k",
            "4",
            "--json",
            "--trace",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    body = json.loads(res.stdout[res.stdout.index("{") :])
    assert body["policy"] == DEFAULT_POLICY and len(body["results"]) == 4
    assert [r["rank"] for r in body["results"]] == [1, 2, 3, 4]
    assert "turn 1 > search(" in res.stderr and "done: " in res.stderr  # the step log went to stderr
    trace = json.loads(out.read_text().splitlines()[0])
    assert trace["returned"][0]["chunk_id"] == body["results"][0]["id"]


def test_search_errors_are_one_line(session_data_dir, sample_index):
    runner = CliRunner()
    res = runner.invoke(app, ["search", "q", "-c", "sample", "--data-dir", str(session_data_dir), "--policy", "magic"])
    assert res.exit_code == 2 and "invalid_input" in res.stderr

    res = runner.invoke(app, ["search", "q", "-c", "sample", "--data-dir", str(session_data_dir), "-k", "0"])
    assert res.exit_code == 2 and "Expected positive" in res.stderr


def test_an_llm_policy_without_its_server_exits_non_zero(session_data_dir, sample_index, monkeypatch):
    monkeypatch.delenv("SIEVE_OPENAI_BASE_URL", raising=False)
    runner = CliRunner()
    base = [
        "search",
        "Which city was the Spirit of St. Louis named after?",
        "-c",
        "sample",
        "--data-dir",
        str(session_data_dir),
    ]
    res = runner.invoke(app, [*base, "--policy", "openai"])
    assert res.exit_code != 0 and "Expected SIEVE_OPENAI_BASE_URL" in res.stderr
    # Configured but unreachable (nothing listens on port 9): a backend error, never the floor's results.
    res = runner.invoke(
        app, [*base, "--policy", "openai", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--json"]
    )
    assert res.exit_code != 0 and '"results"' not in res.stdout and "127.0.0.1:9" in res.stderr


def test_search_table_shows_scores(session_data_dir, sample_index):
    res = CliRunner().invoke(
        app,
        [
            "search",
            "Which city was the Spirit of St. Louis named after?",
            "-c",
            "sample",
            "--data-dir",
            str(session_data_dir),
            "-k",
            "3",
            "-q",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "score" in res.stdout and len(re.findall(r"\b0\.\d{4}\b", res.stdout)) >= 3


def test_policy_path_without_the_learned_policy_is_an_error(session_data_dir, sample_index, tmp_path):
    res = CliRunner().invoke(
        app,
        [
            "search",
            "q",
            "-c",
            "sample",
            "--data-dir",
            str(session_data_dir),
            "--policy",
            "heuristic",
            "--policy-path",
            str(tmp_path),
        ],
    )
    assert res.exit_code == 2 and "--policy-path only with the learned policy" in res.stderr


def test_openai_policy_from_the_cli_prints_cited_answer_and_takes_llm_flags(session_data_dir, sample_index, tmp_path):
    """``sieve search --policy openai`` against the SCRIPTED (fake) server of ``tests/_openai_server.py``."""
    from _openai_server import FakeOpenAI, completion

    fake = FakeOpenAI()
    try:
        fake.script = [
            (
                200,
                completion(
                    None,
                    [("functions.search", {"query": "Spirit of St. Louis", "k": 2})],
                    reasoning=("reasoning_content", "Find the plane."),
                ),
                0,
            ),
            (200, completion(None, [("prune", {"ids": ["c2"]})]), 0),
            (200, completion(None, [("finish", {"ids": ["c1"], "answer": "St. Louis [c1] gave its name."})]), 0),
        ]
        base = [
            "search",
            "Which city was the Spirit of St. Louis named after?",
            "-c",
            "sample",
            "--data-dir",
            str(session_data_dir),
            "--policy",
            "openai",
            "--base-url",
            fake.url,
            "--model",
            "m",
            "--reasoning-effort",
            "low",
            "--tool-choice",
            "required",
            "--max-new-tokens",
            "99",
            "--max-tool-calls",
            "5",
            "--max-wall-s",
            "30",
            "--trace",
            str(tmp_path / "t.jsonl"),
        ]
        res = CliRunner().invoke(app, base)
        assert res.exit_code == 0, res.output
        assert "answer: St. Louis [c1] gave its name." in res.stdout  # the citation is not eaten as markup
        trace = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])
        c1 = trace["citations"][0]["chunk_id"]
        assert f"[c1] {c1}" in res.stdout and "thinks: Find the plane." in res.stderr
        assert trace["turns"][0]["reasoning"] == "Find the plane."
        first = fake.requests[0]["body"]
        assert (first["reasoning_effort"], first["tool_choice"], first["max_tokens"]) == ("low", "required", 99)
    finally:
        fake.close()
    helptext = CliRunner().invoke(app, ["search", "--help"], env={"COLUMNS": "200"}).stdout
    for flag in (
        "--reasoning-effort",
        "--tool-choice",
        "--max-new-tokens",
        "--max-tool-calls",
        "--max-wall-s",
        "--api",
    ):
        assert flag in helptext, flag
