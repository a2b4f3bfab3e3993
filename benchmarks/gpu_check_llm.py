"""The gpt-oss GPU check (``python -m sieve.benchmarks.gpu_check llm``): serve, search, train, in one script.

On a machine with a GPU, vLLM installed and gpt-oss-20b's weights in a folder, from the repository with
``../shared/eval/2wikimultihopqa`` beside it::

    python -m sieve.benchmarks.gpu_check llm --model /path/to/gpt-oss-20b

1. **Serve**: ``vllm serve MODEL --served-model-name gpt-oss-20b --tool-call-parser openai
   --enable-auto-tool-choice`` (vLLM's gpt-oss tool parser: harmony tool calls come back as structured
   ``tool_calls`` and the analysis channel as ``reasoning_content``), waited for on ``/v1/models``.
   ``--base-url URL`` uses a server already running instead (then nothing is started).
2. **Search**: the first ``--questions`` (50) tasks of the data dir that are not declared tuning data
   (``sieve/eval/tuning_sets.json``: 2WikiMultihopQA's first 80 are; the learned policy never saw
   ``../shared/eval``) are run through ``sieve eval`` (a child process: ``--systems
   agent:openai,agent:learned --k 5,10``, ``SIEVE_OPENAI_BASE_URL`` set to the server), the ``openai`` policy on the server and
   the shipped ``learned`` policy, one task at a time.
   One JSON line per system::

    {"system": "agent:openai", "model": "gpt-oss-20b", "data": "2wikimultihopqa-heldout50", "questions": 50,
     "recall@5": ..., "recall@10": ..., "episodes_per_s": ..., "wall_s": ...}
    {"system": "agent:learned", ...}

   ``episodes_per_s`` is questions over the summed episode wall time (sequential episodes: one client).
   The server is then stopped, giving its GPU memory to the training smoke.
3. **Train (smoke)**: ``sieve train sft``'s code (:func:`sieve.train.llm.sft.run_sft`: heuristic
   teacher, ``--sft-steps`` optimizer steps, LoRA on attention and every expert, bfloat16) on tasks of
   the same data dir that are not among the held-apart questions, then ``sieve train rl``'s
   (:func:`sieve.train.llm.rl.run_rl`, GRPO over the harness, ``--rl-steps`` steps) from the SFT model.
   One line for SFT, one per GRPO step (TRL's own step logs, Python dicts, come in between; the check's
   lines are the ones that parse as JSON)::

    {"stage": "sft", "steps": 2, "train_loss": ..., "kept_episodes": ..., "examples": ..., "heldout_valid_tool_call_rate": ..., "seconds": ...}
    {"stage": "grpo", "step": 0, "reward": ..., "reward_std": ..., "advantage_abs_mean": ..., "segments": ...}
    {"stage": "grpo", "step": 1, ...}

   Each stage saves a merged bfloat16 model (~40 GB for gpt-oss-20b) under the work folder; the SFT
   one is deleted once GRPO has loaded it, so one copy is on disk at a time.

On a CPU the tests dry-run all three with a tiny random gpt-oss (2 layers) and ``--base-url`` pointing
at a SCRIPTED OpenAI-compatible server (no vLLM here): the same lines come out, their numbers mean
nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from sieve.retriever.index import CorpusIndex

logger = logging.getLogger("gpu_check")

ROOT = Path(__file__).resolve().parents[1]
MULTIHOP = ROOT.parent / "shared" / "eval" / "2wikimultihopqa"
SERVED_NAME = "gpt-oss-20b"
VLLM_TOOL_FLAGS = ["--tool-call-parser", "openai", "--enable-auto-tool-choice"]
SYSTEMS = ["agent:openai", "agent:learned"]
TUNING_MANIFEST = ROOT / "eval" / "tuning_sets.json"  # sieve.eval.tuning.MANIFEST


@dataclass(frozen=True)
class LLMCheck:
    """What one ``gpu_check llm`` run does (the command line's flags)."""

    model: Path
    data: Path = MULTIHOP
    questions: int = 50
    base_url: str | None = None
    served_name: str = SERVED_NAME
    port: int = 8011
    serve_timeout_s: float = 1200.0
    max_new_tokens: int = 2048
    sft_steps: int = 2
    rl_steps: int = 2
    train_tasks: int = 8
    sft_heldout: int = 1
    lora: bool = True
    bf16: bool = True
    data_dir: Path | None = None


def emit(row: dict[str, Any]) -> None:
    """One JSON line on stdout (what the check reports)."""
    print(json.dumps(row), flush=True)


# -- serving -------------------------------------------------------------------------------------
def vllm_command(model: Path, served_name: str, port: int) -> list[str]:
    """``vllm serve`` for gpt-oss with its tool parser, on loopback."""
    return [
        "vllm",
        "serve",
        str(model),
        "--served-model-name",
        served_name,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *VLLM_TOOL_FLAGS,
    ]


def wait_ready(base_url: str, proc: subprocess.Popen | None, timeout_s: float) -> None:
    """Poll ``{base_url}/models`` until it answers.

    Raises:
        RuntimeError: the server process exited, or did not answer within ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"Expected vLLM to keep serving, got exit code {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=5) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(2)
    raise RuntimeError(f"Expected {base_url}/models to answer within {timeout_s:.0f} s, got no answer")


def start_server(check: LLMCheck, log: Path) -> tuple[subprocess.Popen | None, str]:
    """(the vLLM process or None, the endpoint): ``check.base_url`` as it is, else a started ``vllm serve``."""
    if check.base_url:  # used as it is: its first failure shows in the first episode
        return None, check.base_url
    cmd = vllm_command(check.model, check.served_name, check.port)
    logger.info("Starting %s (log: %s)", " ".join(cmd), log)
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{check.port}/v1"
    try:
        wait_ready(url, proc, check.serve_timeout_s)
    except BaseException:
        stop_server(proc)
        raise
    return proc, url


def stop_server(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- held-apart questions ------------------------------------------------------------------------
def split_held_apart(data: Path, n: int, work: Path) -> tuple[Path, Path]:
    """(a data dir of the first ``n`` tasks of ``data`` that are not declared tuning data, a tasks file
    of the rest): the first is what is scored, the second what the training smoke may use."""
    tuning = {k for s in json.loads(TUNING_MANIFEST.read_text(encoding="utf-8"))["sets"] for k in s["keys"]}
    lines = [x for x in (data / "tasks.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    fresh = [x for x in lines if question_key(json.loads(x)["question"]) not in tuning]
    held = fresh[:n]
    if len(held) < n:
        logger.warning("Only %d tasks of %s are held apart from tuning data (asked for %d)", len(held), data, n)
    out = work / f"{data.name}-heldout{len(held)}"
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(data / "corpus.jsonl", out / "corpus.jsonl")
    (out / "tasks.jsonl").write_text("\n".join(held) + "\n", encoding="utf-8")
    rest = work / "train_tasks.jsonl"
    rest.write_text("\n".join(x for x in lines if x not in set(held)) + "\n", encoding="utf-8")
    return out, rest


def question_key(question: str) -> str:
    """:func:`sieve.eval.tuning.question_key` (the benchmarks may import only eval's data and metrics;
    tests/benchmarks/test_gpu_check_llm.py checks the two agree)."""
    norm = " ".join(re.findall(r"\w+", question.lower()))
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()[:16]


# -- search --------------------------------------------------------------------------------------
def eval_command(check: LLMCheck, heldout: Path, data_dir: Path, out: Path) -> list[str]:
    """``sieve eval`` of both systems on the held-apart questions (the endpoint: ``SIEVE_OPENAI_BASE_URL``).

    A child process: the benchmarks import only eval's data and metrics (tests/test_layers.py), and the
    CLI is how a user runs the same evaluation.
    """
    return [
        sys.executable, "-m", "sieve.cli.main",
        "eval",
        "--data", str(heldout),
        "--systems", ",".join(SYSTEMS),
        "--k", "5,10",
        "--out", str(out),
        "--data-dir", str(data_dir),
        "--no-exports",
        "--no-plots",
        "--agent-set", f"max_new_tokens={check.max_new_tokens}",
    ]  # fmt: skip


def search_rows(check: LLMCheck, heldout: Path, data_dir: Path, base_url: str, out: Path) -> list[dict[str, Any]]:
    """Both systems on the held-apart questions through ``sieve eval``; one row per system from its summary.json.

    Raises:
        RuntimeError: ``sieve eval`` failed (its output's tail attached).
    """
    env = {**os.environ, "SIEVE_OPENAI_BASE_URL": base_url, "SIEVE_OPENAI_MODEL": check.served_name}
    cmd = eval_command(check, heldout, data_dir, out)
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        raise RuntimeError(f"sieve eval failed ({res.returncode}): {res.stdout[-2000:]}{res.stderr[-2000:]}")
    metrics = json.loads((out / "summary.json").read_text(encoding="utf-8"))["metrics"][heldout.name]
    rows = []
    for system in SYSTEMS:
        m = metrics[system]
        wall = float(m.get("wall_s_total", 0.0))
        rows.append(
            {
                "system": system,
                "model": check.served_name if system == "agent:openai" else "learned (shipped)",
                "data": heldout.name,
                "questions": int(m["n_tasks"]),
                "recall@5": round(float(m["recall@5"]), 4),
                "recall@10": round(float(m["recall@10"]), 4),
                "episodes_per_s": round(m["n_tasks"] / wall, 3) if wall else None,
                "wall_s": round(wall, 1),
            }
        )
    return rows


# -- training smoke ------------------------------------------------------------------------------
def sft_smoke(check: LLMCheck, index: CorpusIndex, tasks: Path, work: Path) -> dict[str, Any]:
    """``sieve train sft``'s run on ``check.train_tasks`` tasks for ``check.sft_steps`` steps."""
    from sieve.train.config import EpisodeConfig
    from sieve.train.llm.sft import WarmStartConfig, run_sft

    cfg = WarmStartConfig(
        tasks=tasks,
        out=work / "sft",
        model_path=str(check.model),
        limit=check.train_tasks,
        holdout=0.25,
        max_heldout=check.sft_heldout,
        check_before=False,
        steps=check.sft_steps,
        grad_accum=1,
        lora=check.lora,
        bf16=check.bf16,
        gradient_checkpointing=check.bf16,
        episode=EpisodeConfig(max_new_tokens=min(check.max_new_tokens, 512)),
    )
    return run_sft(index, cfg, progress=False)


def rl_smoke(check: LLMCheck, index: CorpusIndex, tasks: Path, sft_model: Path, work: Path) -> dict[str, Any]:
    """``sieve train rl``'s run from the SFT model for ``check.rl_steps`` steps (the SFT copy deleted once loaded)."""
    from sieve.train.config import EpisodeConfig
    from sieve.train.llm.rl import RLConfig, run_rl
    from sieve.train.llm.sft import load_student

    cfg = RLConfig(
        tasks=tasks,
        out=work / "rl",
        model_path=str(sft_model),
        steps=check.rl_steps,
        questions_per_step=1,
        group=2,
        limit=check.train_tasks,
        rollout_workers=2,
        lora=check.lora,
        bf16=check.bf16,
        gradient_checkpointing=check.bf16,
        episode=EpisodeConfig(max_turns=3, max_new_tokens=min(check.max_new_tokens, 256)),
    )
    model, tok, _ = load_student(str(sft_model), check.bf16, index.config.models_dir)
    shutil.rmtree(sft_model)  # one merged copy on disk at a time (~40 GB each for gpt-oss-20b)
    return run_rl(index, cfg, progress=False, model=model, tokenizer=tok)


def training_rows(sft: dict[str, Any], rl: dict[str, Any]) -> list[dict[str, Any]]:
    """The SFT line and one line per GRPO step (see the module docstring)."""
    rows: list[dict[str, Any]] = [
        {
            "stage": "sft",
            "steps": sft["steps"],
            "train_loss": round(sft["train_loss"], 4),
            "kept_episodes": sft["n_kept_episodes"],
            "examples": sft["n_train_examples"],
            "heldout_valid_tool_call_rate": sft["heldout"].get("valid_tool_call_rate"),
            "seconds": sft["seconds"],
        }
    ]
    for h in rl["history"]:
        rows.append(
            {
                "stage": "grpo",
                "step": h["step"],
                "reward": round(h["reward/total"], 4),
                "reward_std": round(h["reward_std"], 4),
                "advantage_abs_mean": round(h["advantage_abs_mean"], 4),
                "segments": h["segments"],
            }
        )
    return rows


# -- the run -------------------------------------------------------------------------------------
def run_llm_check(check: LLMCheck, work: Path) -> int:
    """Serve, search and train as the module docstring says, printing its JSON lines."""
    from sieve.eval.data import load_sets, open_eval_index
    from sieve.settings import load_settings

    heldout, train_tasks = split_held_apart(check.data, check.questions, work)
    data_dir = check.data_dir or work / "data"
    proc, url = start_server(check, work / "vllm.log")
    try:
        for row in search_rows(check, heldout, data_dir, url, work / "eval"):
            emit(row)
    finally:
        stop_server(proc)
    # The collection sieve eval indexed (its cache), opened here for the training smoke.
    sets, maps = load_sets([heldout])
    index = open_eval_index(sets, maps, load_settings(data_dir=data_dir).retriever_config(), progress=False)
    sft = sft_smoke(check, index, train_tasks, work)
    rl = rl_smoke(check, index, train_tasks, Path(sft["model_dir"]), work)
    for row in training_rows(sft, rl):
        emit(row)
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``llm`` subcommand's flags."""
    import argparse

    d = LLMCheck(model=Path("."))
    parser.add_argument("--model", type=Path, required=True, help="gpt-oss HF folder (served, then trained)")
    parser.add_argument("--data", type=Path, default=d.data, help="multi-hop data dir (corpus.jsonl, tasks.jsonl)")
    parser.add_argument("--questions", type=int, default=d.questions, help="held-apart questions scored")
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible server already running (no vLLM)")
    parser.add_argument("--served-name", default=d.served_name, help="model name on the server")
    parser.add_argument("--port", type=int, default=d.port, help="port of the started vLLM")
    parser.add_argument("--serve-timeout-s", type=float, default=d.serve_timeout_s, help="wait for vLLM at most")
    parser.add_argument("--max-new-tokens", type=int, default=d.max_new_tokens, help="tokens per model turn")
    parser.add_argument("--sft-steps", type=int, default=d.sft_steps, help="SFT optimizer steps of the smoke")
    parser.add_argument("--rl-steps", type=int, default=d.rl_steps, help="GRPO steps of the smoke")
    parser.add_argument("--train-tasks", type=int, default=d.train_tasks, help="tasks the smoke trains on")
    parser.add_argument(
        "--sft-heldout", type=int, default=d.sft_heldout, help="held-out tasks SFT's tool-call check runs (0: none)"
    )
    parser.add_argument("--lora", action=argparse.BooleanOptionalAction, default=d.lora, help="LoRA adapters")
    parser.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=d.bf16, help="bfloat16 weights")
    parser.add_argument("--data-dir", type=Path, default=None, help="where to index (default: the work folder)")
    parser.add_argument("--work", type=Path, default=None, help="work folder (default: a temporary one)")


def check_from_args(args: argparse.Namespace) -> LLMCheck:
    """The check the parsed flags describe (every field of :class:`LLMCheck` has a flag of its name)."""
    return LLMCheck(**{f.name: getattr(args, f.name) for f in fields(LLMCheck)})


__all__ = ["LLMCheck", "add_arguments", "check_from_args", "run_llm_check", "split_held_apart", "vllm_command"]
