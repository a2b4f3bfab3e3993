"""The MCP endpoint over loopback HTTP with the real MCP SDK client: deep-research `search` and `fetch`."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import mcp  # noqa: F401  (a test extra: a missing one fails the run instead of skipping the endpoint's tests)
from live_server import API_KEY, TINY, assert_problem

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def run_mcp(url: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list, list]:
    from mcp import Client

    async def go() -> tuple[list, list]:
        async with Client(url) as client:
            tools = (await client.list_tools()).tools
            return tools, [await client.call_tool(name, args) for name, args in calls]

    return asyncio.run(go())


def test_mcp_tools_have_the_deep_research_shape(live) -> None:
    tools, (search, fetch, missing) = run_mcp(
        live.url + "/mcp",
        [
            ("search", {"query": "Charles Lindbergh transatlantic flight aircraft"}),
            ("fetch", {"id": "wiki-charles-lindbergh"}),
            ("fetch", {"id": "no-such-doc"}),
        ],
    )
    by_name = {t.name: t for t in tools}
    assert set(by_name) == {"search", "fetch"}
    assert by_name["search"].input_schema["required"] == ["query"]
    assert by_name["fetch"].input_schema["required"] == ["id"]

    assert not search.is_error
    results = search.structured_content["results"]
    assert results and all(set(r) == {"id", "title", "text", "url"} for r in results)
    assert "wiki-charles-lindbergh" in {r["id"].split("#")[0] for r in results}
    # The sample passages carry their Wikipedia URL as source; that is the citation link.
    assert all(r["url"].startswith("https://en.wikipedia.org/wiki/") for r in results)
    # The text content is the same JSON, for clients that read only `content`.
    assert '"results"' in search.content[0].text

    assert not fetch.is_error
    doc = fetch.structured_content
    assert set(doc) == {"id", "title", "text", "url", "metadata"}
    assert doc["title"] == "Charles Lindbergh" and "Lindbergh" in doc["text"]
    assert doc["metadata"]["doc_id"] == "wiki-charles-lindbergh" and doc["metadata"]["collection"] == "sample"
    assert doc["url"] == "https://en.wikipedia.org/wiki/Charles_Lindbergh"

    assert missing.is_error and "not_found" in missing.content[0].text and "no-such-doc" in missing.content[0].text


def test_mcp_needs_the_key_under_require_auth(secured) -> None:
    r = httpx.post(secured.url + "/mcp", json=INIT, headers=MCP_HEADERS)
    assert_problem(r, 401, "unauthorized")
    assert r.headers["www-authenticate"].startswith("Bearer")
    ok = httpx.post(secured.url + "/mcp", json=INIT, headers={**MCP_HEADERS, "Authorization": f"Bearer {API_KEY}"})
    assert ok.status_code == 200, ok.text
    assert ok.json()["result"]["serverInfo"]["name"] == "sieve"


def test_mcp_search_in_hybrid_mode_is_plain_retrieval(tmp_path, embedder) -> None:
    from live_server import TINY_DOCS, start_server

    from sieve.retriever.types import Document

    srv = start_server(embedder, tmp_path, collection=TINY, mcp_search="hybrid")
    try:
        srv.state.index(TINY, create=True).writer.index_documents(
            [Document(doc_id=d["id"], text=d["text"], title=d["title"]) for d in TINY_DOCS], progress=False
        )
        _, (res,) = run_mcp(srv.url + "/mcp", [("search", {"query": "capital of Italy"})])
        assert res.structured_content["results"][0]["id"] == "rome#0"
        assert len(res.structured_content["results"]) == 3  # k=10 capped by the 3 chunks there are
        # Without a URL source the link is this server's document endpoint, and it resolves.
        url = res.structured_content["results"][0]["url"]
        assert url == f"{srv.url}/v1/documents/rome?collection={TINY}"
        _, (doc,) = run_mcp(srv.url + "/mcp", [("fetch", {"id": "rome#0"})])
        assert httpx.get(url).json()["text"] == doc.structured_content["text"]
    finally:
        srv.stop()
