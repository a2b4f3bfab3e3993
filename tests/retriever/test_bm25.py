"""The sparse BM25 scorer against rank-bm25's BM25Okapi, the slow reference."""

from __future__ import annotations

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from sieve.retriever.bm25 import BM25_FILE, SparseBM25, tokenize

QUERIES = [
    "Stanley Kubrick science fiction film",
    "river river river delta",  # repeated terms count again, as in rank-bm25
    "opera composer Puccini Puccini verismo",
    "the city of Paris",
    "Who painted the Mona Lisa and where is it kept?",
    "qwxzzyv",  # out of vocabulary
    "population 2020 census",
    "of",  # stop word only
]


@pytest.fixture(scope="module")
def corpus(sample_index) -> tuple[SparseBM25, list[list[str]]]:
    """The collection's own BM25 index and the token lists it was built from (title + text per chunk)."""
    index = sample_index.bm25_index()
    records = {cid: (text or "", meta) for cid, text, meta in sample_index.store.scan()}
    tokens = [
        tokenize(f"{records[c][1]['title']}\n{records[c][0]}" if records[c][1].get("title") else records[c][0])
        for c in index.ids
    ]
    return index, tokens


@pytest.fixture(scope="module")
def sparse(corpus) -> SparseBM25:
    """The single-file scorer over the same chunks (what save/load persist)."""
    index, tokens = corpus
    return SparseBM25.from_tokens(index.ids, tokens)


@pytest.fixture(scope="module")
def reference(corpus) -> BM25Okapi:
    _, tokens = corpus
    return BM25Okapi(tokens)  # k1=1.5, b=0.75, epsilon=0.25: the same defaults as RetrieverConfig


@pytest.mark.parametrize("query", QUERIES)
def test_scores_equal_rank_bm25_on_every_document(corpus, reference, query):
    index, _ = corpus
    q = tokenize(query)
    ours, ref = index.scores(q), reference.get_scores(q)
    assert ours.shape == ref.shape == (len(index.ids),)
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("k", [1, 10, 50])
def test_top_k_order_equals_rank_bm25(corpus, reference, query, k):
    index, _ = corpus
    q = tokenize(query)
    ref = reference.get_scores(q)
    got = index.top_k(q, k)
    positive = np.flatnonzero(ref > 0)
    # Reference ranking: score descending, ties by corpus order (rank-bm25's argsort leaves ties unspecified).
    expected = positive[np.lexsort((positive, -ref[positive]))][:k]
    assert [cid for cid, _ in got] == [index.ids[i] for i in expected]
    np.testing.assert_allclose([s for _, s in got], ref[expected], rtol=1e-9)
    # Where the reference has no ties, this is exactly rank-bm25's own get_top_n order.
    ref_top = np.argsort(ref)[::-1][: len(got)]
    if len(set(np.round(ref[ref_top], 12))) == len(ref_top):
        assert [cid for cid, _ in got] == [index.ids[i] for i in ref_top]


def test_bm25_retriever_scores_are_rank_bm25_scores(sample_index, corpus, reference):
    index, _ = corpus
    hits = sample_index.search("Puccini opera La bohème", 5, mode="bm25")
    ref = reference.get_scores(tokenize("Puccini opera La bohème"))
    for h in hits:
        assert h.score == pytest.approx(ref[index.ids.index(h.chunk_id)], rel=1e-9)
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]


def test_negative_idf_is_floored_like_rank_bm25():
    # "common" is in 3 of 4 documents: raw IDF log((4-3+.5)/(3+.5)) < 0, floored at eps * mean IDF.
    docs = [["common", "apple"], ["common", "pear"], ["common", "plum"], ["fig"]]
    ours = SparseBM25.from_tokens([f"d{i}" for i in range(4)], docs)
    ref = BM25Okapi(docs)
    for q in (["common"], ["common", "fig"], ["apple", "apple"], ["nothing"]):
        np.testing.assert_allclose(ours.scores(q), ref.get_scores(q), rtol=1e-12)


def test_custom_parameters_match(corpus):
    _, tokens = corpus
    ids = [str(i) for i in range(len(tokens))]
    ours = SparseBM25.from_tokens(ids, tokens, k1=0.9, b=0.4, epsilon=0.1)
    ref = BM25Okapi(tokens, k1=0.9, b=0.4, epsilon=0.1)
    q = tokenize(QUERIES[0] + " " + QUERIES[2])
    np.testing.assert_allclose(ours.scores(q), ref.get_scores(q), rtol=1e-9)


def test_mask_and_allowed(corpus):
    index, _ = corpus
    q = tokenize("Kubrick film")
    top = index.top_k(q, 5)
    only = index.mask({top[2][0], top[4][0], "not-an-id"})
    assert index.top_k(q, 5, allowed=only) == [top[2], top[4]]
    without = index.mask({top[0][0]}, exclude=True)
    assert index.top_k(q, 4, allowed=without) == top[1:5]


def test_save_load_roundtrip(tmp_path, sparse):
    index = sparse
    index.save(tmp_path, fingerprint="gen-1")
    loaded, fingerprint = SparseBM25.load(tmp_path)
    assert fingerprint == "gen-1" and loaded.ids == index.ids and loaded.vocab == index.vocab
    q = tokenize(QUERIES[2])
    np.testing.assert_array_equal(loaded.scores(q), index.scores(q))
    assert [p.name for p in tmp_path.iterdir()] == [BM25_FILE]  # one file, renamed into place: no temp left


def test_load_rejects_missing_or_torn_files(tmp_path, sparse):
    index = sparse
    assert SparseBM25.load(tmp_path) is None
    index.save(tmp_path, fingerprint="g")
    whole = (tmp_path / BM25_FILE).read_bytes()
    (tmp_path / BM25_FILE).write_bytes(whole[: len(whole) // 2])  # what a non-atomic writer could leave
    assert SparseBM25.load(tmp_path) is None
    short = SparseBM25.from_tokens(["a"], [["x"]])
    short.ids = index.ids[:2]  # rows disagree with the ids
    short.save(tmp_path, fingerprint="g")
    assert SparseBM25.load(tmp_path) is None


def test_save_replaces_atomically_while_a_reader_loads(tmp_path, sparse):
    """Readers racing a writer see the old index or the new one, never a mix of both."""
    import threading

    index = sparse
    small = SparseBM25.from_tokens(["a", "b"], [["x"], ["y", "x"]])
    index.save(tmp_path, fingerprint="big")
    stop = threading.Event()
    seen: list[tuple[str, int] | None] = []

    def read() -> None:
        while not stop.is_set():
            got = SparseBM25.load(tmp_path)
            seen.append(None if got is None else (got[1], len(got[0])))

    reader = threading.Thread(target=read)
    reader.start()
    for i in range(20):
        (small if i % 2 else index).save(tmp_path, fingerprint="small" if i % 2 else "big")
    stop.set()
    reader.join()
    assert seen and set(seen) <= {("big", len(index)), ("small", 2)}


def test_empty_index_and_tokenizer():
    empty = SparseBM25.from_tokens([], [])
    assert len(empty) == 0 and empty.top_k(["x"], 5) == []
    assert tokenize("The Eiffel Tower, in PARIS! 1889") == ["eiffel", "tower", "paris", "1889"]
    assert tokenize("Zürich's café") == ["zürich", "s", "café"]


@pytest.mark.parametrize("words", [["film"], ["film", "directed"], ["river", "delta"], ["of", "qwxzzyv"], []])
def test_ids_with_all_is_the_documents_holding_every_word(corpus, words):
    index, tokens = corpus
    expected = [cid for cid, toks in zip(index.ids, tokens) if words and set(words) <= set(toks)]
    assert index.ids_with_all(words) == expected
    if words == ["film"]:
        assert expected  # the sample has films: the check compares something
