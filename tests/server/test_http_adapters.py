"""The LangChain and LlamaIndex retrievers against the live server, and in-process through ``sieve.Sieve``."""

from __future__ import annotations

import pytest
from live_server import TINY, TINY_DOCS

from sieve.core.errors import InvalidInput

QUESTION = "What was the 2020 population of the city that Charles Lindbergh's transatlantic aircraft was named after?"


def test_langchain_retriever_over_http(live) -> None:
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from sieve.adapters.langchain import SieveRetriever

    retriever = SieveRetriever(base_url=live.url, k=5)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke(QUESTION)
    assert 1 <= len(docs) <= 5 and all(isinstance(d, Document) for d in docs)
    # Same evidence, same order, as the HTTP API gives.
    import httpx

    api = httpx.post(live.url + "/v1/search", json={"query": QUESTION, "k": 5}, timeout=120).json()["results"]
    assert [d.id for d in docs] == [x["id"] for x in api]
    d = docs[0]
    assert d.metadata["id"] == d.id and d.metadata["doc_id"] == api[0]["doc_id"] and d.metadata["rank"] == 1
    assert d.metadata["score"] == api[0]["score"] and d.page_content == api[0]["text"]

    plain = SieveRetriever(base_url=live.url, collection=TINY, k=1, mode="hybrid").invoke("capital of Italy")
    assert [p.id for p in plain] == ["rome#0"] and plain[0].metadata["country"] == "Italy"
    # Batch/async paths of BaseRetriever work unchanged.
    assert [
        len(x)
        for x in SieveRetriever(base_url=live.url, collection=TINY, k=2, mode="bm25").batch(
            ["capital of France", "capital of Germany"]
        )
    ] == [2, 2]


def test_llamaindex_retriever_over_http(live) -> None:
    from llama_index.core.schema import NodeWithScore

    from sieve.adapters.llamaindex import SieveRetriever

    nodes = SieveRetriever(live.url, collection=TINY, k=2, mode="hybrid").retrieve("capital of Germany")
    assert all(isinstance(n, NodeWithScore) for n in nodes) and len(nodes) == 2
    assert nodes[0].node.node_id == "berlin#0" and nodes[0].node.metadata["doc_id"] == "berlin"
    assert nodes[0].score >= nodes[1].score and nodes[0].node.get_content().startswith("Berlin is")
    agentic = SieveRetriever(live.url, k=3).retrieve(QUESTION)
    assert 1 <= len(agentic) <= 3 and agentic[0].node.metadata["rank"] == 1


def test_adapters_in_process(tmp_path, embedder) -> None:
    from llama_index.core.schema import QueryBundle

    from sieve.retriever import RetrieverConfig
    from sieve.retriever.types import Document
    from sieve import Sieve
    from sieve.adapters.langchain import SieveRetriever as LCRetriever
    from sieve.adapters.llamaindex import SieveRetriever as LIRetriever

    s = Sieve("inproc", config=RetrieverConfig(data_dir=tmp_path))
    from sieve.retriever import CorpusIndex

    s._index = CorpusIndex.open(s.config, "inproc", create=True, embedder=embedder)  # share the loaded model
    s.add_documents([Document(doc_id=d["id"], text=d["text"], title=d["title"]) for d in TINY_DOCS])
    lc = LCRetriever(sieve=s, k=1, mode="dense").invoke("capital of Germany")
    assert [d.id for d in lc] == ["berlin#0"]
    lc_agent = LCRetriever(sieve=s, k=2).invoke("Which city is the capital of Italy?")
    assert lc_agent and lc_agent[0].metadata["doc_id"] == "rome"
    li = LIRetriever(sieve=s, k=1, mode="bm25").retrieve(QueryBundle("capital of France"))
    assert li[0].node.node_id == "paris#0"
    from sieve.core.errors import InvalidInput

    with pytest.raises(InvalidInput, match=r"unknown \['bogus'\]"):  # not dataclasses' bare TypeError
        s.search("capital of Italy", bogus=1)


def test_adapter_arguments_are_checked(live) -> None:
    from sieve.adapters.langchain import SieveRetriever

    with pytest.raises(InvalidInput):
        SieveRetriever()  # neither base_url, client nor sieve
    with pytest.raises(ValueError, match="mode"):  # LangChain retrievers are pydantic models: checked on creation
        SieveRetriever(base_url=live.url, mode="magic")
    from sieve.adapters.llamaindex import SieveRetriever as LIRetriever

    with pytest.raises(InvalidInput):
        LIRetriever(live.url, mode="magic").retrieve("x")
