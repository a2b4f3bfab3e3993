"""Live servers for the server tests: the real app under uvicorn on loopback ports, in threads.

One session-wide server holds the sample corpus (shared with the rest of the suite, indexed
once); smaller servers cover auth and limits with their own data folders, so tests that write
or misbehave never disturb the shared one.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from live_server import API_KEY, TINY, TINY_DOCS, LiveServer, start_server

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(scope="session")
def live(session_data_dir: Path, sample_index: Any, embedder: Any) -> Iterator[LiveServer]:
    """The main server: open (no key), default collection ``sample`` (the shipped corpus) plus ``srv-tiny``.

    It serves the session's shared data folder, so the sample corpus is indexed once for the
    whole test suite; what it writes lives in ``srv-*`` collections, removed again at the end.
    """
    srv = start_server(embedder, session_data_dir, collection=sample_index.name, request_timeout_s=120.0)
    from sieve.retriever.types import Document

    srv.state.index(TINY, create=True).writer.index_documents(
        [Document(doc_id=d["id"], text=d["text"], title=d["title"], metadata=d["metadata"]) for d in TINY_DOCS],
        progress=False,
    )
    yield srv
    for name in list(srv.state.collections()):
        if name.startswith("srv-"):
            srv.state.delete_collection(name)
    srv.stop()


@pytest.fixture(scope="session")
def secured(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[LiveServer]:
    """A server with ``api_key`` and ``require_auth``, a small body limit and a tight k cap."""
    srv = start_server(
        embedder,
        tmp_path_factory.mktemp("secured-data"),
        collection=TINY,
        server_api_key=API_KEY,
        require_auth=True,
        max_body_bytes=4096,
        max_request_k=5,
    )
    from sieve.retriever.types import Document

    srv.state.index(TINY, create=True).writer.index_documents(
        [Document(doc_id=d["id"], text=d["text"], title=d["title"]) for d in TINY_DOCS], progress=False
    )
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def writes_locked(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[LiveServer]:
    """A server with an API key but no ``require_auth``: reads are open, writes need the key."""
    srv = start_server(embedder, tmp_path_factory.mktemp("locked-data"), collection=TINY, server_api_key=API_KEY)
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def timeouts(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[LiveServer]:
    """A server whose per-request limit (0.1 ms) no blocking work can meet."""
    srv = start_server(embedder, tmp_path_factory.mktemp("timeout-data"), collection=TINY, request_timeout_s=0.0001)
    from sieve.retriever.types import Document

    srv.state.index(TINY, create=True).writer.index_documents(
        [Document(doc_id=d["id"], text=d["text"], title=d["title"]) for d in TINY_DOCS], progress=False
    )
    yield srv
    srv.stop()


@pytest.fixture()
def http(live: LiveServer) -> Iterator[Any]:
    import httpx

    with httpx.Client(base_url=live.url, timeout=120) as client:
        yield client
