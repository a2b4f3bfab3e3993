"""``--device auto|cpu|cuda`` (``SIEVE_DEVICE``): which device the embedder takes, and the error without a GPU.

This machine has no GPU. Tests named ``simulated`` monkeypatch what the runtime reports
(``torch.cuda.is_available``, ONNX Runtime's providers) or stand in for torch and
sentence-transformers, to check the selection and the CUDA settings (float16 weights, batches of
256); they say nothing about a real GPU run, which is still to be measured.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from sieve.core.errors import InvalidInput, ModelUnavailable
from sieve.retriever import device as device_mod
from sieve.retriever.config import RetrieverConfig
from sieve.retriever.device import CUDA_BATCH_SIZE, DeviceChoice, resolve_device
from sieve.retriever.embeddings import Embedder, TorchEncoder, device_batch_size, torch_weights_dtype
from sieve.cli.main import app
from sieve.settings import load_settings


def _no_runtime(*_: object) -> bool:
    raise AssertionError("--device cpu must not ask a runtime about GPUs")


def test_cpu_is_taken_without_asking_any_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device_mod, "torch_sees_cuda", _no_runtime)
    monkeypatch.setattr(device_mod, "onnx_sees_cuda", _no_runtime)
    assert resolve_device("cpu", "torch") == resolve_device("cpu", "onnx") == DeviceChoice("cpu", "cpu", "asked for")


def test_auto_takes_the_cpu_on_this_machine_and_says_why() -> None:
    choice = resolve_device("auto", "onnx")  # the real ONNX Runtime of this (CPU-only) install
    assert choice.device == "cpu" and choice.requested == "auto"
    assert choice.describe().startswith("cpu (auto: no CUDA device visible to ONNX Runtime")


def test_cuda_without_a_gpu_is_our_error_naming_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device_mod, "torch_sees_cuda", lambda: False)  # simulated: torch sees no GPU
    for backend in ("torch", "onnx"):
        with pytest.raises(
            ModelUnavailable,
            match=r"Expected a CUDA device for --device cuda .* got none visible to "
            r".*; valid: --device cpu, or --device auto",
        ):
            resolve_device("cuda", backend)
    assert (
        resolve_device("auto", "torch").describe()
        == "cpu (auto: no CUDA device visible to torch (torch.cuda.is_available() is False))"
    )


def test_simulated_cuda_is_taken_by_auto_and_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device_mod, "torch_sees_cuda", lambda: True)  # simulated: no GPU here
    monkeypatch.setattr(device_mod, "onnx_sees_cuda", lambda: True)
    for backend in ("torch", "onnx"):
        assert resolve_device("auto", backend) == DeviceChoice("auto", "cuda", "auto: CUDA is available")
        assert resolve_device("cuda", backend).device == "cuda"


def test_unknown_devices_are_refused_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidInput, match=r"Expected device in \('auto', 'cpu', 'cuda'\), got 'gpu'"):
        resolve_device("gpu", "onnx")
    with pytest.raises(InvalidInput, match="Expected device in"):
        RetrieverConfig(data_dir=Path("/tmp/unused"), device="tpu")  # type: ignore[arg-type]
    monkeypatch.setenv("SIEVE_DEVICE", "cuda")
    assert load_settings(data_dir="/tmp/unused").retriever_config().device == "cuda"
    monkeypatch.setenv("SIEVE_DEVICE", "gpu")
    with pytest.raises(InvalidInput, match="SIEVE_DEVICE"):
        load_settings(data_dir="/tmp/unused")


def test_cuda_settings_float16_weights_and_bigger_batches() -> None:
    assert [torch_weights_dtype(d, dev) for d in ("float32", "bfloat16") for dev in ("cpu", "cuda")] == [
        "float32",
        "float16",
        "bfloat16",
        "bfloat16",
    ]
    assert device_batch_size(32, "cpu") == 32
    assert device_batch_size(32, "cuda") == CUDA_BATCH_SIZE == 256 and device_batch_size(1024, "cuda") == 1024


def test_simulated_cuda_torch_encoder_loads_float16_on_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wiring of TorchEncoder.load on a GPU, with stand-ins for torch and sentence-transformers."""
    made: dict = {}

    class FakeST:
        tokenizer = "tok"
        saved_dtype = "torch.float32"  # what the folder's weights load as

        def __init__(self, path: str, device: str, local_files_only: bool) -> None:
            made.update(path=path, device=device, local=local_files_only)

        def parameters(self) -> list:
            return [types.SimpleNamespace(dtype=self.saved_dtype)]

        def to(self, dtype: object) -> FakeST:
            made["dtype"] = dtype
            return self

    fake_torch = types.SimpleNamespace(
        float32="torch.float32",
        float16="torch.float16",
        bfloat16="torch.bfloat16",
        cuda=types.SimpleNamespace(is_available=lambda: True),
    )
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    monkeypatch.setitem(sys.modules, "sentence_transformers", types.SimpleNamespace(SentenceTransformer=FakeST))
    monkeypatch.setattr("sieve.retriever.embeddings.quiet_hf_progress", lambda: __import__("contextlib").nullcontext())

    enc = TorchEncoder.load(Path("/models/minilm"), "float32", "auto")
    assert made == {"path": "/models/minilm", "device": "cuda", "local": True, "dtype": "torch.float16"}
    assert enc.device == DeviceChoice("auto", "cuda", "auto: CUDA is available")

    made.clear()
    fake_torch.cuda.is_available = lambda: False
    enc = TorchEncoder.load(Path("/models/minilm"), "float32", "auto")
    assert made == {"path": "/models/minilm", "device": "cpu", "local": True} and enc.device.device == "cpu"
    with pytest.raises(ModelUnavailable, match="--device cuda"):
        TorchEncoder.load(Path("/models/minilm"), "float32", "cuda")

    made.clear()
    FakeST.saved_dtype = "torch.float16"  # a float16 folder (benchmarks/gpu_check.py's copy) on the CPU: cast up
    TorchEncoder.load(Path("/models/minilm-fp16"), "float32", "auto")
    assert made["device"] == "cpu" and made["dtype"] == "torch.float32"


def test_simulated_cuda_embedder_batches_256_on_the_gpu() -> None:
    seen: list[int] = []

    class GpuEncoder:  # an encoder that reports a GPU: only the batching is checked here
        tokenizer = None
        device = DeviceChoice("auto", "cuda", "auto: CUDA is available")
        dim = 2

        def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
            seen.append(batch_size)
            return np.ones((len(texts), 2), dtype=np.float32)

    emb = Embedder(path="/unused", batch_size=32, _encoder=GpuEncoder())  # type: ignore[arg-type]
    assert emb.effective_batch_size == 256 and emb.device_choice.device == "cuda"
    assert emb.embed_passages(["a"] * 300).shape == (300, 2) and seen == [256]  # one slice of 8 x 256


@pytest.mark.filterwarnings("ignore:Specified provider 'CUDAExecutionProvider':UserWarning")
def test_onnx_falls_back_when_its_cuda_provider_cannot_start(monkeypatch: pytest.MonkeyPatch, embedder) -> None:
    """Simulated: ONNX Runtime lists CUDA (as onnxruntime-gpu does) but the session starts on the CPU only
    (what this CPU build does when asked for CUDA): auto falls back and says so, cuda is an error."""
    from sieve.retriever.onnx_backend import OnnxEncoder

    monkeypatch.setattr(device_mod, "onnx_sees_cuda", lambda: True)
    model = Path(embedder.path)
    onnx_file = next(Path(embedder.cache_dir, "onnx").glob("*-float32/model.onnx"))
    enc = OnnxEncoder.load(onnx_file, model, threads=1, device="auto")
    assert enc.device == DeviceChoice("auto", "cpu", "auto: ONNX Runtime's CUDAExecutionProvider failed to start")
    with pytest.raises(ModelUnavailable, match="CUDAExecutionProvider that failed to start"):
        OnnxEncoder.load(onnx_file, model, threads=1, device="cuda")


def test_sieve_index_says_which_device_it_took(tmp_path: Path, sample_dir: Path) -> None:
    runner = CliRunner()
    data = str(tmp_path / "data")
    res = runner.invoke(
        app, ["index", str(sample_dir / "docs" / "faq.txt"), "-c", "dev", "--device", "auto", "--data-dir", data]
    )
    assert res.exit_code == 0, res.output
    assert "Embedding device: cpu (auto: no CUDA device visible to ONNX Runtime" in res.stderr
    # without --device, on a machine with no GPU: no device line, no word of CUDA
    res = runner.invoke(app, ["index", str(sample_dir / "docs" / "glossary.html"), "-c", "dev", "--data-dir", data])
    assert res.exit_code == 0, res.output
    assert "1 added" in res.output and "Embedding device" not in res.stderr and "CUDA" not in res.output
    res = runner.invoke(app, ["index", str(sample_dir / "docs" / "faq.txt"), "-c", "dev", "--data-dir", data, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["device"] in (None, "cpu")  # None: nothing changed, no model loaded

    res = runner.invoke(
        app, ["index", str(sample_dir / "docs" / "faq.txt"), "-c", "dev2", "--device", "cuda", "--data-dir", data]
    )
    assert res.exit_code == 2 and "error [model_unavailable]: Expected a CUDA device for --device cuda" in res.stderr
    assert "Traceback" not in res.output
    res = runner.invoke(app, ["collections", "--json", "--data-dir", data])
    assert [c["name"] for c in json.loads(res.stdout)] == ["dev"]  # the failed run left nothing behind


def test_every_command_that_embeds_takes_device_and_serve_refuses_cuda_before_binding(tmp_path: Path) -> None:
    from sieve.cli.main import build_command

    commands = build_command().commands
    for name in ("index", "retrieve", "search", "demo", "serve", "eval"):
        assert "--device" in {o for p in commands[name].params for o in p.opts}, name
    res = CliRunner().invoke(app, ["serve", "--device", "cuda", "--port", "1", "--data-dir", str(tmp_path)])
    assert res.exit_code == 2 and "error [model_unavailable]: Expected a CUDA device" in res.stderr
    assert "Sieve on http" not in res.output  # failed before announcing (or binding) anything
