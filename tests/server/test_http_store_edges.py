"""Issue 24, item 7: the document routes' edges, over real sockets against real uvicorn.

Huge numbers are a 422, never a 500; a document id never passes for a chunk id; collection names
reach only callers who could list them; one client's idle connections cannot lock out the others.
"""

from __future__ import annotations

import socket
import time
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from live_server import API_KEY, TINY, TINY_DOCS, assert_problem, start_server

from sieve.core.errors import InvalidInput

if TYPE_CHECKING:
    from collections.abc import Iterator

    from live_server import LiveServer

KEY = {"Authorization": f"Bearer {API_KEY}"}
EVAL_CACHE = "eval-edges-fp32-0123456789"


@pytest.fixture(scope="module")
def open_reads(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[LiveServer]:
    """Reads open, writes need the key; TINY indexed, plus an (empty) eval cache."""
    srv = start_server(embedder, tmp_path_factory.mktemp("edges-data"), collection=TINY, server_api_key=API_KEY)
    r = httpx.post(
        f"{srv.url}/v1/collections/{TINY}/documents", json={"documents": TINY_DOCS}, headers=KEY, timeout=120
    )
    assert r.status_code == 200, r.text
    srv.state.index(EVAL_CACHE, create=True)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def closed(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[LiveServer]:
    """``require_auth``: every route but /healthz needs the key."""
    srv = start_server(
        embedder, tmp_path_factory.mktemp("edges-closed"), collection=TINY, server_api_key=API_KEY, require_auth=True
    )
    srv.state.index(TINY, create=True)
    yield srv
    srv.stop()


@pytest.mark.parametrize(
    "query",
    [
        "offset=100000000000000000000",
        "offset=2147483648",
        "offset=-1",
        "limit=0",
        "limit=1001",
        "limit=99999999999999999999999",
        "offset=1e3",
    ],
)
def test_extreme_paging_numbers_are_a_422(open_reads, query) -> None:
    r = httpx.get(f"{open_reads.url}/v1/collections/{TINY}/documents?{query}", timeout=30)
    assert_problem(r, 422, "invalid_input")


def test_the_largest_offset_allowed_answers_an_empty_page(open_reads) -> None:
    r = httpx.get(f"{open_reads.url}/v1/collections/{TINY}/documents?offset=2147483647", timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["documents"] == [] and r.json()["total"] == len(TINY_DOCS)


@pytest.mark.parametrize(
    "path", ["/v1/chunks/paris%230?window=100000000000000000000", "/v1/chunks/paris%230?window=-1"]
)
def test_extreme_window_is_a_422(open_reads, path) -> None:
    assert_problem(httpx.get(f"{open_reads.url}{path}", timeout=30), 422, "invalid_input")


def test_a_document_id_in_the_form_of_a_chunk_id_is_refused(open_reads) -> None:
    url = open_reads.url
    r = httpx.post(
        f"{url}/v1/collections/{TINY}/documents",
        headers=KEY,
        timeout=60,
        json={"documents": [{"id": "paris#0", "text": "A second Paris, in Texas."}]},
    )
    body = assert_problem(r, 422, "invalid_input")
    assert "'paris#0'" in body["detail"] and "chunk" in body["detail"]
    # Ids with '#' that are no chunk id are fine, and read back and delete as themselves.
    r = httpx.post(
        f"{url}/v1/collections/{TINY}/documents",
        headers=KEY,
        timeout=60,
        json={"documents": [{"id": "notes#draft", "text": "Draft notes on Lyon, a city of France."}]},
    )
    assert r.status_code == 200 and r.json()["added"] == 1, r.text
    got = httpx.get(f"{url}/v1/documents/notes%23draft", params={"collection": TINY}, timeout=30)
    assert got.status_code == 200 and got.json()["id"] == "notes#draft", got.text
    # A chunk id reads its document (as documented), and deleting it deletes nothing: it names no document.
    assert httpx.get(f"{url}/v1/documents/paris%230", params={"collection": TINY}, timeout=30).json()["id"] == "paris"
    assert_problem(
        httpx.delete(f"{url}/v1/collections/{TINY}/documents/paris%230", headers=KEY, timeout=30), 404, "not_found"
    )
    assert httpx.get(f"{url}/v1/documents/paris", params={"collection": TINY}, timeout=30).status_code == 200
    r = httpx.delete(f"{url}/v1/collections/{TINY}/documents/notes%23draft", headers=KEY, timeout=60)
    assert r.status_code == 200 and r.json()["deleted"] == 1, r.text


def test_the_library_refuses_chunk_shaped_document_ids(make_index) -> None:
    from sieve.retriever.types import Document

    index = make_index("ids")
    index.writer.index_documents([Document(doc_id="first", text="The first document.")], progress=False)
    with pytest.raises(InvalidInput, match="'collide#0'"):
        index.writer.index_documents(
            [Document(doc_id="collide", text="one"), Document(doc_id="collide#0", text="two")], progress=False
        )
    assert set(index.documents()) == {"first"}  # a list is checked whole before anything is written


def test_healthz_names_collections_only_to_a_caller_with_the_key(closed) -> None:
    anonymous = httpx.get(f"{closed.url}/healthz", timeout=30)
    assert anonymous.status_code == 200 and anonymous.json()["collections_loaded"] == []
    keyed = httpx.get(f"{closed.url}/healthz", headers=KEY, timeout=30)
    assert keyed.status_code == 200 and keyed.json()["collections_loaded"] == [TINY]


def test_an_unknown_collection_404_lists_the_users_collections_only(open_reads) -> None:
    r = httpx.get(f"{open_reads.url}/v1/collections/nowhere/documents", timeout=30)
    body = assert_problem(r, 404, "unknown_collection")
    assert TINY in body["detail"] and EVAL_CACHE not in body["detail"], body["detail"]


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[LiveServer]:
    srv = start_server(
        embedder,
        tmp_path_factory.mktemp("edges-crowded"),
        collection=TINY,
        max_connections=16,
        max_client_connections=4,
        header_timeout_s=8.0,
    )
    yield srv
    srv.stop()


def _get_from(srv: LiveServer, address: str) -> httpx.Response:
    with httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=10) as client:
        return client.get(f"{srv.url}/healthz")


def test_one_clients_idle_connections_do_not_lock_out_the_others(crowded) -> None:
    host, port = crowded.url.removeprefix("http://").split(":")
    idle = [socket.create_connection((host, int(port)), timeout=10) for _ in range(20)]  # more than the global 16
    try:
        refused = []
        for sock in idle[4:]:  # beyond its 4, this client's connections are refused at once
            refused.append(sock.recv(200))
        assert all(r.startswith(b"HTTP/1.1 503 ") for r in refused), refused[:2]
        t0 = time.monotonic()
        other = _get_from(crowded, "127.0.0.2")  # another client address is served as if nothing happened
        assert other.status_code == 200 and time.monotonic() - t0 < 2, other.text
        assert _get_from(crowded, "127.0.0.1").status_code == 503  # the crowding client waits for its own
    finally:
        for sock in idle:
            sock.close()
    deadline = time.monotonic() + 10
    while _get_from(crowded, "127.0.0.1").status_code != 200:  # its places come back as it closes them
        assert time.monotonic() < deadline
        time.sleep(0.1)
