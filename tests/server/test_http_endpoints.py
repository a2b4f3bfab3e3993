"""The real server over loopback HTTP: retrieval, Search-R1, documents, health, metrics, error shapes."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from live_server import TINY, assert_problem


# -- retrieval --------------------------------------------------------------------------------------
def test_retrieve_finds_the_passage_that_answers(http: httpx.Client) -> None:
    r = http.post("/v1/retrieve", json={"query": "capital of Germany", "collection": TINY, "k": 2})
    assert r.status_code == 200
    body = r.json()
    assert body["collection"] == TINY and body["mode"] == "hybrid"
    assert [x["doc_id"] for x in body["results"]][0] == "berlin"
    assert [x["rank"] for x in body["results"]] == [1, 2]
    first = body["results"][0]
    assert first["id"] == "berlin#0" and first["title"] == "Berlin" and "Germany" in first["text"]
    assert first["metadata"]["country"] == "Germany"
    scores = [x["score"] for x in body["results"]]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_retrieve_modes_and_default_collection(http: httpx.Client, live, mode: str) -> None:
    # The default collection is `sample`: the shipped corpus mentions Lindbergh's aircraft.
    r = http.post("/v1/retrieve", json={"query": "Spirit of St. Louis aircraft Lindbergh", "k": 5, "mode": mode})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["collection"] == "sample" and body["mode"] == mode and len(body["results"]) == 5
    assert any("Lindbergh" in x["text"] or "Spirit" in x["title"] for x in body["results"])


def test_retrieve_filters_and_exclude(http: httpx.Client) -> None:
    r = http.post(
        "/v1/retrieve", json={"query": "capital city", "collection": TINY, "k": 3, "filters": {"country": "Italy"}}
    )
    assert r.status_code == 200
    assert [x["doc_id"] for x in r.json()["results"]] == ["rome"]
    r = http.post(
        "/v1/retrieve", json={"query": "capital of Germany", "collection": TINY, "k": 3, "exclude": ["berlin#0"]}
    )
    assert "berlin" not in [x["doc_id"] for x in r.json()["results"]]


def test_retrieve_bad_filter_is_422(http: httpx.Client) -> None:
    r = http.post("/v1/retrieve", json={"query": "x", "collection": TINY, "filters": {"$bogus": 1}})
    assert_problem(r, 422, "invalid_input")


def test_search_r1_batch_shape(http: httpx.Client) -> None:
    r = http.post(
        "/retrieve",
        json={
            "queries": ["capital of Germany", "capital of Italy"],
            "topk": 2,
            "return_scores": True,
            "collection": TINY,
        },
    )
    assert r.status_code == 200
    result = r.json()["result"]
    assert len(result) == 2 and all(len(row) == 2 for row in result)
    top = result[0][0]
    assert set(top) == {"document", "score"} and set(top["document"]) == {"id", "contents"}
    assert top["document"]["id"] == "berlin#0"
    # veRL reads the title back from the first line, in quotes.
    title, _, text = top["document"]["contents"].partition("\n")
    assert title == '"Berlin"' and text.startswith("Berlin is the capital")
    assert result[1][0]["document"]["id"] == "rome#0"


def test_search_r1_without_scores_returns_plain_documents(http: httpx.Client) -> None:
    r = http.post("/retrieve", json={"queries": ["capital of France"], "topk": 1, "collection": TINY})
    assert r.status_code == 200
    assert r.json() == {"result": [[{"id": "paris#0", "contents": r.json()["result"][0][0]["contents"]}]]}
    assert r.json()["result"][0][0]["contents"].startswith('"Paris"\n')


def test_search_r1_default_topk_is_3(http: httpx.Client) -> None:
    r = http.post("/retrieve", json={"queries": ["Lindbergh"], "return_scores": True})
    assert r.status_code == 200 and len(r.json()["result"][0]) == 3


# -- documents ----------------------------------------------------------------------------------------
def test_document_lifecycle(http: httpx.Client) -> None:
    name = "srv-lifecycle"
    docs = [
        {
            "id": "a",
            "title": "Alpha",
            "text": "Alpha is the first letter of the Greek alphabet. " * 30,
            "source": "https://example.org/alpha",
            "metadata": {"lang": "el"},
        },
        {"id": "b/with slash", "title": "Beta", "text": "Beta is the second letter."},
    ]
    r = http.post(f"/v1/collections/{name}/documents", json={"documents": docs})
    assert r.status_code == 200, r.text
    first = r.json()
    assert (first["added"], first["updated"], first["unchanged"]) == (2, 0, 0) and first["chunks_written"] >= 3
    # Idempotent: the same batch again writes nothing.
    again = http.post(f"/v1/collections/{name}/documents", json={"documents": docs}).json()
    assert (again["added"], again["updated"], again["unchanged"], again["chunks_written"]) == (0, 0, 2, 0)
    # Changed text: an update.
    changed = http.post(
        f"/v1/collections/{name}/documents",
        json={"documents": [{**docs[1], "text": "Beta is the second letter, after alpha."}]},
    ).json()
    assert (changed["added"], changed["updated"]) == (0, 1)

    cols = http.get("/v1/collections").json()["collections"]
    assert {"name": name, "chunks": first["chunks_written"]} in cols

    doc = http.get("/v1/documents/a", params={"collection": name}).json()
    assert doc["id"] == "a" and doc["title"] == "Alpha" and doc["metadata"]["lang"] == "el"
    assert len(doc["chunks"]) >= 2 and doc["text"] == docs[0]["text"].strip()  # stitched back exactly
    by_chunk = http.get("/v1/documents/a%231", params={"collection": name}).json()
    assert by_chunk["id"] == "a" and by_chunk["text"] == doc["text"]
    slash = http.get("/v1/documents/b%2Fwith%20slash", params={"collection": name})
    assert slash.status_code == 200 and slash.json()["text"] == "Beta is the second letter, after alpha."

    r = http.delete(f"/v1/collections/{name}/documents/a")
    assert r.status_code == 200 and r.json() == {"collection": name, "deleted": 1}
    assert_problem(http.get("/v1/documents/a", params={"collection": name}), 404, "not_found")
    assert_problem(http.delete(f"/v1/collections/{name}/documents/a"), 404, "not_found")

    r = http.delete(f"/v1/collections/{name}")
    assert r.status_code == 200 and r.json()["deleted"] == 1
    assert name not in {c["name"] for c in http.get("/v1/collections").json()["collections"]}
    assert_problem(http.post("/v1/retrieve", json={"query": "alpha", "collection": name}), 404, "unknown_collection")


def test_a_chat_turn_sent_alone_is_searched_with_the_context_sent_with_it(http: httpx.Client) -> None:
    """A chat client posts each turn as it is said: the turn before it comes as ``context`` (within one
    request Sieve takes it from the previous turn), searched with the turn and never returned."""
    name, session = "srv-chat", "Anna & Ben, session 1"
    first = {"id": "t1", "title": session, "text": "Anna: What did you cook for the street party on Saturday?"}
    answer = {
        "id": "t2",
        "title": session,
        "text": "Ben: A big pot of chili with smoked peppers.",
        "context": first["text"],
    }
    later = [  # another session, so that BM25's words are rare enough to score
        {"id": f"u{i}", "title": "Anna & Ben, session 2", "text": t}
        for i, t in enumerate(
            ["Ben: My bike got a flat tyre.", "Anna: Did you fix it?", "Ben: Yes, with a spare tube."]
        )
    ]
    for docs in (later, [first], [answer]):  # one request a turn
        assert http.post(f"/v1/collections/{name}/documents", json={"documents": docs}).status_code == 200
    r = http.post("/v1/retrieve", json={"query": "street party cook", "collection": name, "k": 2, "mode": "bm25"})
    assert [(x["doc_id"], x["text"]) for x in r.json()["results"]] == [
        ("t1", first["text"]),
        ("t2", answer["text"]),  # found through its context alone; the turn itself is returned
    ]
    bad = {**answer, "context": 7}
    assert_problem(http.post(f"/v1/collections/{name}/documents", json={"documents": [bad]}), 422, "invalid_input")
    assert http.delete(f"/v1/collections/{name}").status_code == 200


def test_upsert_rejects_duplicate_ids_and_bad_names(http: httpx.Client) -> None:
    doc = {"id": "x", "text": "some text"}
    assert_problem(
        http.post("/v1/collections/srv-dups/documents", json={"documents": [doc, doc]}), 422, "invalid_input"
    )
    assert_problem(http.post("/v1/collections/a/documents", json={"documents": [doc]}), 422, "invalid_input")
    assert_problem(http.post("/v1/collections/srv-ok/documents", json={"documents": []}), 422, "invalid_input")


def test_empty_collection_is_409(http: httpx.Client, live) -> None:
    live.state.index("srv-empty", create=True)
    assert_problem(http.post("/v1/retrieve", json={"query": "x", "collection": "srv-empty"}), 409, "empty_corpus")
    assert_problem(http.post("/retrieve", json={"queries": ["x"], "collection": "srv-empty"}), 409, "empty_corpus")


# -- errors -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "method,path,body",
    [
        ("POST", "/v1/retrieve", {"query": "x", "collection": "no-such"}),
        ("POST", "/retrieve", {"queries": ["x"], "collection": "no-such"}),
        ("GET", "/v1/documents/d1?collection=no-such", None),
        ("DELETE", "/v1/collections/no-such/documents/d1", None),
        ("DELETE", "/v1/collections/no-such", None),
    ],
)
def test_unknown_collection_is_404_naming_the_valid_ones(http: httpx.Client, method: str, path: str, body) -> None:
    body = assert_problem(http.request(method, path, json=body), 404, "unknown_collection")
    assert "'no-such'" in body["detail"] and TINY in body["detail"]


def test_bad_json_is_422_with_detail(http: httpx.Client) -> None:
    r = http.post("/v1/retrieve", content=b'{"query": "x",', headers={"content-type": "application/json"})
    body = assert_problem(r, 422, "invalid_input")
    assert "JSON" in body["detail"] and body["errors"][0]["type"] == "json_invalid"


@pytest.mark.parametrize(
    "payload,where",
    [
        ({"query": ""}, "query"),
        ({"query": "x", "k": 0}, "k"),
        ({"query": "x", "top_k": 3}, "top_k"),  # unknown fields are errors, not silently ignored
        ({"query": "x", "mode": "magic"}, "mode"),
        ({}, "query"),
    ],
)
def test_invalid_fields_are_422_naming_the_field(http: httpx.Client, payload: dict, where: str) -> None:
    body = assert_problem(http.post("/v1/retrieve", json=payload), 422, "invalid_input")
    assert any(where in e["loc"] for e in body["errors"])
    assert where in body["detail"]


def test_validation_messages_are_words_not_regexes(http: httpx.Client) -> None:
    body = assert_problem(http.post("/v1/retrieve", json={"query": "   "}), 422, "invalid_input")
    assert "only whitespace" in body["detail"] and "\\S" not in body["detail"]
    body = assert_problem(http.post("/v1/retrieve", json={"query": "x", "collection": "a b"}), 422, "invalid_input")
    assert "collection name of 3-512 characters" in body["detail"] and "^[" not in body["detail"]
    r = http.post("/v1/retrieve", content=b'{"query": "x"}')  # JSON, but no Content-Type
    assert "Content-Type: application/json" in assert_problem(r, 422, "invalid_input")["detail"]


def test_k_above_server_max_is_422(http: httpx.Client, live) -> None:
    cap = live.state.settings.max_request_k
    for route in ("/v1/retrieve", "/v1/search"):  # one cap on k for plain and agentic search
        for k in (cap + 1, 100_000):  # one message, the server's cap, however far above it
            body = assert_problem(http.post(route, json={"query": "x", "k": k}), 422, "invalid_input")
            assert f"between 1 and {cap}" in body["detail"], (route, body["detail"])


def test_unknown_route_and_method(http: httpx.Client) -> None:
    assert_problem(http.get("/v2/nothing"), 404, "not_found")
    r = http.get("/v1/retrieve")
    assert_problem(r, 405, "method_not_allowed")
    assert "POST" in r.headers.get("allow", "")


def test_oversize_body_is_413(secured) -> None:
    headers = {"Authorization": "Bearer test-key-3f9a", "content-type": "application/json"}
    big = json.dumps({"query": "x" * 5000}).encode()
    with httpx.Client(base_url=secured.url, headers=headers) as c:
        body = assert_problem(c.post("/v1/retrieve", content=big), 413, "payload_too_large")
        assert "4096" in body["detail"]

        def chunked():  # no Content-Length: the limit must hold for streamed uploads too
            for i in range(0, len(big), 1000):
                yield big[i : i + 1000]

        assert_problem(c.post("/v1/retrieve", content=chunked()), 413, "payload_too_large")
        small = c.post("/v1/retrieve", json={"query": "capital of Italy", "k": 1})
        assert small.status_code == 200 and small.json()["results"][0]["doc_id"] == "rome"


# -- health and metrics -------------------------------------------------------------------------------
def test_healthz(http: httpx.Client) -> None:
    body = http.get("/healthz").json()
    assert body["status"] == "ok" and body["embedder_loaded"] is True and "sample" in body["collections_loaded"]


def _counter(text: str, route: str, status: str, method: str = "POST") -> float:
    pat = (
        rf'^sieve_http_requests_total\{{method="{method}",route="{re.escape(route)}",status="{status}"\}} '
        r"([0-9.e+]+)$"
    )
    m = re.search(pat, text, re.M)
    return float(m.group(1)) if m else 0.0


def test_metrics_count_requests_by_route_and_status(http: httpx.Client) -> None:
    before = http.get("/metrics").text
    for _ in range(3):
        http.post("/v1/retrieve", json={"query": "capital", "collection": TINY, "k": 1})
    http.post("/v1/retrieve", json={"query": "x", "k": 0})
    after = http.get("/metrics")
    assert after.headers["content-type"].startswith("text/plain")
    text = after.text
    assert _counter(text, "/v1/retrieve", "200") - _counter(before, "/v1/retrieve", "200") == 3
    assert _counter(text, "/v1/retrieve", "422") - _counter(before, "/v1/retrieve", "422") == 1
    assert 'sieve_http_request_duration_seconds_bucket{le="0.005",method="POST",route="/v1/retrieve"}' in text
    assert "sieve_retrieve_queries_total" in text
    # Raw paths never become labels (bounded cardinality).
    http.get("/v1/documents/some-random-id-123", params={"collection": TINY})
    assert "some-random-id-123" not in http.get("/metrics").text


def test_openapi_documents_every_endpoint(http: httpx.Client) -> None:
    paths = http.get("/openapi.json").json()["paths"]
    for p in (
        "/v1/search",
        "/search",
        "/v1/retrieve",
        "/retrieve",
        "/v1/collections",
        "/v1/collections/{name}/documents",
        "/v1/collections/{name}/documents/{doc_id}",
        "/v1/documents/{doc_id}",
        "/healthz",
        "/metrics",
    ):
        assert p in paths, p


def test_long_collection_names_work(http: httpx.Client) -> None:
    # Found by fuzzing: a 512-character name overflowed the 255-byte file-name limit of the BM25 cache.
    name = "srv-" + "x" * 300
    r = http.post(f"/v1/collections/{name}/documents", json={"documents": [{"id": "d", "text": "long names work"}]})
    assert r.status_code == 200, r.text
    hit = http.post("/v1/retrieve", json={"query": "long names", "collection": name, "k": 1}).json()["results"][0]
    assert hit["id"] == "d#0"
    assert http.delete(f"/v1/collections/{name}").status_code == 200


def test_collection_deleted_behind_the_servers_back(http: httpx.Client, live) -> None:
    # Found by fuzzing with concurrent workers: a cached index outliving its Chroma collection.
    name = "srv-vanishing"
    doc = {"documents": [{"id": "v", "text": "this collection will vanish"}]}
    assert http.post(f"/v1/collections/{name}/documents", json=doc).status_code == 200
    assert http.post("/v1/retrieve", json={"query": "vanish", "collection": name}).status_code == 200
    live.state.client.delete_collection(name)  # as `sieve collections --delete` in another process would
    for _ in range(2):  # stale cache entry first, then a fresh lookup: a 404 both times, never a 500
        assert_problem(
            http.post("/v1/retrieve", json={"query": "vanish", "collection": name}), 404, "unknown_collection"
        )
    # Re-created under the same name: served from the new collection.
    assert (
        http.post(
            f"/v1/collections/{name}/documents",
            json={"documents": [{"id": "w", "text": "a new collection, same name"}]},
        ).json()["added"]
        == 1
    )
    hits = http.post("/v1/retrieve", json={"query": "new collection", "collection": name}).json()["results"]
    assert [h["id"] for h in hits] == ["w#0"]
