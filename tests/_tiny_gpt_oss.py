"""A tiny RANDOMLY INITIALISED gpt-oss (2 layers, 4 experts) with gpt-oss's real tokenizer and chat template.

Nothing is downloaded. The tokenizer is ``o200k_harmony``, the one gpt-oss ships, built here from
the ``o200k_base`` ranks Sieve already finds offline for ``openai-harmony``
(:func:`sieve.agent.backends.harmony_vocab.vocab_folder`) by transformers' ``TikTokenConverter``,
with harmony's special tokens at their ids (``<|start|>`` 200006, ``<|call|>`` 200012, ...). The
chat template is TRL's copy of gpt-oss's (``trl/chat_templates/gptoss.jinja``), so a turn renders
as gpt-oss sees it: system and developer messages with the tools in the ``functions`` namespace,
ending ``<|start|>assistant``. The generation config stops on ``<|return|>``, ``<|endoftext|>`` and
``<|call|>``, as gpt-oss-20b's does. The weights are random: the model writes noise, in the
right vocabulary. Importable like ``_own_process`` (pytest puts ``tests/`` on ``sys.path``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

# tiktoken's o200k_harmony: o200k_base's ranks and pattern, then harmony's special tokens.
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
N_BASE = 199_998  # o200k_base's mergeable ranks; the special tokens follow
VOCAB = 201_088
NAMED = {
    199_998: "<|startoftext|>",
    199_999: "<|endoftext|>",
    200_002: "<|return|>",
    200_003: "<|constrain|>",
    200_005: "<|channel|>",
    200_006: "<|start|>",
    200_007: "<|end|>",
    200_008: "<|message|>",
    200_012: "<|call|>",
    200_018: "<|endofprompt|>",
}
TOKENIZER_CACHE = "tiny-gpt-oss-tokenizer"
EOS_IDS = [200_002, 199_999, 200_012]  # gpt-oss-20b's generation_config: <|return|>, <|endoftext|>, <|call|>


def gpt_oss_tokenizer() -> Any:
    """gpt-oss's ``o200k_harmony`` tokenizer as a ``PreTrainedTokenizerFast``, with gpt-oss's chat template."""
    from tokenizers import AddedToken
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter
    from trl.chat_template_utils import gptoss_chat_template

    from sieve.agent.backends.harmony_vocab import VOCAB_FILE, vocab_folder

    fast = TikTokenConverter(vocab_file=str(vocab_folder() / VOCAB_FILE), pattern=O200K_PATTERN).converted()
    assert fast.get_vocab_size() == N_BASE
    specials = [NAMED.get(i, f"<|reserved_{i}|>") for i in range(N_BASE, VOCAB)]
    fast.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in specials])
    tok = PreTrainedTokenizerFast(
        tokenizer_object=fast, bos_token="<|startoftext|>", eos_token="<|return|>", pad_token="<|endoftext|>"
    )
    tok.chat_template = gptoss_chat_template
    return tok


def tiny_gpt_oss(seed: int = 0) -> Any:
    """A random ``GptOssForCausalLM``: 2 layers (sliding, full), 4 experts (2 per token), gpt-oss's vocabulary."""
    import torch
    from transformers import GptOssConfig, GptOssForCausalLM

    config = GptOssConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        num_local_experts=4,
        num_experts_per_tok=2,
        sliding_window=32,
        layer_types=["sliding_attention", "full_attention"],
        bos_token_id=199_998,
        eos_token_id=EOS_IDS,
        pad_token_id=199_999,
    )
    torch.manual_seed(seed)
    model = GptOssForCausalLM(config)
    model.generation_config.eos_token_id = list(EOS_IDS)
    model.generation_config.pad_token_id = 199_999
    model.generation_config.bos_token_id = 199_998
    return model


def cached_tokenizer() -> Any:
    """:func:`gpt_oss_tokenizer`, converted once (~5 s) and kept beside the suite's other converted models."""
    from transformers import AutoTokenizer

    folder = _built_once(TOKENIZER_CACHE, lambda staging: gpt_oss_tokenizer().save_pretrained(staging))
    return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)


def _cache_dir() -> Path:
    return Path(os.environ.get("SIEVE_MODEL_DIR", Path(tempfile.gettempdir()) / "sieve-models"))


def _built_once(name: str, build: Any) -> Path:
    """``_cache_dir() / name``, made by ``build(staging_folder)`` the first time (atomically: a concurrent
    run finds the whole folder or none)."""
    folder = _cache_dir() / name
    if not folder.is_dir():  # staged and renamed whole: a folder that exists is complete
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=folder.parent))
        build(staging)
        try:
            staging.replace(folder)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)  # another process put it there first
    return folder


def save_tiny_gpt_oss(folder: Path, seed: int = 0) -> Path:
    """:func:`tiny_gpt_oss` and gpt-oss's tokenizer saved as an HF folder (name it ``...gpt-oss...``:
    Sieve counts tokens with the harmony encoding for a model so named).

    Built once per seed and version of :func:`tiny_gpt_oss` beside the suite's converted models (its
    random init and the 201k-token tokenizer's load take ~5 s), then copied: each caller may write
    into its own folder.
    """
    import hashlib
    import inspect

    import transformers

    version = hashlib.sha256(f"{inspect.getsource(tiny_gpt_oss)}/{transformers.__version__}".encode()).hexdigest()

    def build(staging: Path) -> None:
        tiny_gpt_oss(seed).save_pretrained(staging)
        cached_tokenizer().save_pretrained(staging)

    built = _built_once(f"tiny-gpt-oss-{seed}-{version[:12]}", build)
    shutil.copytree(built, folder, dirs_exist_ok=True)
    return folder


__all__ = ["EOS_IDS", "VOCAB", "cached_tokenizer", "gpt_oss_tokenizer", "save_tiny_gpt_oss", "tiny_gpt_oss"]
