"""The gpt-oss GPU check's CPU dry run: a tiny RANDOM gpt-oss, a SCRIPTED (fake) OpenAI-compatible server in
vLLM's place (``--base-url``; no vLLM here), the sample corpus cut small; the same JSON lines as on a GPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _openai_server import FakeOpenAI, completion

from sieve.benchmarks import gpu_check, gpu_check_llm

pytestmark = pytest.mark.slow

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample"


@pytest.fixture()
def small_multihop(tmp_path: Path) -> Path:
    """The sample set cut to the gold pages of its first six tasks plus every tenth other page."""
    tasks = (SAMPLE / "tasks.jsonl").read_text(encoding="utf-8").splitlines()[:6]
    gold = {g for t in tasks for g in json.loads(t)["gold_ids"]}
    lines = (SAMPLE / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    kept = [x for i, x in enumerate(lines) if json.loads(x)["id"] in gold or i % 10 == 0]
    data = tmp_path / "multihop"
    data.mkdir()
    (data / "corpus.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    (data / "tasks.jsonl").write_text("\n".join(tasks) + "\n", encoding="utf-8")
    return data


def test_held_apart_questions_skip_declared_tuning_data(tmp_path: Path) -> None:
    from sieve.eval.tuning import load_manifest, question_key

    data = Path(__file__).resolve().parents[3] / "shared" / "eval" / "2wikimultihopqa"
    if not data.is_dir():
        data = SAMPLE  # a clean clone without ../shared: the sample set, none of it tuning data
    heldout, rest = gpu_check_llm.split_held_apart(data, 5, tmp_path)
    tuning = set().union(*load_manifest().values())
    held = [json.loads(x) for x in (heldout / "tasks.jsonl").read_text().splitlines()]
    assert len(held) == 5 and not {question_key(t["question"]) for t in held} & tuning
    trained = {json.loads(x)["id"] for x in rest.read_text().splitlines()}
    assert not trained & {t["id"] for t in held}
    from sieve.eval.tuning import MANIFEST

    assert gpu_check_llm.TUNING_MANIFEST.resolve() == MANIFEST.resolve()
    for q in ("Who wrote  Hamlet?", "L'été, 2001: A Space Odyssey"):
        assert gpu_check_llm.question_key(q) == question_key(q)


def test_vllm_is_started_with_gpt_oss_tool_parser() -> None:
    cmd = gpu_check_llm.vllm_command(Path("/m/gpt-oss-20b"), "gpt-oss-20b", 8011)
    assert cmd[:3] == ["vllm", "serve", "/m/gpt-oss-20b"]
    assert cmd[cmd.index("--tool-call-parser") + 1] == "openai" and "--enable-auto-tool-choice" in cmd


def test_cpu_dry_run_prints_the_gpu_lines(small_multihop: Path, tmp_path: Path, capsys) -> None:
    from _tiny_gpt_oss import save_tiny_gpt_oss

    model = save_tiny_gpt_oss(tmp_path / "tiny-gpt-oss")
    fake = FakeOpenAI()  # SCRIPTED: a search, then finish, per question (vLLM's structured tool calls)
    for _ in range(2):
        fake.script += [
            (
                200,
                completion(
                    None, [("functions.search", {"query": "director film"})], reasoning=("reasoning_content", "Search.")
                ),
                0.0,
            ),
            (200, completion(None, [("functions.finish", {"ids": ["c1"]})]), 0.0),
        ]
    try:
        rc = gpu_check.main(
            [
                "llm",
                "--model", str(model),
                "--data", str(small_multihop),
                "--questions", "2",
                "--base-url", fake.url,
                "--max-new-tokens", "16",
                "--sft-steps", "1",
                "--rl-steps", "1",
                "--train-tasks", "4",
                "--sft-heldout", "0",  # its retry of a cut turn would write 2,048 tokens here
                "--no-bf16",
                "--work", str(tmp_path / "work"),
            ]
        )  # fmt: skip
    finally:
        fake.close()
    assert rc == 0
    out = capsys.readouterr().out.splitlines()
    rows = [json.loads(line) for line in out if line.startswith('{"')]  # TRL prints its own logs as dicts
    search, training = rows[:2], rows[2:]
    assert [r["system"] for r in search] == ["agent:openai", "agent:learned"]
    for r in search:
        assert r["questions"] == 2 and 0 <= r["recall@5"] <= r["recall@10"] <= 1 and r["episodes_per_s"] > 0
    assert len(fake.requests) == 4 and fake.requests[0]["body"]["model"] == "gpt-oss-20b"  # the served name
    assert [r["stage"] for r in training] == ["sft", "grpo"] and training[0]["steps"] == 1
    assert isinstance(training[1]["reward"], float) and training[1]["segments"] >= 1
    assert not (tmp_path / "work" / "sft" / "model").exists()  # deleted once GRPO had loaded it
    assert (tmp_path / "work" / "rl" / "model" / "config.json").is_file()
