"""The ONNX Runtime embedding backend: a local sentence-transformers model exported once, offline.

Why not ``SentenceTransformer(path, backend="onnx")``: sentence-transformers' ONNX backend loads
through ``optimum.onnxruntime``, which now lives in the ``optimum-onnx`` package, whose only
release (0.1.0) requires ``transformers<4.58``; Sieve runs transformers 5, under which that
module fails to import. So the export is done here with the same tools optimum uses underneath
(``torch.onnx.export``, ONNX Runtime's BERT graph optimizer, ``quantize_dynamic`` with
optimum's AVX2 recipe: per-channel, symmetric uint8 weights) and the pooling and normalisation
of the sentence-transformers modules are applied in numpy.

Exports are cached in ``<models dir>/onnx/<model>-<fingerprint>-<variant>/`` (``<data_dir>/models``
unless ``SIEVE_MODEL_DIR`` says otherwise) and written
into a temporary folder renamed into place, so two processes exporting at once never see a
half-written model (the loser of the race discards its copy).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from threading import Lock
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from sieve.core.errors import ModelUnavailable
from sieve.retriever.device import DeviceChoice, cuda_unavailable, resolve_device
from sieve.retriever.fast_tokenizer import BatchTokenizer, model_max_length, read_json_object
from sieve.core.runtime import quiet_hf_progress

if TYPE_CHECKING:
    from collections.abc import Sequence

logger = logging.getLogger(__name__)

OnnxVariant = Literal["float32", "int8"]
MODEL_FILE = "model.onnx"
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


@dataclass(frozen=True)
class StModules:
    """What the ONNX path needs from a sentence-transformers folder: pooling, normalisation, length."""

    pooling: Literal["mean", "cls"]
    normalize: bool
    max_seq_length: int


def read_st_modules(path: Path) -> StModules:
    """Parse ``modules.json``; only Transformer + Pooling (mean or CLS) [+ Normalize] models are supported."""
    try:
        modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelUnavailable(
            f"Expected a sentence-transformers folder with modules.json, got {str(path)!r}: {exc}"
        ) from exc
    kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or kinds[2:] not in ([], ["Normalize"]):
        raise ModelUnavailable(
            f"Expected modules Transformer, Pooling[, Normalize] for the ONNX backend, got {kinds}; "
            "use --embed-backend torch for this model"
        )
    pooling_dir = path / modules[1]["path"]
    pool = json.loads((pooling_dir / "config.json").read_text(encoding="utf-8"))
    # Two spellings: sentence-transformers < 6 writes one flag per mode ("pooling_mode_mean_tokens":
    # true), 6 one name ("pooling_mode": "mean"); a model fine-tuned today is saved the second way.
    if isinstance(pool.get("pooling_mode"), str):
        active = [f"pooling_mode:{pool['pooling_mode']}"]
    else:
        active = [k for k, v in pool.items() if k.startswith("pooling_mode") and v]
    modes = {
        "pooling_mode_mean_tokens": "mean",
        "pooling_mode_cls_token": "cls",
        "pooling_mode:mean": "mean",
        "pooling_mode:cls": "cls",
    }
    if len(active) != 1 or active[0] not in modes:
        raise ModelUnavailable(
            f"Expected mean or CLS pooling for the ONNX backend, got {active}; use --embed-backend torch for this model"
        )
    st_cfg_path = path / "sentence_bert_config.json"
    st_cfg = json.loads(st_cfg_path.read_text(encoding="utf-8")) if st_cfg_path.exists() else {}
    return StModules(
        pooling=modes[active[0]],  # type: ignore[arg-type]
        normalize=kinds[2:] == ["Normalize"],
        max_seq_length=int(st_cfg.get("max_seq_length") or 512),
    )


# -- export -------------------------------------------------------------------------------------
def onnx_cache_dir(cache_root: Path, model_name: str, fingerprint: str, variant: OnnxVariant) -> Path:
    return cache_root / "onnx" / f"{model_name}-{fingerprint[:12]}-{variant}"


def ensure_onnx_model(
    model_path: Path, cache_root: Path, model_name: str, fingerprint: str, variant: OnnxVariant
) -> Path:
    """The cached export of ``model_path`` for ``variant``, exporting it first if absent (needs torch)."""
    target = onnx_cache_dir(cache_root, model_name, fingerprint, variant)
    if (target / MODEL_FILE).is_file():
        return target / MODEL_FILE
    if variant == "int8":
        source = ensure_onnx_model(model_path, cache_root, model_name, fingerprint, "float32")
        _publish(target, lambda tmp: _quantize(source, tmp / MODEL_FILE))
    else:
        _publish(target, lambda tmp: _export_fp32(model_path, tmp))
    return target / MODEL_FILE


def _publish(target: Path, build: Any) -> None:
    """Run ``build(tmp_dir)`` and rename the folder to ``target``; a concurrent winner is kept."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        logger.info("Exporting the embedder to ONNX (%s); once per data dir", target.name)
        build(tmp)
        tmp.chmod(0o755)  # mkdtemp makes it private; the export is shared by every process of the data dir
        try:
            os.rename(tmp, target)  # atomic on one file system; fails if another process got there first
        except OSError:
            if not (target / MODEL_FILE).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _export_fp32(model_path: Path, out_dir: Path) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer

    # Eager attention exports as plain MatMul/Softmax, which ONNX Runtime's BERT optimizer fuses
    # into its Attention kernel; the SDPA path does not fuse. The export runs inside the caller's
    # own progress bar (the first `sieve index`), so transformers' loading bar stays hidden.
    with quiet_hf_progress():
        model = AutoModel.from_pretrained(str(model_path), local_files_only=True, attn_implementation="eager").eval()
    tok = AutoTokenizer.from_pretrained(str(model_path), local_files_only=True)
    inputs = [n for n in _INPUTS if n in tok.model_input_names]

    class _Hidden(torch.nn.Module):
        def __init__(self, m: torch.nn.Module) -> None:
            super().__init__()
            self.m = m

        def forward(self, *args: torch.Tensor) -> torch.Tensor:
            return self.m(**dict(zip(inputs, args))).last_hidden_state

    sample = tok(["a short one", "and a somewhat longer second sentence"], padding=True, return_tensors="pt")
    raw = out_dir / "raw.onnx"
    axes = {n: {0: "batch", 1: "seq"} for n in [*inputs, "last_hidden_state"]}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer warnings about Python-side shape checks; axes are dynamic
        # The TorchScript exporter (dynamo=False): the dynamo one needs onnxscript, and this graph
        # is what ONNX Runtime's transformer optimizer recognises.
        torch.onnx.export(
            _Hidden(model),
            tuple(sample[n] for n in inputs),
            str(raw),
            input_names=inputs,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
    _optimize(raw, out_dir / MODEL_FILE, model.config)
    raw.unlink()
    (out_dir / "sieve_export.json").write_text(
        json.dumps({"inputs": inputs, "source": str(model_path)}), encoding="utf-8"
    )


def _optimize(raw: Path, out: Path, config: Any) -> None:
    if getattr(config, "model_type", "") != "bert":
        raw.replace(out)  # ONNX Runtime still applies its generic fusions when it loads the graph
        return
    from onnxruntime.transformers.optimizer import optimize_model

    opt = optimize_model(
        str(raw),
        model_type="bert",
        num_heads=int(config.num_attention_heads),
        hidden_size=int(config.hidden_size),
        use_gpu=False,
    )
    logger.info("ONNX fusions: %s", {k: v for k, v in opt.get_fused_operator_statistics().items() if v})
    opt.save_model_to_file(str(out))


def _quantize(source: Path, out: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # optimum's AutoQuantizationConfig.avx2(is_static=False), what sentence-transformers'
    # export_dynamic_quantized_onnx_model(..., "avx2") uses: uint8 weights avoid the int8
    # saturation of VPMADDUBSW on CPUs without VNNI; per-channel scales keep MiniLM's cosine
    # to fp32 above ~0.98 (per-tensor int8 fell to ~0.92).
    previous = logging.root.manager.disable
    logging.disable(logging.INFO)  # the quantizer logs one root-logger line per tensor
    try:
        quantize_dynamic(
            str(source),
            str(out),
            per_channel=True,
            weight_type=QuantType.QUInt8,
            extra_options={
                "WeightSymmetric": True,
                "ActivationSymmetric": False,
                "DefaultTensorType": onnx.TensorProto.FLOAT,
            },
        )
    finally:
        logging.disable(previous)
    shutil.copy(source.parent / "sieve_export.json", out.parent / "sieve_export.json")


# -- inference ----------------------------------------------------------------------------------
class OnnxEncoder:
    """An ONNX Runtime session plus the model's tokenizer, pooling and normalisation.

    Batches are formed from texts sorted by token length, so padding is small. Texts are
    tokenized by :class:`~sieve.retriever.fast_tokenizer.BatchTokenizer` (``tokenizers`` alone, no
    transformers or torch import) where the folder has a ``tokenizer.json``; :attr:`tokenizer`, the
    transformers tokenizer the chunker needs for offsets, loads on first use only (indexing).
    """

    def __init__(
        self,
        session: Any,
        model_path: Path,
        modules: StModules,
        inputs: Sequence[str],
        fast: BatchTokenizer | None = None,
        device: DeviceChoice | None = None,
    ) -> None:
        self.session = session
        self.model_path = model_path
        self.modules = modules
        self.inputs = list(inputs)
        self.fast = fast
        self.device = device or DeviceChoice("cpu", "cpu", "asked for")
        self._tokenizer: Any = None
        self._tokenizer_lock = Lock()
        limit = model_max_length(read_json_object(model_path / "tokenizer_config.json"))
        self.max_length = fast.max_length if fast is not None else min(modules.max_seq_length, limit)

    @classmethod
    def load(cls, onnx_path: Path, model_path: Path, threads: int, device: str = "cpu") -> OnnxEncoder:
        """A session on ``device`` (``auto``, ``cpu`` or ``cuda``; see :mod:`sieve.retriever.device`).

        Raises:
            ModelUnavailable: ``cuda`` asked for and ONNX Runtime cannot run on a GPU here.
        """
        import onnxruntime as ort

        choice = resolve_device(device, "onnx")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Spinning threads burn their time slice whenever another process wants the CPU (the
        # same reason the torch path sets OMP_WAIT_POLICY=PASSIVE).
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        providers = (
            ["CUDAExecutionProvider", "CPUExecutionProvider"] if choice.device == "cuda" else ["CPUExecutionProvider"]
        )
        session = ort.InferenceSession(str(onnx_path), opts, providers=providers)
        if choice.device == "cuda" and "CUDAExecutionProvider" not in session.get_providers():
            # onnxruntime-gpu lists the provider even where no GPU or CUDA library is usable.
            if choice.requested == "cuda":
                raise cuda_unavailable("onnx", "an ONNX Runtime CUDAExecutionProvider that failed to start")
            choice = DeviceChoice("auto", "cpu", "auto: ONNX Runtime's CUDAExecutionProvider failed to start")
        modules = read_st_modules(model_path)
        meta = json.loads((onnx_path.parent / "sieve_export.json").read_text(encoding="utf-8"))
        fast = BatchTokenizer.load(model_path, modules.max_seq_length)
        return cls(session, model_path, modules, meta["inputs"], fast=fast, device=choice)

    @property
    def tokenizer(self) -> Any:
        """The model's transformers tokenizer (loaded on first use: it imports transformers and torch)."""
        if self._tokenizer is None:
            with self._tokenizer_lock:
                if self._tokenizer is None:
                    from transformers import AutoTokenizer

                    self._tokenizer = AutoTokenizer.from_pretrained(str(self.model_path), local_files_only=True)
        return self._tokenizer

    @property
    def dim(self) -> int:
        return int(self.session.get_outputs()[0].shape[-1])

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        if self.fast is None:
            return self._encode_hf(texts, batch_size)
        encodings = self.fast.encode(texts)
        order = np.argsort([len(e.ids) for e in encodings], kind="stable")[::-1]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            idx = order[start : start + batch_size]
            enc = self.fast.pad([encodings[i] for i in idx])
            out[idx] = self._run(enc)
        return out

    def _encode_hf(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """The transformers tokenizer's path, for folders without a ``tokenizer.json``."""
        lengths = [
            len(ids)
            for ids in self.tokenizer(
                list(texts), truncation=True, max_length=self.max_length, return_attention_mask=False, verbose=False
            )["input_ids"]
        ]
        order = np.argsort(lengths, kind="stable")[::-1]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            idx = order[start : start + batch_size]
            enc = self.tokenizer(
                [texts[i] for i in idx], padding=True, truncation=True, max_length=self.max_length, return_tensors="np"
            )
            out[idx] = self._run(enc)
        return out

    def _run(self, enc: Any) -> np.ndarray:
        hidden = self.session.run(None, {n: np.asarray(enc[n]).astype(np.int64, copy=False) for n in self.inputs})[0]
        return self._pool(hidden, np.asarray(enc["attention_mask"]))

    def _pool(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if self.modules.pooling == "cls":
            vec = hidden[:, 0]
        else:
            m = mask[..., None].astype(np.float32)
            vec = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        if self.modules.normalize:
            vec = vec / np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12)
        return vec.astype(np.float32)


__all__ = ["OnnxEncoder", "OnnxVariant", "StModules", "ensure_onnx_model", "onnx_cache_dir", "read_st_modules"]
