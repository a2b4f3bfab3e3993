"""The budget's token counter for a served model: its own tokenizer when it is here, else the estimate.

A model behind an HTTP endpoint has its tokenizer on the server, not here. Sieve counts with the
model's real tokenizer when one is on this machine, without downloading anything, and says which
count it used (``label``, recorded in the trace as ``meta["token_count"]``):

1. gpt-oss (a model name containing ``gpt-oss``): the ``o200k_harmony`` encoding of ``openai-harmony``,
   gpt-oss's own tokenizer (its vocabulary found offline, :mod:`~sieve.agent.backends.harmony_vocab`).
2. Any other model whose ``tokenizer.json`` is in the local Hugging Face cache (``--model`` naming
   a hub id, e.g. ``Qwen/Qwen2.5-7B-Instruct``) or in a folder ``--model`` names: ``tokenizers``.
3. Else ~4 characters a token (:class:`~sieve.pruning.tokens.ApproxTokenCounter`), labelled as an estimate.
"""

from __future__ import annotations

import logging
from pathlib import Path
from threading import Lock
from typing import TYPE_CHECKING, Any

from sieve.core.errors import ModelUnavailable
from sieve.pruning.tokens import ApproxTokenCounter

if TYPE_CHECKING:
    from sieve.pruning.tokens import TokenCounter

logger = logging.getLogger(__name__)

ESTIMATE_LABEL = "estimate (~4 characters a token; the model's tokenizer is not on this machine)"


class LabelledEstimate(ApproxTokenCounter):
    """The ~4-characters-a-token estimate, saying that it is one."""

    label = ESTIMATE_LABEL


class HarmonyTokenCounter:
    """Exact gpt-oss token counts: ``openai-harmony``'s ``o200k_harmony`` encoding (special tokens as text)."""

    label = "o200k_harmony (gpt-oss's tokenizer, via openai-harmony)"

    def __init__(self, encoding: Any) -> None:
        self.encoding = encoding

    def count(self, text: str) -> int:
        return len(self.encoding.encode(text, allowed_special="all")) if text else 0


class TokenizerFileCounter:
    """Exact counts with a ``tokenizer.json`` (Hugging Face ``tokenizers``), without special tokens."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(path))
        self.label = f"the model's tokenizer ({path})"
        self._lock = Lock()  # a Rust tokenizer refuses concurrent use ("Already borrowed")

    def count(self, text: str) -> int:
        if not text:
            return 0
        with self._lock:
            return len(self.tokenizer.encode(text, add_special_tokens=False).ids)


def _local_tokenizer_file(model: str) -> Path | None:
    """``tokenizer.json`` of ``model`` if it is on this machine: a folder, or the HF cache (never fetched)."""
    folder = Path(model).expanduser()
    if (folder / "tokenizer.json").is_file():
        return folder / "tokenizer.json"
    if model.count("/") != 1:
        return None
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(model, "tokenizer.json")
    except Exception:  # an id the hub library rejects: nothing cached under it
        return None
    return Path(found) if isinstance(found, str) else None


def served_model_counter(model: str) -> TokenCounter:
    """The counter the budget of the ``openai`` policy uses for the served ``model`` (see the module docstring)."""
    if "gpt-oss" in model.lower():
        try:
            from sieve.agent.backends.harmony_vocab import harmony_encoding

            return HarmonyTokenCounter(harmony_encoding())
        except ModelUnavailable as exc:
            logger.warning("Counting %s's tokens by estimate: %s", model, exc.message)
            return LabelledEstimate()
    path = _local_tokenizer_file(model)
    if path is not None:
        try:
            return TokenizerFileCounter(path)
        except Exception as exc:  # a file tokenizers cannot read: the estimate still works
            logger.warning("Counting %s's tokens by estimate: %s could not be read (%s)", model, path, exc)
    return LabelledEstimate()


def counter_label(counter: TokenCounter) -> str:
    """What a counter counts, for the trace: its ``label``, else its class name."""
    return str(getattr(counter, "label", type(counter).__name__))


__all__ = [
    "ESTIMATE_LABEL",
    "HarmonyTokenCounter",
    "LabelledEstimate",
    "TokenizerFileCounter",
    "counter_label",
    "served_model_counter",
]
