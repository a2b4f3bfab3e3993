"""``sieve.client.SieveClient`` against the live server: every endpoint, streams, and typed errors."""

from __future__ import annotations

import pytest
from live_server import API_KEY, TINY, TINY_DOCS

from sieve.core.defaults import DEFAULT_POLICY
from sieve.core.errors import InvalidInput, SieveError, UnknownCollection
from sieve.retriever.types import Document
from sieve.client import SearchResult, SieveClient, StreamEvent
from sieve.server.errors import PayloadTooLarge, Unauthorized

QUESTION = "What was the 2020 population of the city that Charles Lindbergh's transatlantic aircraft was named after?"


@pytest.fixture()
def client(live):
    with SieveClient(live.url) as c:
        yield c


def test_retrieve_and_batch(client: SieveClient) -> None:
    res = client.retrieve("capital of Germany", collection=TINY, k=2, mode="bm25")
    assert isinstance(res, SearchResult) and res.mode == "bm25" and res.collection == TINY
    assert res.results[0].id == "berlin#0" and res.results[0].metadata["country"] == "Germany"
    batch = client.retrieve_batch(["capital of Italy", "capital of France"], topk=1, collection=TINY)
    assert [row[0]["document"]["id"] for row in batch] == ["rome#0", "paris#0"]
    assert all(isinstance(row[0]["score"], float) for row in batch)


def test_search_and_stream_agree(client: SieveClient) -> None:
    res = client.search(QUESTION, k=4, include_trace=True)
    assert res.policy == DEFAULT_POLICY and 1 <= len(res.results) <= 4 and res.trace is not None
    events = list(client.search_stream(QUESTION, k=4))
    assert all(isinstance(e, StreamEvent) for e in events)
    assert events[-1].event == "result" and isinstance(events[-1].data, SearchResult)
    assert [r.id for r in events[-1].data.results] == [r.id for r in res.results]
    assert {"action", "observation", "usage"} <= {e.event for e in events[:-1]}


def test_context1_search(client: SieveClient) -> None:
    frames = list(client.context1_search(QUESTION, model="scout"))
    assert [f["type"] for f in frames][-2:] == ["usage", "done"]
    assert "<Document id=" in frames[-3]["data"]["params"][0]["text"]


def test_documents_round_trip(client: SieveClient) -> None:
    name = "srv-client-docs"
    report = client.upsert(
        name,
        [
            Document(doc_id="d1", text="The quick brown fox.", title="Fox"),
            {"id": "d2", "text": "A lazy dog sleeps.", "title": "Dog"},
        ],
    )
    assert report["added"] == 2
    assert client.upsert(name, [{"id": "d2", "text": "A lazy dog sleeps.", "title": "Dog"}])["unchanged"] == 1
    assert client.collections()[name] == 2
    doc = client.document("d1", collection=name)
    assert doc["text"] == "The quick brown fox." and doc["chunks"][0]["id"] == "d1#0"
    assert client.delete_document(name, "d1") == 1
    with pytest.raises(SieveError) as err:
        client.document("d1", collection=name)
    assert err.value.code == "not_found" and err.value.status == 404
    assert client.delete_collection(name) == 1
    assert name not in client.collections()


def test_errors_are_the_library_hierarchy(client: SieveClient) -> None:
    with pytest.raises(UnknownCollection) as err:
        client.retrieve("x", collection="no-such")
    assert err.value.status == 404 and "no-such" in err.value.message
    assert err.value.problem["type"] == "urn:sieve:error:unknown_collection"
    with pytest.raises(InvalidInput):
        client.retrieve("x", k=100_000)
    with pytest.raises(UnknownCollection):
        list(client.search_stream("x", collection="no-such"))
    with pytest.raises(UnknownCollection):
        list(client.context1_search("x", collection_name="no-such"))


def test_health_and_metrics(client: SieveClient) -> None:
    assert client.health()["status"] == "ok"
    assert "sieve_http_requests_total" in client.metrics()
    assert client.mcp_url == client.base_url + "/mcp"


def test_auth_with_and_without_key(secured, writes_locked) -> None:
    with SieveClient(secured.url) as anon:
        assert anon.health()["status"] == "ok"  # liveness stays open for probes
        for call in (
            lambda: anon.retrieve("x"),
            anon.collections,
            anon.metrics,
            lambda: anon.document("paris"),
            lambda: anon.search("x"),
            lambda: anon.retrieve_batch(["x"]),
        ):
            with pytest.raises(Unauthorized) as err:
                call()
            assert err.value.status == 401
    with SieveClient(secured.url, api_key="wrong") as bad, pytest.raises(Unauthorized) as err:
        bad.collections()
    assert "different key" in err.value.message
    with SieveClient(secured.url, api_key=API_KEY) as ok:
        assert ok.retrieve("capital of Italy", k=1).results[0].doc_id == "rome"
        assert ok.collections() == {TINY: 3}
        with pytest.raises(InvalidInput):  # this server caps k at 5
            ok.retrieve("x", k=6)
        with pytest.raises(PayloadTooLarge):
            ok.upsert(TINY, [{"id": "big", "text": "word " * 2000}])

    # API key without SIEVE_REQUIRE_AUTH: reads open, writes need the key.
    with SieveClient(writes_locked.url) as anon:
        with pytest.raises(Unauthorized):
            anon.upsert(TINY, TINY_DOCS)
        assert anon.collections() == {}
    with SieveClient(writes_locked.url, api_key=API_KEY) as ok:
        assert ok.upsert(TINY, TINY_DOCS)["added"] == 3
    with SieveClient(writes_locked.url) as anon:
        assert anon.retrieve("capital of France", k=1).results[0].doc_id == "paris"
        with pytest.raises(Unauthorized):
            anon.delete_document(TINY, "paris")
        with pytest.raises(Unauthorized):
            anon.delete_collection(TINY)
