"""Where the embedder runs: ``--device auto|cpu|cuda`` (``SIEVE_DEVICE``) resolved against what its runtime sees.

``auto`` takes CUDA when the backend's own runtime can use it (torch: ``torch.cuda.is_available()``;
ONNX Runtime: its ``CUDAExecutionProvider``, which only the ``onnxruntime-gpu`` build has), else the
CPU. ``cuda`` on a machine where the runtime sees no GPU is a :class:`~sieve.core.errors.ModelUnavailable`
error (exit 2 in the CLI, 503 over HTTP), never a crash deep inside torch.

The ONNX backend never asks torch: importing it costs seconds, and the ONNX query path is
meant to run without it.

Example:
    >>> resolve_device("cpu", "onnx").describe()
    'cpu (asked for)'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sieve.core.errors import InvalidInput, ModelUnavailable

Device = Literal["auto", "cpu", "cuda"]
DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")

CUDA_BATCH_SIZE = 256
"""Passages per forward pass on a GPU: MiniLM peaked at batch 256 on an H200 (5,761 passages/s in float32,
issue 26); larger batches were limited by the tokenizer, not the GPU."""


def validate_device(device: str) -> str:
    """Return ``device`` if it is one of :data:`DEVICES`, else raise :class:`InvalidInput`.

    Example:
        >>> validate_device("auto")
        'auto'
    """
    if device not in DEVICES:
        raise InvalidInput(f"Expected device in {DEVICES}, got {device!r}; valid: {' | '.join(DEVICES)}")
    return device


@dataclass(frozen=True)
class DeviceChoice:
    """The device an embedder took, what was asked for, and why."""

    requested: str
    device: Literal["cpu", "cuda"]
    reason: str

    def describe(self) -> str:
        return f"{self.device} ({self.reason})"


def torch_sees_cuda() -> bool:
    """``torch.cuda.is_available()`` (imports torch; the torch backend loads it anyway)."""
    import torch

    return bool(torch.cuda.is_available())


def onnx_sees_cuda() -> bool:
    """Whether this ONNX Runtime build has the CUDA execution provider (``onnxruntime-gpu``)."""
    import onnxruntime as ort

    return "CUDAExecutionProvider" in ort.get_available_providers()


_RUNTIME = {
    "torch": "torch (torch.cuda.is_available() is False)",
    "onnx": "ONNX Runtime (no CUDAExecutionProvider: the onnxruntime-gpu build has it)",
}


def resolve_device(requested: str, backend: str) -> DeviceChoice:
    """The device ``backend`` runs on for ``requested`` (``auto``, ``cpu`` or ``cuda``).

    Raises:
        InvalidInput: an unknown device name.
        ModelUnavailable: ``cuda`` was asked for and the backend's runtime sees no CUDA device.
    """
    validate_device(requested)
    if requested == "cpu":
        return DeviceChoice("cpu", "cpu", "asked for")
    sees_cuda = torch_sees_cuda() if backend == "torch" else onnx_sees_cuda()
    if sees_cuda:
        return DeviceChoice(requested, "cuda", "asked for" if requested == "cuda" else "auto: CUDA is available")
    if requested == "cuda":
        raise cuda_unavailable(backend)
    return DeviceChoice("auto", "cpu", f"auto: no CUDA device visible to {_RUNTIME.get(backend, backend)}")


def cuda_unavailable(backend: str, detail: str = "") -> ModelUnavailable:
    """The error for ``--device cuda`` where the ``backend`` cannot use a GPU."""
    seen = detail or f"none visible to {_RUNTIME.get(backend, backend)}"
    return ModelUnavailable(
        f"Expected a CUDA device for --device cuda (SIEVE_DEVICE=cuda) with embed backend "
        f"{backend!r}, got {seen}; valid: --device cpu, or --device auto to use a GPU only "
        "when there is one"
    )


__all__ = [
    "CUDA_BATCH_SIZE",
    "DEVICES",
    "Device",
    "DeviceChoice",
    "cuda_unavailable",
    "onnx_sees_cuda",
    "resolve_device",
    "torch_sees_cuda",
    "validate_device",
]
