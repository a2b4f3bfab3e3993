"""What the playground page stands on, over loopback HTTP: its files, its config, the browse endpoints,
offline API docs, list metadata and the prune summaries in the agent stream."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from live_server import TINY, assert_problem

from sieve.data import DEMO_QUESTION
from sieve.core.defaults import DEFAULT_POLICY


def test_the_page_and_its_files_are_served_from_the_package(http: httpx.Client) -> None:
    page = http.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assets = re.findall(r'(?:src|href)="(/[^"]+)"', page.text)
    assert {"/static/playground/app.js", "/static/playground/style.css"} <= set(assets)
    assert not re.search(r'(?:src|href)="(?:https?:)?//', page.text)  # nothing from another host
    for asset in assets:
        r = http.get(asset)
        assert r.status_code == 200 and len(r.content) > 500, asset
    assert_problem(http.get("/static/playground/missing.js"), 404, "not_found")


def test_playground_config(http: httpx.Client, live) -> None:
    cfg = http.get("/playground/config").json()
    # The two that need no model server: the heuristic and the shipped learned checkpoint.
    assert (
        cfg["collection"] == "sample"
        and cfg["policy"] == DEFAULT_POLICY
        and cfg["policies"] == ["heuristic", "learned"]
    )
    assert cfg["demo_question"] == DEMO_QUESTION and cfg["budget_tokens"] == live.state.settings.budget_tokens


def test_docs_and_redoc_load_their_assets_from_this_server(http: httpx.Client) -> None:
    for path in ("/docs", "/redoc"):
        html = http.get(path).text
        urls = re.findall(r'(?:src|href)="([^"]+)"', html) + re.findall(r"url: '([^']+)'", html)
        scripts = [u for u in urls if u.endswith(".js")]
        assert scripts and all(u.startswith("/") for u in scripts), (path, urls)
        for u in scripts:
            assert http.get(u).status_code == 200, u
        assert "cdn.jsdelivr" not in html and "fonts.googleapis" not in html


def test_list_documents_pages_through_a_collection(http: httpx.Client) -> None:
    first = http.get(f"/v1/collections/{TINY}/documents", params={"limit": 2}).json()
    assert first["collection"] == TINY and first["total"] == 3 and first["offset"] == 0
    assert len(first["documents"]) == 2
    rest = http.get(f"/v1/collections/{TINY}/documents", params={"offset": 2, "limit": 2}).json()
    ids = [d["id"] for d in first["documents"] + rest["documents"]]
    assert sorted(ids) == ["berlin", "paris", "rome"]
    paris = next(d for d in first["documents"] + rest["documents"] if d["id"] == "paris")
    assert paris == {"id": "paris", "title": "Paris", "source": paris["source"], "chunks": 1}
    assert_problem(http.get("/v1/collections/no-such/documents"), 404, "unknown_collection")
    assert_problem(http.get(f"/v1/collections/{TINY}/documents", params={"limit": 0}), 422, "invalid_input")


def test_chunk_lookup_with_neighbours(http: httpx.Client) -> None:
    doc = {
        "id": "long",
        "title": "Long",
        "text": " ".join(f"Sentence number {i} about rivers and bridges." for i in range(120)),
    }
    r = http.post("/v1/collections/srv-browse/documents", json={"documents": [doc]})
    assert r.status_code == 200, r.text
    n = r.json()["chunks_written"]
    assert n >= 3
    mid = http.get("/v1/chunks/long%231", params={"collection": "srv-browse", "window": 1}).json()
    assert mid["id"] == "long#1" and mid["doc_id"] == "long" and mid["n_chunks"] == n and mid["title"] == "Long"
    assert [c["id"] for c in mid["chunks"]] == ["long#0", "long#1", "long#2"]
    edge = http.get("/v1/chunks/long%230", params={"collection": "srv-browse", "window": 0}).json()
    assert [c["id"] for c in edge["chunks"]] == ["long#0"]
    assert_problem(http.get("/v1/chunks/long", params={"collection": "srv-browse"}), 404, "not_found")  # a doc id
    assert_problem(
        http.get("/v1/chunks/long%231", params={"collection": "srv-browse", "window": 99}), 422, "invalid_input"
    )


def test_list_metadata_is_stored_as_given_and_mixed_lists_are_rejected(http: httpx.Client) -> None:
    good = {"id": "tagged", "text": "A tagged text about harbours.", "metadata": {"tags": ["port", "sea"], "n": [1, 2]}}
    assert http.post("/v1/collections/srv-lists/documents", json={"documents": [good]}).status_code == 200
    got = http.get("/v1/documents/tagged", params={"collection": "srv-lists"}).json()
    assert got["metadata"] == {"tags": ["port", "sea"], "n": [1, 2]}
    hits = http.post(
        "/v1/retrieve",
        json={
            "query": "harbours",
            "collection": "srv-lists",
            "mode": "dense",
            "filters": {"tags": {"$contains": "sea"}},
        },
    ).json()["results"]
    assert [h["doc_id"] for h in hits] == ["tagged"]
    bad = {"id": "mixed", "text": "Mixed list.", "metadata": {"tags": ["a", 1]}}
    body = assert_problem(
        http.post("/v1/collections/srv-lists/documents", json={"documents": [bad]}), 422, "invalid_input"
    )
    assert "mixing int and str" in body["detail"]
    # A rejected first write leaves no collection behind.
    assert_problem(http.post("/v1/collections/srv-never/documents", json={"documents": [bad]}), 422, "invalid_input")
    names = {c["name"] for c in http.get("/v1/collections").json()["collections"]}
    assert "srv-never" not in names and "srv-lists" in names


def test_eval_caches_are_hidden_unless_asked(http: httpx.Client, live) -> None:
    live.state.index("eval-srv-fp32-0123456789", create=True)
    try:
        names = {c["name"] for c in http.get("/v1/collections").json()["collections"]}
        assert "eval-srv-fp32-0123456789" not in names and "sample" in names
        every = {c["name"] for c in http.get("/v1/collections", params={"include_eval": True}).json()["collections"]}
        assert "eval-srv-fp32-0123456789" in every
    finally:
        live.state.delete_collection("eval-srv-fp32-0123456789")


def test_stream_results_without_chunks_carry_a_summary(http: httpx.Client) -> None:
    with http.stream("POST", "/v1/search", json={"query": DEMO_QUESTION, "k": 5, "stream": True}) as r:
        text = r.read().decode()
    observations = [json.loads(m.group(1)) for m in re.finditer(r"event: observation\r?\ndata: (.*)\r?\n", text)]
    results = [res for o in observations for res in o["results"]]
    prunes = [res for res in results if res["tool"] == "prune"]
    assert prunes and all(res["summary"].startswith("Pruned") for res in prunes), prunes[:2]
    assert all("summary" not in res for res in results if res["chunk_ids"])  # chunk text never rides along


@pytest.mark.parametrize("path", ["/", "/playground/config"])
def test_page_routes_stay_out_of_the_openapi_schema(http: httpx.Client, path: str) -> None:
    assert path not in http.get("/openapi.json").json()["paths"]


def test_under_require_auth_the_page_loads_and_its_data_needs_the_key(secured) -> None:
    from live_server import API_KEY

    with httpx.Client(base_url=secured.url, timeout=60) as c:
        assert c.get("/").status_code == 200 and c.get("/static/playground/app.js").status_code == 200
        assert_problem(c.get("/playground/config"), 401, "unauthorized")
        ok = c.get("/playground/config", headers={"Authorization": f"Bearer {API_KEY}"})
        assert ok.status_code == 200 and ok.json()["collection"] == TINY
