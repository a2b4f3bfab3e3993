"""The GPU check's dry path on the CPU: prepare the float16 copy, index two small corpora end to end, time queries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sieve.benchmarks import gpu_check

pytestmark = pytest.mark.slow

# A folder of HotpotQA's shape (corpus.jsonl + tasks.jsonl) that every checkout has: the shipped sample
# (360 Wikipedia leads). The real run reads ../shared/eval/hotpotqa, which a clean clone may lack.
HOTPOTQA_LIKE = Path(__file__).resolve().parents[2] / "data" / "sample"


@pytest.fixture(scope="module")
def fp16_copy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The prepare step's float16 copy of the bundled MiniLM, and its size in bytes."""
    out = tmp_path_factory.mktemp("gpu-model") / "fp16"
    # 500 reference passages on a real run: the CPU here is slow
    return out, gpu_check.prepare_fp16(out, hotpotqa=HOTPOTQA_LIKE, reference_passages=40)


def test_prepare_writes_a_float16_copy_under_the_upload_limit(fp16_copy):
    folder, size = fp16_copy
    weights = list(folder.rglob("*.safetensors"))
    assert weights and size < gpu_check.UPLOAD_LIMIT_MIB << 20
    assert size < 60 << 20  # about half the 90 MB float32 folder

    from safetensors import safe_open

    with safe_open(str(weights[0]), "pt") as f:
        assert {str(f.get_tensor(k).dtype) for k in f.keys()} == {"torch.float16"}


def test_cpu_dry_run_prints_one_json_line_per_corpus(fp16_copy, tmp_path: Path, capsys):
    fp16, _ = fp16_copy  # on the CPU the copy is cast back to float32 (TorchEncoder.load)
    rc = gpu_check.main(
        [
            "run",
            "--device",
            "cpu",
            "--sizes",
            "hotpotqa:30",  # one corpus, one `sieve index` child (~10 s each); corpora() writes the others
            "--queries",
            "5",
            "--embedder",
            str(fp16),
            "--hotpotqa",
            str(HOTPOTQA_LIKE),
            "--data-dir",
            str(tmp_path / "d"),
        ]
    )
    assert rc == 0
    check, *rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    # float16-rounded weights computed in float32 against the original: close (cosine ~1 - 1e-6)
    assert check["check"] == "vs_cpu_float32" and check["device"] == "cpu" and check["passages"] == 40
    assert 0.9999 < check["min_cosine"] <= check["mean_cosine"] <= 1.0
    assert [r["corpus"] for r in rows] == ["hotpotqa:30"]
    for row in rows:
        assert row["device"] == "cpu" and not row["timed_out"]
        assert row["chunks"] >= row["docs"] and row["chunks_per_s"] > 0
        assert 0 < row["query_p50_ms"] <= row["query_p95_ms"]
    assert rows[0]["docs"] == 30


def test_sizes_are_checked(tmp_path: Path):
    with pytest.raises(ValueError, match="Expected sizes like"):
        gpu_check.corpora("hotpotqa,lots", HOTPOTQA_LIKE, tmp_path, 1)
    made = gpu_check.corpora("small", HOTPOTQA_LIKE, tmp_path, 1)
    assert [c.name for c in made] == ["hotpotqa:200", "300"]
    synthetic = made[1].path.read_text(encoding="utf-8").splitlines()  # what the dry run's index child would read
    assert len(synthetic) == made[1].docs == 300 and all(json.loads(x)["text"] for x in synthetic)
    assert len(made[1].queries) == 1
