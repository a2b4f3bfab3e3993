"""Fixtures and helpers for the retriever tests (real MiniLM, real embedded Chroma, real BM25).

The session-wide ``embedder`` and ``sample_index`` come from ``tests/conftest.py``; this file adds
a small module-scoped collection of multi-chunk documents (for read windows and grep) and helpers
that check the Chroma/BM25 consistency invariant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from _retriever_helpers import MULTI_DOCS

from sieve.retriever import CorpusIndex, RetrieverConfig

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(scope="module")
def multi_index(tmp_path_factory: pytest.TempPathFactory, embedder) -> CorpusIndex:
    """Three documents of several 32-token chunks each (read-only for tests)."""
    data: Path = tmp_path_factory.mktemp("multi")
    cfg = RetrieverConfig(data_dir=data, chunk_tokens=32, chunk_overlap=8)
    index = CorpusIndex.open(cfg, "multi", create=True, embedder=embedder)
    index.writer.index_documents(MULTI_DOCS, progress=False)
    return index


@pytest.fixture()
def run(tmp_path, embedder, monkeypatch):
    """``sieve ARGS --data-dir TMP`` through CliRunner (exit code checked by the caller).

    Every command would load MiniLM again (seconds each); it is handed the session's real model instead.
    """
    from typer.testing import CliRunner

    from sieve.retriever.embeddings import Embedder
    from sieve.cli.main import app

    monkeypatch.setattr(Embedder, "from_config", classmethod(lambda cls, config, **kwargs: embedder))
    monkeypatch.delenv("SIEVE_CHROMA_URL", raising=False)
    monkeypatch.delenv("SIEVE_COLLECTION", raising=False)
    runner = CliRunner()
    data = str(tmp_path / "data")

    def _run(*args: str):
        return runner.invoke(app, [*args, "--data-dir", data], catch_exceptions=False)

    return _run
