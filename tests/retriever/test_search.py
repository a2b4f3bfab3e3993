"""Filters, exclusion, grep, read windows and edge cases on real indexes."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sieve.core.errors import EmptyCorpus, InvalidInput, InvalidPattern, NotFound, UnknownCollection
from sieve.retriever import CorpusIndex, RetrieverConfig
from sieve.server.errors import http_status

from _retriever_helpers import MULTI_DOCS

MODES = ("dense", "bm25", "hybrid")
ARTS = {"topic": "Arts"}
QUERY = "famous painting in a museum"


@pytest.fixture(scope="module")
def records(sample_index) -> dict[str, tuple[str, dict]]:
    """chunk id -> (text, metadata) of everything in the sample collection."""
    return {cid: (text or "", meta) for cid, text, meta in sample_index.store.scan()}


# -- filters ------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_where_filter_applies_to_every_mode(sample_index, records, mode):
    hits = sample_index.search(QUERY, 10, mode=mode, where=ARTS)
    assert len(hits) == 10
    assert all(records[h.chunk_id][1]["topic"] == "Arts" for h in hits)
    assert all(h.chunk.metadata["topic"] == "Arts" for h in hits)
    unfiltered = sample_index.search(QUERY, 10, mode=mode)
    assert any(h.chunk.metadata["topic"] != "Arts" for h in unfiltered), "the filter must have something to remove"


def test_bm25_filter_equals_filtering_the_full_ranking(sample_index, records):
    full = sample_index.bm25.scored_ids(QUERY, len(records))
    expected = [(cid, s) for cid, s in full if records[cid][1]["topic"] == "Arts"][:15]
    assert sample_index.bm25.scored_ids(QUERY, 15, where=ARTS) == expected


def test_dense_filter_matches_exact_cosine_over_the_allowed_chunks(sample_index):
    got = sample_index.search(QUERY, 8, mode="dense", where=ARTS)
    allowed = sample_index.store.collection.get(where=ARTS, include=["embeddings"])
    sims = np.asarray(allowed["embeddings"]) @ sample_index.embedder.embed_query(QUERY)
    order = np.argsort(-sims)[:8]
    assert [h.chunk_id for h in got] == [allowed["ids"][i] for i in order]
    assert np.allclose([h.score for h in got], sims[order], atol=1e-4)


def test_compound_filter_and_filter_matching_nothing(sample_index):
    where = {"$and": [{"topic": "Arts"}, {"doc_id": {"$in": ["wiki-mona-lisa", "wiki-louvre", "wiki-paris"]}}]}
    for mode in MODES:
        ids = {h.doc_id for h in sample_index.search("painting", 10, mode=mode, where=where)}
        assert ids and ids <= {"wiki-mona-lisa", "wiki-louvre", "wiki-paris"}
        assert sample_index.search("painting", 10, mode=mode, where={"topic": "No-Such-Topic"}) == []


@pytest.mark.parametrize("mode", MODES)
def test_invalid_filter_is_our_error(sample_index, mode):
    with pytest.raises(InvalidInput, match="filter"):
        sample_index.search("painting", 5, mode=mode, where={"topic": {"$bogus": 1}})


# -- exclusion ----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_excluded_ids_never_come_back(sample_index, mode):
    before = sample_index.search(QUERY, 10, mode=mode)
    seen = {h.chunk_id for h in before[:4]}
    after = sample_index.search(QUERY, 10, mode=mode, exclude=seen)
    assert len(after) == 10 and not seen & {h.chunk_id for h in after}
    if mode != "hybrid":  # single-list modes: the rest of the ranking simply moves up
        assert [h.chunk_id for h in after[:6]] == [h.chunk_id for h in before[4:]]
    assert [h.rank for h in after] == list(range(1, 11))


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_excluding_almost_everything_returns_the_rest(sample_index, records, mode):
    keep = {"wiki-mona-lisa#0", "wiki-louvre#0", "wiki-leonardo-da-vinci#0"}
    hits = sample_index.search("Mona Lisa", 10, mode=mode, exclude=set(records) - keep)
    assert {h.chunk_id for h in hits} == keep


def test_exclusion_with_filter_in_bm25(sample_index, records):
    arts = [cid for cid, (_t, m) in records.items() if m["topic"] == "Arts"]
    hits = sample_index.search("film", 200, mode="bm25", where=ARTS, exclude=set(arts[: len(arts) // 2]))
    assert hits and {h.chunk_id for h in hits} <= set(arts[len(arts) // 2 :])


def test_grep_excludes_ids(sample_index):
    first = sample_index.grep("Kubrick", 5)
    assert len(first) >= 2
    rest = sample_index.grep("Kubrick", 5, exclude={first[0].chunk_id})
    assert first[0].chunk_id not in {h.chunk_id for h in rest}
    assert [h.chunk_id for h in rest][: len(first) - 1] == [h.chunk_id for h in first[1:]]


# -- grep ---------------------------------------------------------------------------------------
def test_grep_returns_exactly_the_matching_chunks(sample_index, records):
    pattern = r"\b1[89]\d\d opera\b|Kubrick"
    expected = {cid for cid, (text, _m) in records.items() if re.search(pattern, text)}
    assert 2 <= len(expected) < 200
    got = sample_index.grep(pattern, 200)
    assert {h.chunk_id for h in got} == expected
    assert len(sample_index.grep(pattern, 2)) == 2  # bounded


def test_grep_is_case_sensitive_unless_asked(sample_index, records):
    assert sample_index.grep("kubrick", 10) == []
    insensitive = {h.chunk_id for h in sample_index.grep("(?i)kubrick", 10)}
    assert insensitive == {cid for cid, (t, _m) in records.items() if "kubrick" in t.lower()}


def test_grep_with_filter(sample_index):
    hits = sample_index.grep("Kubrick", 10, where={"topic": "People"})
    assert hits and all(h.chunk.metadata["topic"] == "People" for h in hits)


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("ab", "at least 3"),
        ("[unclosed", "valid regular expression"),
        ("(?=Kub)Kubrick", "look-around"),
        ("(?<!x)Kubrick", "look-around"),
    ],
)
def test_bad_patterns_raise_invalid_pattern(sample_index, pattern, why):
    with pytest.raises(InvalidPattern, match=why):
        sample_index.grep(pattern, 5)


# -- read windows -------------------------------------------------------------------------------
def test_read_windows_at_edges_and_middle(multi_index):
    n = multi_index.documents()["lighthouse"]
    assert n >= 5

    def positions(ref: str, window: int | None) -> list[int]:
        return [c.position for c in multi_index.read(ref, window)]

    assert positions("lighthouse#0", 0) == [0]
    assert positions("lighthouse#0", 1) == [0, 1]
    assert positions("lighthouse#0", 2) == [0, 1, 2]
    assert positions("lighthouse#2", 1) == [1, 2, 3]
    assert positions("lighthouse#2", 2) == [0, 1, 2, 3, 4]
    assert positions(f"lighthouse#{n - 1}", 1) == [n - 2, n - 1]
    assert positions(f"lighthouse#{n - 1}", 2) == [n - 3, n - 2, n - 1]
    assert positions("lighthouse#1", 50) == list(range(n))
    assert {c.doc_id for c in multi_index.read("lighthouse#2", 2)} == {"lighthouse"}


def test_read_whole_document_reassembles_the_text(multi_index):
    doc = MULTI_DOCS[0]
    by_id = multi_index.read(doc.doc_id)
    assert by_id == multi_index.read("lighthouse#3", None) == multi_index.read_document(doc.doc_id)
    assert [c.position for c in by_id] == list(range(len(by_id)))
    for c in by_id:
        assert doc.text[c.char_start : c.char_end] == c.text
        assert (c.title, c.source, c.metadata) == (doc.title, doc.source, doc.metadata)
    assert by_id[0].char_start == 0 and by_id[-1].char_end == len(doc.text)


def test_read_unknown_and_bad_window(multi_index):
    with pytest.raises(NotFound, match="no-such-doc"):
        multi_index.read("no-such-doc")
    with pytest.raises(NotFound):
        multi_index.read("lighthouse#999", 1)
    with pytest.raises(InvalidInput, match="window"):
        multi_index.read("lighthouse#1", -1)


def test_get_chunks_keeps_order_and_drops_unknown(multi_index):
    ids = ["orchard#1", "nope#0", "lighthouse#0"]
    assert [c.chunk_id for c in multi_index.get_chunks(ids)] == ["orchard#1", "lighthouse#0"]


# -- edge cases ---------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("query", ["", "   \n"])
def test_empty_query_is_invalid(sample_index, mode, query):
    with pytest.raises(InvalidInput, match="query"):
        sample_index.search(query, 5, mode=mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", [0, -1, 201, True, 2.5, "5"])
def test_k_out_of_range_is_invalid(sample_index, mode, k):
    with pytest.raises(InvalidInput, match="k between"):
        sample_index.search("painting", k, mode=mode)


def test_k_larger_than_the_corpus(multi_index):
    total = multi_index.count()
    assert total < 200
    dense = multi_index.search("a stone tower by the sea", 200, mode="dense")
    assert len(dense) == total and len({h.chunk_id for h in dense}) == total
    hybrid = multi_index.search("a stone tower by the sea", 200, mode="hybrid")
    assert {h.chunk_id for h in hybrid} == {h.chunk_id for h in dense}
    bm25 = multi_index.search("cider", 200, mode="bm25")  # only chunks that contain a query term
    assert 0 < len(bm25) < total and all("cider" in (h.chunk.title + h.chunk.text).lower() for h in bm25)
    assert multi_index.grep("the", 200) and len(multi_index.grep("the", 200)) <= total


def test_oov_and_stopword_queries_in_bm25(sample_index):
    assert sample_index.search("qwxzzyv blorptangle", 10, mode="bm25") == []
    assert sample_index.search("the of and", 10, mode="bm25") == []
    assert len(sample_index.search("qwxzzyv blorptangle", 10, mode="hybrid")) == 10  # dense side still answers


def test_unknown_mode(sample_index):
    with pytest.raises(InvalidInput, match="mode"):
        sample_index.search("painting", 5, mode="sparse")  # type: ignore[arg-type]


def test_empty_collection_raises_empty_corpus(make_index):
    index = make_index("empty-one")
    for mode in MODES:
        with pytest.raises(EmptyCorpus, match="empty-one"):
            index.search("anything", 5, mode=mode)
    assert index.grep("anything", 5) == []
    assert index.documents() == {} and index.count() == 0


def test_unknown_collection_lists_valid_names(make_index, embedder):
    index = make_index("present-one")
    with pytest.raises(UnknownCollection, match="present-one") as err:
        CorpusIndex.open(index.config, "absent-one", embedder=embedder)
    assert http_status(err.value) == 404 and "absent-one" in err.value.message


def test_bad_collection_name(tmp_path, embedder):
    with pytest.raises(InvalidInput, match="collection name"):
        CorpusIndex.open(RetrieverConfig(data_dir=tmp_path), "x", create=True, embedder=embedder)


def test_get_vectors_returns_the_stored_embeddings(sample_index):
    import numpy as np

    chunk = sample_index.read_document("wiki-stanley-kubrick")[0]
    vecs = sample_index.get_vectors([chunk.chunk_id, "no-such-doc#0"])
    assert list(vecs) == [chunk.chunk_id]
    expected = sample_index.embedder.embed_passages([f"{chunk.title}\n{chunk.text}"])[0]
    assert float(np.dot(vecs[chunk.chunk_id], expected)) > 0.99
