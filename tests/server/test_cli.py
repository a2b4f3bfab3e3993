"""The ``sieve`` command as a newcomer meets it: what it loads, how it fails, what its help and README promise.

Start-up cost is checked structurally (which modules a command imports, in a fresh interpreter),
never by timing; ``benchmarks/cli.py`` measures wall times.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from _readme import DOCS, sieve_invocations
from _server_process import sieve_command
from sieve.core.defaults import DEFAULT_POLICY
from sieve.cli.main import app, build_command, configure_logging, main
from sieve.cli.commands._common import plural

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "sentence_transformers", "transformers", "onnxruntime", "chromadb", "fastapi", "scipy", "numpy")
MODEL_LIBS = ("torch", "sentence_transformers", "transformers", "onnxruntime", "chromadb", "fastapi")


def _modules_after(args: list[str], data_dir: Path | None = None) -> tuple[set[str], subprocess.CompletedProcess]:
    """Run ``sieve ARGS`` in a fresh interpreter; return which of HEAVY it imported (and the process)."""
    code = (
        "import json, sys\nfrom sieve.cli.main import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    code = e.code\nelse:\n    code = 0\n"
        f"print('MODULES=' + json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)), file=sys.stderr)\n"
        "sys.exit(code)"
    )
    env_args = [*args, "--data-dir", str(data_dir)] if data_dir else args
    proc = _python(code, env_args, data_dir)
    return _loaded(proc), proc


_NEXT = "--- next invocation ---"


def _modules_after_each(runs: list[list[str]], data_dir: Path) -> tuple[set[str], list[tuple[int, str]]]:
    """Run each ``sieve ARGS`` of ``runs`` in turn in one fresh interpreter (one start-up, one model load,
    for checks that hold for every command when they hold for all together: what none of them imports).

    Returns which of HEAVY they imported, together, and each run's exit code and stdout.
    """
    code = (
        "import json, sys\nfrom sieve.cli.main import main\ncodes = []\n"
        "for args in json.loads(sys.argv[1]):\n"
        "    try:\n        main(args)\n    except SystemExit as e:\n        codes.append(e.code or 0)\n"
        "    else:\n        codes.append(0)\n"
        f"    print({_NEXT!r}, flush=True)\n"
        f"print('MODULES=' + json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)), file=sys.stderr)\n"
        "print('CODES=' + json.dumps(codes), file=sys.stderr)\n"
    )
    proc = _python(code, [json.dumps([[*args, "--data-dir", str(data_dir)] for args in runs])], data_dir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    codes = json.loads(next(ln for ln in proc.stderr.splitlines() if ln.startswith("CODES=")).removeprefix("CODES="))
    outs = proc.stdout.split(_NEXT + "\n")[: len(runs)]
    assert len(codes) == len(outs) == len(runs), proc.stderr[-3000:]
    return _loaded(proc), list(zip(codes, outs))


def _python(code: str, args: list[str], data_dir: Path | None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={
            "PATH": "/usr/bin:/bin",
            "HF_HUB_OFFLINE": "1",
            "HOME": str(data_dir or ROOT),
            "SIEVE_MODEL_DIR": os.environ["SIEVE_MODEL_DIR"],
        },
    )


def _loaded(proc: subprocess.CompletedProcess) -> set[str]:
    line = next((ln for ln in proc.stderr.splitlines() if ln.startswith("MODULES=")), None)
    assert line is not None, proc.stderr[-3000:]
    return set(json.loads(line.removeprefix("MODULES=")))


def test_help_imports_nothing_heavy() -> None:
    loaded, proc = _modules_after(["--help"])
    assert proc.returncode == 0 and "retrieve" in proc.stdout
    assert loaded == set(), f"`sieve --help` imported {sorted(loaded)}"
    loaded, proc = _modules_after(["index", "--help"])
    assert proc.returncode == 0 and loaded == set()


def test_listing_and_bm25_never_load_the_embedder(sample_data_copy: Path) -> None:
    loaded, proc = _modules_after(["collections", "--json"], sample_data_copy)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout) == [{"name": "sample", "chunks": 374}]
    assert loaded.isdisjoint(set(MODEL_LIBS) - {"chromadb"}), loaded
    assert "scipy" not in loaded  # listing needs Chroma, not BM25's sparse matrices

    loaded, proc = _modules_after(
        ["retrieve", "Charles Lindbergh aircraft", "--mode", "bm25", "-c", "sample", "-k", "3", "--json"],
        sample_data_copy,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [r["rank"] for r in json.loads(proc.stdout)["results"]] == [1, 2, 3]
    assert loaded.isdisjoint(set(MODEL_LIBS) - {"chromadb"}), loaded
    assert "Loading weights" not in proc.stderr


def test_onnx_queries_never_import_torch_or_transformers(sample_data_copy: Path) -> None:
    """Dense, hybrid and agentic queries on the default ONNX backend tokenize with ``tokenizers`` alone:
    importing transformers (and with it torch) was 4 of the 7 seconds such a process took."""
    runs = [["retrieve", "Charles Lindbergh aircraft", "--mode", "hybrid"], ["search", "Charles Lindbergh"]]
    # One interpreter for both: neither imports torch when both together do not (and one start-up is saved).
    loaded, outs = _modules_after_each(
        [[*args, "-c", "sample", "-k", "3", "--json"] for args in runs], sample_data_copy
    )
    for args, (code, out) in zip(runs, outs):
        assert code == 0 and len(json.loads(out)["results"]) == 3, (args[0], out[-2000:])
    assert {"onnxruntime", "chromadb"} <= loaded, loaded  # the model did run
    assert loaded.isdisjoint({"torch", "transformers", "sentence_transformers"}), loaded


def test_reading_a_trace_needs_no_model_library(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom sieve.agent import Trace\n"
        "t = Trace.from_dict({'question': 'q', 'returned': [{'chunk_id': 'd#0', 'doc_id': 'd', 'score': 1.0, "
        "'rank': 1}]})\nassert t.returned_chunk_ids == ['d#0']\n"
        f"print(sorted(m for m in {MODEL_LIBS!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout  # numpy may load (the agent's scoring uses it); no model library


def test_json_errors_are_problem_details_on_stdout(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    runner = CliRunner()
    res = runner.invoke(app, ["retrieve", "x", "-c", "never-made", "--data-dir", data, "--json"])
    assert res.exit_code == 2
    body = json.loads(res.stdout)
    assert body["code"] == "unknown_collection" and body["type"] == "urn:sieve:error:unknown_collection"
    assert body["status"] == 404 and "never-made" in body["detail"]
    # Without --json: one plain line on stderr, nothing on stdout.
    res = runner.invoke(app, ["retrieve", "x", "-c", "never-made", "--data-dir", data])
    assert res.exit_code == 2 and res.stdout == "" and "error [unknown_collection]" in res.stderr


def test_json_usage_errors_are_problem_details_too(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["retrieve", "x", "--no-such-flag", "--json"])
    assert exit_.value.code == 2
    body = json.loads(capsys.readouterr().out)
    assert body["code"] == "invalid_input" and "--no-such-flag" in body["detail"]


def test_a_failed_index_leaves_no_collection(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    runner = CliRunner()
    res = runner.invoke(app, ["index", str(tmp_path / "does-not-exist"), "-c", "xyz", "--data-dir", data, "--json"])
    assert res.exit_code == 2 and json.loads(res.stdout)["code"] == "not_found"
    res = runner.invoke(app, ["collections", "--data-dir", data, "--json"])
    assert json.loads(res.stdout) == []


def test_flags_read_as_flags_in_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_command().main(["index", "--help"], prog_name="sieve")
    lines = {line.split()[1]: line for line in capsys.readouterr().out.splitlines() if re.match(r"\W+--\w", line)}
    for flag in ("--bf16", "--json", "--help"):
        assert "<bool>" not in lines[flag], lines[flag]  # `--bf16 <bool>` read as if it took a value
    assert "<int>" in lines["--chunk-tokens"]  # options with values still say what they take


def test_eval_caches_stay_out_of_the_users_list(tmp_path: Path) -> None:
    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.store import ChromaStore, make_client

    data = tmp_path / "data"
    client = make_client(RetrieverConfig(data_dir=data))
    for name in ("mine", "eval-hotpotqa-fp32-0123456789", "eval-notes"):
        ChromaStore.open(client, name, create=True)
    runner = CliRunner()
    res = runner.invoke(app, ["collections", "--data-dir", str(data), "--json"])
    assert [c["name"] for c in json.loads(res.stdout)] == ["eval-notes", "mine"]  # a user's eval-* name stays
    res = runner.invoke(app, ["collections", "--data-dir", str(data)])
    assert "1 eval cache hidden" in res.stderr and "eval-hotpotqa" not in res.stdout
    res = runner.invoke(app, ["collections", "--data-dir", str(data), "--all", "--json"])
    assert "eval-hotpotqa-fp32-0123456789" in [c["name"] for c in json.loads(res.stdout)]


def test_eval_cache_names_are_recognised() -> None:
    from sieve.eval.data import EvalSet, collection_name
    from sieve.retriever.config import BACKEND_DTYPES, RetrieverConfig
    from sieve.retriever.store import is_eval_cache

    corpus = ROOT / "data" / "sample" / "corpus.jsonl"
    for backend, dtypes in BACKEND_DTYPES.items():
        for dtype in dtypes:
            cfg = RetrieverConfig(
                data_dir=Path("/nonexistent"),
                embed_backend=backend,  # type: ignore[arg-type]
                embed_dtype=dtype,
            )  # type: ignore[arg-type]
            assert is_eval_cache(collection_name([EvalSet("sample", corpus.parent, [])], cfg)), (backend, dtype)
    assert not is_eval_cache("evaluation") and not is_eval_cache("eval-notes")


def test_demo_json(sample_index, session_data_dir: Path) -> None:
    res = CliRunner().invoke(app, ["demo", "--data-dir", str(session_data_dir), "-k", "3", "--json"])
    assert res.exit_code == 0, res.output
    body = json.loads(res.stdout)
    assert body["collection"] == "sample" and body["index"]["unchanged"] == 360
    assert len(body["hybrid"]) == 3 and len(body["agent"]["results"]) == 3
    assert "turn 1" not in res.stderr  # no step log in JSON mode


def test_demo_agent_evidence_holds_the_answer_document(sample_index, session_data_dir: Path) -> None:
    """The demo question's answer (a population) is on St. Louis's page, a second hop through the
    aircraft's name: at the demo's default k (5) the default agent's evidence holds it (the shipped
    learned policy and the fusion ranker; nothing names this question)."""
    res = CliRunner().invoke(app, ["demo", "--data-dir", str(session_data_dir), "--json"])
    assert res.exit_code == 0, res.output
    agent = json.loads(res.stdout)["agent"]
    assert agent["policy"] == DEFAULT_POLICY and len(agent["results"]) == 5
    assert "wiki-st-louis" in [r["doc_id"] for r in agent["results"]]


def test_first_local_run_says_it_converts_a_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sieve.agent.config import AgentConfig
    from sieve.cli.commands.agent import _conversion_notice

    _conversion_notice("local", AgentConfig(models_dir=tmp_path))
    err = capsys.readouterr().err
    assert "converting SmolLM2-135M-Instruct" in err and str(tmp_path / "smollm2-135m-instruct") in err
    (tmp_path / "smollm2-135m-instruct").mkdir()
    (tmp_path / "smollm2-135m-instruct" / "config.json").write_text("{}")
    _conversion_notice("local", AgentConfig(models_dir=tmp_path))
    _conversion_notice("heuristic", AgentConfig(models_dir=tmp_path / "elsewhere"))
    assert capsys.readouterr().err == ""


def test_log_lines_go_through_the_progress_bar_writer(capsys: pytest.CaptureFixture[str]) -> None:
    from tqdm import tqdm

    root_handlers = list(logging.getLogger().handlers)
    try:
        configure_logging(verbose=False)
        with tqdm(total=2, desc="Indexing", file=sys.stderr) as bar:
            logging.getLogger("sieve.test").warning("a warning while a bar is drawn")
            bar.update(1)
        err = capsys.readouterr().err
        # tqdm.write clears the bar (a carriage return) before the line: the line starts on its own
        # instead of after the bar's text, and the bar is redrawn below it.
        [line] = [ln for ln in err.split("\n") if "a warning while a bar is drawn" in ln]
        assert re.match(r"\d{4}-\d\d-\d\d .* WARNING sieve.test: ", line.rsplit("\r", 1)[-1]), repr(line)
        assert "Indexing" in err.split("a warning while a bar is drawn", 1)[1]
    finally:
        logging.getLogger().handlers[:] = root_handlers


def test_plural() -> None:
    assert (plural(1, "file"), plural(0, "file"), plural(2, "search", "searches")) == (
        "1 file",
        "0 files",
        "2 searches",
    )


def test_every_flag_the_readme_and_docs_show_exists() -> None:
    root = build_command()
    invocations = sieve_invocations()
    assert len(invocations) >= 10
    docs = [argv for path in DOCS for argv in sieve_invocations(path)]
    assert len(docs) >= 10
    for argv in [*invocations, *docs]:
        command, rest = root, list(argv)
        while rest and rest[0] in getattr(command, "commands", {}):
            command = command.commands[rest.pop(0)]
        assert command is not root, f"README or docs/ run `sieve {' '.join(argv)}`: no such command"
        known = {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)} | {"--help"}
        used = {w.split("=", 1)[0] for w in rest if w.startswith("-") and not re.fullmatch(r"-\d.*", w)}
        assert used <= known, f"README or docs/ run `sieve {' '.join(argv)}`: unknown {sorted(used - known)}"


def _collection_of(argv: list[str]) -> str | None:
    for flag in ("-c", "--collection"):
        if flag in argv:
            return argv[argv.index(flag) + 1]
    return None


def test_readme_examples_query_a_collection_the_readme_makes() -> None:
    # A fresh data folder has only what `sieve demo` (collection `sample`) and the README's own
    # `sieve index ... -c NAME` lines create: querying `default` there answers unknown_collection.
    invocations = sieve_invocations()
    made = {"sample"} | {_collection_of(a) for a in invocations if a[:1] == ["index"] or a[:2] == ["train", "all"]}
    made.discard(None)  # `sieve index corpus/` without -c fills `default`, which no example should rely on
    readers = [
        a
        for a in invocations
        if a[0] in ("retrieve", "search", "serve") or a[:2] in (["train", "synth"], ["train", "sft"], ["train", "rl"])
    ]
    assert len(readers) >= 5
    for argv in readers:
        assert _collection_of(argv) in made, f"README runs `sieve {' '.join(argv)}` on a collection it never makes"


def _leaves(command, path=()):  # noqa: ANN001, ANN202 - click objects
    subs = getattr(command, "commands", {})
    if not subs:
        yield " ".join(path), command
    for name, sub in subs.items():
        yield from _leaves(sub, (*path, name))


def test_every_command_but_serve_takes_json_and_collection_commands_take_c() -> None:
    leaves = dict(_leaves(build_command()))
    assert {"index", "retrieve", "collections", "demo", "search", "eval", "serve", "train sft"} <= set(leaves)
    for name, command in leaves.items():
        opts = {o for p in command.params for o in p.opts}
        assert ("--json" in opts) == (name != "serve"), name  # the README's promise
        if name not in ("collections", "eval"):
            assert {"-c", "--collection"} <= opts, name


def test_console_script_runs(tmp_path: Path) -> None:
    proc = subprocess.run([*sieve_command(), "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "Usage: sieve" in proc.stdout


LONG_TEXT = "Charles Augustus Lindbergh was an American aviator,\nmilitary officer, and author. " * 6
ROWS = [
    (i, 1 / i, f"wiki-charles-augustus-lindbergh#{i}", "Charles Lindbergh, aviator and author", LONG_TEXT)
    for i in range(1, 11)
]


def _render(width: int, **kwargs: bool) -> list[str]:
    from rich.console import Console

    from sieve.cli.commands._common import print_results

    console = Console(width=width, record=True, file=io.StringIO())
    print_results(
        ROWS, "hybrid results for: which aircraft did Lindbergh fly across the Atlantic?", console=console, **kwargs
    )
    return console.export_text().splitlines()


@pytest.mark.parametrize("width", [80, 50, 160])
def test_result_tables_take_one_line_per_result_and_fit_the_width(width: int) -> None:
    from rich.cells import cell_len

    lines = _render(width)
    assert len(lines) == 3 + len(ROWS), "\n".join(lines)  # title, header, rule, then one line per result
    assert max(cell_len(ln) for ln in lines) <= width
    for (rank, _, _chunk_id, _, _), line in zip(ROWS, lines[3:]):
        assert line.split()[0] == str(rank) and f"#{rank}" in line  # ids are cut in the middle, keeping #position
        assert line.rstrip().endswith("…")  # the text was cut to fit, not wrapped
    assert "wiki-charles-augustus-lindbergh#10" in "\n".join(_render(200))  # room enough: whole ids


def test_wide_tables_wrap_the_text_as_before() -> None:
    lines = _render(80, wide=True)
    assert len(lines) > 3 * len(ROWS)  # several lines per result
    assert any("military officer" in ln for ln in lines) and any(ln.startswith("┏") for ln in lines)


def test_retrieve_and_search_print_compact_tables_by_default(sample_index, session_data_dir: Path) -> None:
    runner = CliRunner(env={"COLUMNS": "80"})
    common = ["-c", "sample", "-k", "4", "--data-dir", str(session_data_dir)]
    res = runner.invoke(app, ["retrieve", "Charles Lindbergh aircraft", "--mode", "bm25", *common])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert len(lines) == 3 + 4 and max(len(ln) for ln in lines) <= 80, res.stdout
    wide = runner.invoke(app, ["retrieve", "Charles Lindbergh aircraft", "--mode", "bm25", "--wide", *common])
    assert wide.exit_code == 0 and len(wide.stdout.splitlines()) > 2 * len(lines)

    res = runner.invoke(app, ["search", "Charles Lindbergh aircraft", "-q", *common])
    assert res.exit_code == 0, res.output
    rows = [ln for ln in res.stdout.splitlines() if re.match(r"^ ?\d+ +0\.\d{4} ", ln)]
    assert len(rows) == 4 and len(res.stdout.splitlines()) == 3 + 4, res.stdout


def test_help_paragraphs_fill_the_terminal_width() -> None:
    """`sieve index --help` at 80 columns: each help paragraph wraps to the width, never a full line
    then a two-word stub where the docstring's own line broke (issue 27)."""
    leaves = dict(_leaves(build_command()))
    for name, command in leaves.items():
        for paragraph in (command.help or "").split("\n\n"):
            assert "\n" not in paragraph or paragraph.startswith("\b"), (name, paragraph)
    proc = subprocess.run(
        [*sieve_command(), "index", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert proc.returncode == 0, proc.stderr
    prose = proc.stdout.split("Usage:", 1)[1].split("╭", 1)[0]
    paragraphs = [p.splitlines() for p in re.split(r"\n\s*\n", prose) if p.strip()][1:]  # after the Usage line
    assert len(paragraphs) >= 2 and sum(len(p) for p in paragraphs) >= 4, prose
    for lines in paragraphs:
        for line in lines[:-1]:  # every line but a paragraph's last is filled to near the width
            assert len(line.rstrip()) >= 60, f"ragged help line: {line!r}\n{prose}"
