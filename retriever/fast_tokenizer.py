"""A sentence-transformers model's tokenizer run by the ``tokenizers`` library alone (the ONNX backend's).

``AutoTokenizer`` wraps this same Rust tokenizer, but importing transformers imports torch: 4.3 s
of the 7 s a ``sieve retrieve --mode dense`` process took on a shared 2-core machine (``python -X
importtime``), for a query whose forward pass takes 0.04 s. The ONNX backend needs only ids,
attention masks and type ids, so it reads the folder's ``tokenizer.json`` with ``tokenizers``
(0.03 s) and does what ``AutoTokenizer(texts, padding=True, truncation=True, max_length=n)`` does:
the file's normalizer, pre-tokenizer and post-processor (special tokens), truncation to ``n``
tokens, padding to the longest text of a batch on the configured side. Tests check its ids equal
``AutoTokenizer``'s; a folder without ``tokenizer.json`` (a slow tokenizer only) falls back to it.

Each text is tokenized once: the encodings are sorted by length and padded per batch from them,
where the transformers path tokenized every text twice (lengths, then each batch).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

_NO_LIMIT = 10**6


def read_json_object(path: Path) -> dict[str, Any]:
    """A JSON file's top-level object; ``{}`` if the file is missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _token_text(value: Any) -> str | None:
    """A special token as tokenizer configs write it: ``"[PAD]"`` or ``{"content": "[PAD]", ...}``."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) and value else None


def model_max_length(config: dict[str, Any]) -> int:
    """``model_max_length`` of a ``tokenizer_config.json`` (transformers writes 1e30 for "no limit").

    Example:
        >>> model_max_length({"model_max_length": 512}), model_max_length({})
        (512, 1000000)
    """
    try:
        return min(int(config.get("model_max_length") or _NO_LIMIT), _NO_LIMIT)
    except (TypeError, ValueError, OverflowError):
        return _NO_LIMIT


@dataclass
class BatchTokenizer:
    """Ids, masks and type ids for batches of texts, from ``tokenizer.json`` without transformers.

    Build it with :meth:`load`. Truncation is set once (never per call), so threads may share it.
    """

    tokenizer: Any  # tokenizers.Tokenizer
    max_length: int
    pad_id: int
    pad_type_id: int = 0
    padding_left: bool = False

    @classmethod
    def load(cls, model_path: Path, max_seq_length: int) -> BatchTokenizer | None:
        """The folder's fast tokenizer truncating at ``min(max_seq_length, model_max_length)`` tokens.

        Returns None where it cannot stand in for ``AutoTokenizer``: no ``tokenizer.json``, or no
        pad token the vocabulary knows.
        """
        file = model_path / "tokenizer.json"
        if not file.is_file():
            return None
        from tokenizers import Tokenizer

        config = read_json_object(model_path / "tokenizer_config.json")
        special = read_json_object(model_path / "special_tokens_map.json")
        tok = Tokenizer.from_file(str(file))
        saved_padding = tok.padding or {}
        pad_token = (
            _token_text(config.get("pad_token"))
            or _token_text(special.get("pad_token"))
            or _token_text(saved_padding.get("pad_token"))
        )
        pad_id = tok.token_to_id(pad_token) if pad_token else None
        if pad_id is None:
            return None
        max_length = min(max_seq_length, model_max_length(config))
        # What transformers sets before each call (tokenization_utils_fast.set_truncation_and_padding);
        # the file's own settings (MiniLM's: pad every text to 128) are not what it applies.
        tok.no_padding()
        tok.enable_truncation(
            max_length, stride=0, strategy="longest_first", direction=str(config.get("truncation_side") or "right")
        )
        return cls(
            tokenizer=tok,
            max_length=max_length,
            pad_id=int(pad_id),
            pad_type_id=int(saved_padding.get("pad_type_id") or 0),
            padding_left=config.get("padding_side") == "left",
        )

    def encode(self, texts: Sequence[str]) -> list[Any]:
        """One ``tokenizers.Encoding`` per text (special tokens added, truncated, not padded)."""
        return self.tokenizer.encode_batch(list(texts), add_special_tokens=True)

    def pad(self, encodings: Sequence[Any]) -> dict[str, np.ndarray]:
        """``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64), padded to the longest encoding.

        Example:
            >>> from types import SimpleNamespace as Enc
            >>> from tokenizers import Tokenizer, models
            >>> bt = BatchTokenizer(Tokenizer(models.WordLevel({"[PAD]": 0, "a": 1, "b": 2})), 8, pad_id=0)
            >>> bt.pad([Enc(ids=[1, 2], attention_mask=[1, 1], type_ids=[0, 0]),
            ...         Enc(ids=[2], attention_mask=[1], type_ids=[0])])["input_ids"].tolist()
            [[1, 2], [2, 0]]
        """
        width = max((len(e.ids) for e in encodings), default=0)
        ids = np.full((len(encodings), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.full((len(encodings), width), self.pad_type_id, dtype=np.int64)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            cols = slice(width - n, width) if self.padding_left else slice(0, n)
            ids[row, cols] = enc.ids
            mask[row, cols] = enc.attention_mask
            types[row, cols] = enc.type_ids
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


__all__ = ["BatchTokenizer", "model_max_length", "read_json_object"]
