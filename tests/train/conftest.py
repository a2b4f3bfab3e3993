"""Fixtures of the train tests: the real SmolLM2 (converted once) and a 2-layer cut of it for fast RL smoke runs."""

from __future__ import annotations

from pathlib import Path

import pytest



@pytest.fixture(scope="session")
def tiny_model_dir(smollm2_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2 cut to its first 2 decoder layers (real embeddings and tokenizer, ~15x faster).

    It writes nonsense, but the machinery (harness rollouts, segments, loss, checkpoints) is the
    same as for the full model; the learning check (train/learning_check.py) uses the full one.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dest = tmp_path_factory.mktemp("tiny-smollm2")
    model = AutoModelForCausalLM.from_pretrained(str(smollm2_dir), dtype=torch.float32)
    model.model.layers = model.model.layers[:2]
    model.config.num_hidden_layers = 2
    if getattr(model.config, "layer_types", None):
        model.config.layer_types = model.config.layer_types[:2]
    model.save_pretrained(dest)
    AutoTokenizer.from_pretrained(str(smollm2_dir)).save_pretrained(dest)
    return dest
