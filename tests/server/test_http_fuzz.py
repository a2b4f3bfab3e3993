"""Schema-driven fuzzing (schemathesis) of the live server: no input may produce a 5xx.

Bounded here (a few cases per operation and mode); ``python tests/server/fuzz_server.py`` runs
many more and prints the count.
"""

from __future__ import annotations

import pytest
import schemathesis  # noqa: F401  (a test extra: a missing one fails the run)
from live_server import TINY, TINY_DOCS, start_server

EXAMPLES = 6


@pytest.fixture()
def fuzz_target(tmp_path, embedder):
    # Its own data folder: fuzzing creates and deletes arbitrary collections.
    from sieve.retriever.types import Document

    srv = start_server(embedder, tmp_path, collection=TINY)
    srv.state.index(TINY, create=True).index_documents(
        [Document(doc_id=d["id"], text=d["text"], title=d["title"], metadata=d["metadata"]) for d in TINY_DOCS],
        progress=False,
    )
    yield srv
    srv.stop()


def test_fuzzing_finds_no_server_errors(fuzz_target) -> None:
    from fuzzing import fuzz

    report = fuzz(fuzz_target.url, max_examples=EXAMPLES, seed=1)
    assert not report.failures, "\n".join(report.failures)
    # Every documented operation was exercised, with both accepted and rejected inputs.
    assert len(report.by_operation) >= 11
    assert report.cases >= len(report.by_operation) * 2
    assert any(200 <= s < 300 for s in report.by_status) and report.by_status[422] > 0
