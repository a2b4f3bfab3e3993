"""Fixtures of the train tests: the real SmolLM2 (converted once) and a 2-layer cut of it for fast RL smoke runs."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_model_dir(smollm2_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2 cut to its first 2 decoder layers (real embeddings and tokenizer, ~15x faster).

    It writes nonsense, but the machinery (harness rollouts, segments, loss, checkpoints) is the
    same as for the full model; the learning check (train/llm/learning_check.py) uses the full one.
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


# Six short scientific abstracts (written for these tests): no lead-sentence facts, no page titles in
# running text, so the template writer finds nothing; each reports one finding the claims writer can state.
ABSTRACTS = [
    (
        "Microglial activation after ischemic stroke in aged mice",
        "Microglia respond within hours of an ischemic insult. We measured activation markers in aged and young mice "
        "over two weeks. In conclusion, our data suggest that microglial activation was prolonged in aged mice and "
        "correlated with larger infarct volumes (p < 0.01).",
    ),
    (
        "Dietary fibre intake and colorectal adenoma recurrence",
        "Higher fibre intake has been linked to lower adenoma recurrence in observational cohorts. We randomised "
        "1,400 adults to a fibre supplement or placebo. The supplement did not reduce adenoma recurrence over three "
        "years of follow-up.",
    ),
    (
        "Statin therapy modulates endothelial nitric oxide synthase expression",
        "Statins raise endothelial nitric oxide synthase levels in cultured cells. Here we show that the statin "
        "effect on synthase expression required geranylgeranyl pyrophosphate depletion.",
    ),
    (
        "Sleep restriction impairs glucose tolerance in healthy adults",
        "Sleep loss is common. Five nights of restricted sleep lowered insulin sensitivity in healthy volunteers, "
        "an effect that reversed after two nights of recovery sleep.",
    ),
    (
        "Gut microbiota and response to checkpoint immunotherapy",
        "Responses to checkpoint blockade vary between patients. We sequenced stool samples from 112 melanoma "
        "patients before treatment. These results indicate that commensal Bifidobacterium abundance predicts "
        "response to anti-PD-1 therapy in melanoma.",
    ),
    (
        "Exercise training and hippocampal volume in older adults",
        "Hippocampal volume shrinks in late adulthood. Older adults were assigned to aerobic walking or to placebo "
        "stretching over one year. Aerobic training increased hippocampal volume by two percent and improved spatial memory.",
    ),
]


@pytest.fixture(scope="session")
def abstracts_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:data:`ABSTRACTS` as a corpus JSONL file (ids a0..a5)."""
    import json

    corpus = tmp_path_factory.mktemp("abstracts") / "abstracts.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": f"a{i}", "title": t, "text": x}) + "\n" for i, (t, x) in enumerate(ABSTRACTS)),
        encoding="utf-8",
    )
    return corpus


@pytest.fixture(scope="session")
def abstracts_index(abstracts_corpus: Path, session_data_dir: Path, embedder):
    """:data:`ABSTRACTS` indexed once as collection ``abstracts`` (read-only for tests)."""
    from sieve.retriever import CorpusIndex, RetrieverConfig

    index = CorpusIndex.open(RetrieverConfig(data_dir=session_data_dir), "abstracts", create=True, embedder=embedder)
    index.writer.index_path(abstracts_corpus, progress=False)
    return index
