"""The README as a newcomer uses it: short, its links resolve, and every command in it runs.

The cheap commands (and the Python block) run here for real, verbatim and in the README's order, as a user types them
(the ``sieve`` console script in subprocesses, ``sieve serve`` under uvicorn, ``curl`` against
it), on a copy of the indexed sample corpus; ``my_docs/`` is the sample's folder of documents
about Sieve, which the README's own-documents question is about. The expensive ones (the
install, the demo, the test suite itself, ``train all``, ``eval`` on ``../shared``) are each run
by the test named in ``ELSEWHERE``, which is checked to hold that invocation.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _readme import DOCS, README, ROOT, bash_commands, python_blocks
from _server_process import server_process, sieve_command
from sieve.core.net import free_port
from sieve.data import DEMO_QUESTION

pytestmark = pytest.mark.slow

MAX_LINES = 200

# Commands run by another test: (the test file, a string that test must hold to run it). The test
# command is the one exception: it is this run (CI runs exactly it, via .ci/run).
ELSEWHERE: dict[str, tuple[str, str]] = {
    "bash .ci/install": ("tests/test_install.py", '".ci" / "install"'),
    "sieve demo": ("tests/server/test_cli.py", '["demo", "--data-dir"'),
    "python -m pytest": (".ci/run", "python -m pytest -q"),
    "sieve train all": ("tests/train/test_train_cli.py", '["train", "all", "--corpus"'),
    "sieve eval": ("tests/eval/test_runner.py", '["eval", "--data"'),
    # a Ray cluster and a `chroma run` server: the Ray test starts both
    "sieve index --ray": ("tests/retriever/test_ray_index.py", '"--ray-address", "auto"'),
}
# Commands run here, and what their output must show (stdout; curl's is the JSON body).
EXPECT: dict[tuple[str, str | None], str] = {
    ("sieve index", "mydocs"): "added",
    ("sieve retrieve", "mydocs"): "faq",
    ("sieve search", "mydocs"): "faq",
    ("sieve collections", None): "mydocs",
    ("python -m sieve.eval.side_by_side", "mydocs"): "| # | hybrid | agent (",
    ("sieve search", "sample"): "wiki-st-louis",
    ("sieve retrieve", "sample"): "wiki-charles-lindbergh",
    ("sieve serve", "sample"): "",
    ("curl", None): "wiki-2001-a-space-odyssey",
}


def _key(words: list[str]) -> str:
    """``sieve train all``, ``sieve index``, ``sieve index --ray``, ``bash .ci/install``, ``python -m pytest``, ``curl``."""
    if words[:2] == ["sieve", "index"] and any(w.startswith("--ray") for w in words):
        return "sieve index --ray"
    if words[0] == "sieve":
        return " ".join(words[:3] if words[1] == "train" else words[:2])
    if words[0] in ("bash", "python"):
        return " ".join(words[:3] if words[1] == "-m" else words[:2])
    return words[0]


def _collection(words: list[str]) -> str | None:
    for flag in ("-c", "--collection"):
        if flag in words:
            return words[words.index(flag) + 1]
    return None


def test_the_readme_reads_in_five_minutes() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, f"README has {len(lines)} lines; move detail into docs/"


def test_links_in_the_readme_and_docs_resolve() -> None:
    checked = 0
    for path in [README, *DOCS]:
        for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://", "#", "/")):
                continue
            file = target.split("#", 1)[0]
            assert (path.parent / file).exists(), f"{path.relative_to(ROOT)} links to {target}, which is missing"
            checked += 1
    assert checked >= 20


def test_the_readme_asks_the_demo_question() -> None:
    searches = [w for w in bash_commands() if w[:2] == ["sieve", "search"] and _collection(w) == "sample"]
    assert [w[2] for w in searches] == [DEMO_QUESTION]
    prose = " ".join(README.read_text(encoding="utf-8").split())  # the question as the README's text quotes it
    assert f'*"{DEMO_QUESTION}"*' in prose


def test_every_readme_command_is_run_by_a_test() -> None:
    commands = bash_commands()
    assert len(commands) >= 10
    for words in commands:
        key = _key(words)
        assert key in ELSEWHERE or (key, _collection(words)) in EXPECT, (
            f"README runs `{' '.join(words)}`, which no test runs: add it to this file's EXPECT or ELSEWHERE"
        )
    for key, (test_file, invocation) in ELSEWHERE.items():
        # compared without whitespace: the formatter may break a call's list over lines
        text = "".join((ROOT / test_file).read_text(encoding="utf-8").split())
        assert "".join(invocation.split()) in text, (key, test_file)


def _substitute(words: list[str], my_docs: Path, port: int) -> list[str]:
    """The README's placeholders made real: the user's folder, the run's model folder, the port."""
    from sieve.agent.policies.learned import default_checkpoint

    out = []
    for w in words:
        w = w.replace("localhost:8000", f"127.0.0.1:{port}")
        if w == "my_docs/":
            w = str(my_docs)
        elif w == "runs/mydocs/rl/model":
            w = str(default_checkpoint())  # what `train all` writes there: a checkpoint folder
        elif w == "8000":
            w = str(port)
        out.append(w)
    return out


def test_the_readme_commands_run_verbatim(sample_data_copy: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(sample_data_copy / "chroma", data / "chroma")  # the demo's `sample`, as after `sieve demo`
    my_docs = shutil.copytree(ROOT / "data" / "sample" / "docs", tmp_path / "my_docs")
    # The user's questions for `python -m sieve.eval.side_by_side`, one a line.
    (tmp_path / "questions.txt").write_text("Which file formats can I index?\nHow big is a chunk?\n", encoding="utf-8")
    env = {**os.environ, "SIEVE_DATA_DIR": str(data), "COLUMNS": "200", "HF_HUB_OFFLINE": "1"}
    env.pop("SIEVE_CHROMA_URL", None)
    port = free_port()
    ran: list[tuple[str, str | None]] = []
    server = None
    try:
        for words in bash_commands():
            key, name = _key(words), _collection(words)
            if key in ELSEWHERE:
                continue
            argv = _substitute(words, my_docs, port)
            if key == "sieve serve":
                server = server_process(
                    [*sieve_command(), *argv[1:]],
                    f"http://127.0.0.1:{port}/healthz",
                    name="sieve serve",
                    log_path=tmp_path / "serve.log",
                    timeout_s=300,
                    poll_s=0.5,
                    env=env,
                )
                server.__enter__()
            else:
                cmd = (
                    [*sieve_command(), *argv[1:]]
                    if argv[0] == "sieve"
                    else [sys.executable, *argv[1:]]
                    if argv[0] == "python"
                    else argv
                )
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
                shown = f"`{' '.join(words)}` printed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
                assert proc.returncode == 0, shown
                assert EXPECT[key, name] in proc.stdout, shown
            ran.append((key, name))
    finally:
        if server is not None:
            server.__exit__(None, None, None)
    assert set(ran) == set(EXPECT)
    assert (tmp_path / "trace.jsonl").stat().st_size > 0  # `--trace trace.jsonl` wrote the episode


def test_the_readme_python_runs(sample_data_copy: Path, tmp_path: Path) -> None:
    """The README's Python block, verbatim, from the checkout's root (its paths are relative to it)."""
    [code] = python_blocks()
    data = tmp_path / "data"
    shutil.copytree(sample_data_copy / "chroma", data / "chroma")
    env = {**os.environ, "SIEVE_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1"}
    env.pop("SIEVE_CHROMA_URL", None)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines and all(re.match(r"\d+ \S+#\d+ \d\.\d+ ", line) for line in lines), proc.stdout
    assert any("wiki-stanley-kubrick#" in line for line in lines), proc.stdout  # HAL 9000's film's director
