"""The pair miner on small hand-written Markdown and reStructuredText pages: each kind of pair, and the filters
(real tokenizer and chunker; a real collection with real BM25 for the BM25-trivial filter and hard negatives)."""

from __future__ import annotations

import pytest

from sieve.retriever import CorpusIndex, Document, RetrieverConfig
from sieve.retriever.chunking import Chunker
from sieve.retriever.types import Chunk
from sieve.train.weak_pairs import (
    MINERS,
    WeakPair,
    add_hard_negatives,
    body,
    default_kinds,
    filter_pairs,
    mine_pairs,
    register_miner,
)

INSTALL_MD = """# Installing

Poetry runs on Linux, macOS and Windows, and it needs a recent Python interpreter on the machine.

## With pipx

The pipx tool keeps command line applications in isolated environments of their own, so upgrades of
one never break another one installed beside it.

## Upgrading

Run the self update command to move to the newest release; see [the cache settings](config.md#cache-directory)
when old archives fill the disk after many upgrades over the years.
"""

CONFIG_MD = """# Configuration

Settings live in a TOML file in the user's configuration folder, and each can also be set per project.

## Cache directory

Downloaded archives and built wheels are kept in one folder per user, which defaults to a path under
the user's home and can be moved anywhere with a single setting.
"""

GUIDE_RST = """User guide
==========

This guide walks through a first project from an empty folder to a published package.

Virtual environments
--------------------

Each project gets an isolated environment, created on first use and reused after that, so that two
projects never share installed packages. See :ref:`the cache <cache-directory>` for where files go.
"""

TURNS = [
    Document("chat-1", "Anna: I finally adopted a rescue greyhound last weekend!", title="Anna & Ben, session 1"),
    Document("chat-2", "Ben: That's wonderful, what did you name the dog?", title="Anna & Ben, session 1"),
    Document("chat-10", "Anna: We called her Biscuit after the colour of her coat.", title="Anna & Ben, session 1"),
    Document("other-1", "A lone note in another session entirely about gardening.", title="Notes"),
]


@pytest.fixture(scope="module")
def chunks(embedder) -> list[Chunk]:
    docs = [
        Document("install.md", INSTALL_MD, title="Installing"),
        Document("config.md", CONFIG_MD, title="Configuration"),
        Document("guide.rst", GUIDE_RST, title="User guide"),
        *TURNS,
    ]
    return Chunker(embedder.tokenizer, 200, 32, split="sections").chunk_all(docs)


def _by_kind(pairs: list[WeakPair], kind: str) -> list[WeakPair]:
    return [p for p in pairs if p.kind == kind]


def test_heading_pairs_ask_a_section_by_its_headings_and_answer_with_its_body(chunks):
    heads = _by_kind(mine_pairs(chunks, ["heading"]), "heading")
    queries = {p.query: p for p in heads}
    assert set(queries) >= {"Installing With pipx", "Configuration Cache directory", "User guide Virtual environments"}
    pipx = queries["Installing With pipx"]
    assert pipx.positive.startswith("The pipx tool keeps") and "##" not in pipx.positive
    rst = queries["User guide Virtual environments"]
    assert rst.positive.startswith("Each project gets") and "-----" not in rst.positive


def test_an_rst_folder_read_through_the_reader_gives_heading_and_link_pairs(tmp_path, embedder):
    """A Sphinx folder as `sieve index` reads it (docutils renders it): before its sections and
    cross-references were written back as Markdown, pipx's docs gave 10 heading pairs and no link pair."""
    from sieve.retriever import CorpusIndex, RetrieverConfig
    from sieve.train.task_io import all_chunks

    docs = tmp_path / "docs"
    (docs / "how-to").mkdir(parents=True)
    (docs / "guide.rst").write_text(
        GUIDE_RST.replace(":ref:`the cache <cache-directory>`", ":ref:`the cache <cache-dir>`")
        + "\nTo move it, follow :doc:`the settings page <how-to/settings>` step by step.\n",
        encoding="utf-8",
    )
    (docs / "how-to" / "settings.rst").write_text(
        "Settings\n========\n\nEvery setting lives in one file that the tool reads on start and writes back when changed.\n\n"
        ".. _cache-dir:\n\nCache directory\n---------------\n\nDownloaded archives and built wheels are kept in one "
        "folder per user, which defaults to a path under the home folder and can be moved anywhere.\n",
        encoding="utf-8",
    )
    index = CorpusIndex.open(RetrieverConfig(data_dir=tmp_path / "data"), "rst", create=True, embedder=embedder)
    index.writer.index_path(docs, progress=False)
    pairs = mine_pairs(all_chunks(index), ["heading", "link"])
    heads = {p.query for p in _by_kind(pairs, "heading")}
    assert {"User guide Virtual environments", "Settings Cache directory"} <= heads
    links = {(p.query, p.positive_id) for p in _by_kind(pairs, "link")}
    cache = next(c for c in all_chunks(index) if c.heading_path == "Cache directory")
    assert ("See the cache for where files go.", cache.chunk_id) in links  # :ref: by a label, to its section
    assert ("To move it, follow the settings page step by step.", "how-to/settings.rst#0") in links  # :doc:


def test_asciidoc_cross_references_give_link_pairs_to_the_section_they_name(embedder):
    from sieve.retriever.asciidoc import asciidoc_text

    pages = {
        "modules/api/pages/options.adoc": "= API options\n\n[#safe]\n== The safe option\n\n"
        "The safe option picks the security level a document is converted with, from unsafe to secure, "
        "and decides whether includes may read files outside the folder of the document.\n",
        "modules/ROOT/pages/safe-modes.adoc": "= Safe Modes\n\nWhen content comes from strangers, raise "
        "xref:api:options.adoc#safe[the safe option] before converting anything it holds.\n",
    }
    docs = [Document(doc_id, asciidoc_text(text)) for doc_id, text in pages.items()]
    chunks = Chunker(embedder.tokenizer, 200, 32, split="sections").chunk_all(docs)
    links = {(p.query, p.positive_id) for p in mine_pairs(chunks, ["link"])}
    target = next(c for c in chunks if c.heading_path.endswith("The safe option"))
    assert (
        "When content comes from strangers, raise the safe option before converting anything it holds.",
        target.chunk_id,
    ) in links


def test_a_wiki_s_double_bracket_links_give_link_pairs(embedder):
    """An Obsidian vault or a MediaWiki export links pages as [[Page#Heading|text]]; file names hold spaces."""
    pages = {
        "Cache Directory.md": "# Cache Directory\n\n## Moving it\n\nThe cache folder can live on any disk: set the "
        "path in the settings file, copy the old folder over, and restart the tool so it picks the new place up.\n",
        "Setup.md": "# Setup\n\nA small laptop disk fills up fast, so read [[Cache Directory#Moving it|how to move the cache]] "
        "before the first install.\n",
    }
    docs = [Document(name.replace(" ", "-"), text) for name, text in pages.items()]  # ids as ingestion writes them
    chunks = Chunker(embedder.tokenizer, 200, 32, split="sections").chunk_all(docs)
    links = {(p.query, p.positive_id) for p in mine_pairs(chunks, ["link"])}
    target = next(c for c in chunks if c.heading_path.endswith("Moving it"))
    query = "A small laptop disk fills up fast, so read how to move the cache before the first install."
    assert (query, target.chunk_id) in links
    # a wiki resolves [[cache directory]] to "Cache Directory.md" whatever the case
    lower = [
        Document(d.doc_id, d.text.replace("[[Cache Directory#Moving it|", "[[cache directory#moving it|")) for d in docs
    ]
    chunks = Chunker(embedder.tokenizer, 200, 32, split="sections").chunk_all(lower)
    assert (query, target.chunk_id) in {(p.query, p.positive_id) for p in mine_pairs(chunks, ["link"])}
    # a page name with other characters than spaces is matched as ingestion writes it in an id
    odd = [
        Document("Anna-s-Cache.md", docs[0].text),
        Document("Setup.md", docs[1].text.replace("Cache Directory#", "Anna's Cache#")),
    ]
    chunks = Chunker(embedder.tokenizer, 200, 32, split="sections").chunk_all(odd)
    target = next(c for c in chunks if c.heading_path.endswith("Moving it"))
    assert (query, target.chunk_id) in {(p.query, p.positive_id) for p in mine_pairs(chunks, ["link"])}


def test_title_pairs_point_at_the_opening_of_a_page(chunks):
    titles = {p.query: p.positive for p in mine_pairs(chunks, ["title"])}
    assert titles["Installing"].startswith("Poetry runs on Linux")
    assert "Notes" not in titles  # a one-chunk page is all opening


def test_link_pairs_resolve_markdown_and_rst_targets_to_the_section(chunks):
    links = mine_pairs(chunks, ["link"])
    by_target = {p.positive_id: p for p in links}
    cache_chunk = next(c for c in chunks if c.heading_path == "Cache directory")
    assert cache_chunk.chunk_id in by_target
    queries = sorted(p.query for p in links if p.positive_id == cache_chunk.chunk_id)
    # the query is the whole sentence the link sits in, the markup reduced to the link's text
    assert any(
        q.startswith("Run the self update command") and "the cache settings" in q and "](" not in q for q in queries
    )
    assert any("See the cache for where files go." == q for q in queries)


def test_sentence_pairs_hold_a_sentence_out_of_its_passage(chunks):
    for p in mine_pairs(chunks, ["sentence"]):
        assert p.query not in p.positive
        source = next(c for c in chunks if c.chunk_id == p.positive_id)
        assert p.query in body(source)


def test_turn_pairs_follow_a_session_in_natural_id_order(chunks):
    turns = [(p.query[:5], p.positive_id) for p in mine_pairs(chunks, ["turn"])]
    # chat-2 -> chat-10 (natural order, not "chat-10" < "chat-2"); no pair across sessions
    assert turns == [("Anna:", "chat-2#0"), ("Ben: ", "chat-10#0")]


def test_unknown_kinds_and_registering_a_new_one(chunks):
    with pytest.raises(ValueError, match="pair kinds"):
        mine_pairs(chunks, ["headings"])
    with pytest.raises(ValueError):
        register_miner("heading", lambda cs: [])
    register_miner(
        "toy_first_words", lambda cs: [WeakPair("toy_first_words", c.text[:20], c.chunk_id, c.text) for c in cs]
    )
    try:
        assert {p.kind for p in mine_pairs(chunks)} >= {"heading", "toy_first_words"}
    finally:
        del MINERS["toy_first_words"]


def test_filters_drop_short_copied_and_bm25_trivial_pairs(tmp_path, embedder, chunks):
    index = CorpusIndex.open(RetrieverConfig(data_dir=tmp_path), "pairs", create=True, embedder=embedder)
    docs = [
        Document("install.md", INSTALL_MD, title="Installing"),
        Document("config.md", CONFIG_MD, title="Configuration"),
        Document("guide.rst", GUIDE_RST, title="User guide"),
        *TURNS,
    ]
    index.writer.index_documents(docs, progress=False)
    stored = {c.chunk_id: c for c in chunks}
    pipx = next(c for c in chunks if c.heading_path == "With pipx")
    text = body(pipx)
    pairs = [
        WeakPair("x", "pipx", pipx.chunk_id, text),  # one word: too short
        WeakPair("x", "isolated environments of their own", pipx.chunk_id, text),  # copied word for word
        WeakPair(
            "x", "pipx tool command line applications isolated", pipx.chunk_id, text
        ),  # BM25 alone: first, far ahead
        WeakPair("x", "keeping programs apart so updates do no harm", pipx.chunk_id, text),  # no shared word: kept
    ]
    kept, report = filter_pairs(pairs, index)
    assert (report.too_short, report.copied, report.bm25_trivial, report.kept) == (1, 1, 1, 1)
    assert kept == [pairs[3]]
    # without an index the BM25 filter is off
    assert filter_pairs(pairs)[1].bm25_trivial == 0
    # hard negatives come from the retriever's top, never the positive's own section or its neighbours
    with_neg = add_hard_negatives(kept, index, list(stored.values()))
    for p in with_neg:
        if p.negative:
            assert p.negative != p.positive
            neg = next(c for c in chunks if body(c) == p.negative)
            assert not (neg.doc_id == pipx.doc_id and abs(neg.position - pipx.position) <= 1)


def _turn(doc_id: str, text: str, session: str = "Anna & Ben, session 1") -> Chunk:
    return Chunk(f"{doc_id}#0", doc_id, 0, text, title=session)


CHAT = [
    _turn("c-D1-1", "Anna: Hi Ben! How have you been lately, and how is your new job going?"),
    _turn("c-D1-2", "Ben: Busy but good, the new job at the bakery starts at five every morning and I love it."),
    _turn("c-D1-3", "Ben: What did you do last weekend? [shared a photo of a park]"),
    _turn("c-D1-4", "Anna: I adopted a rescue greyhound called Biscuit and we walked her in the park all day."),
    _turn("c-D1-5", "Anna: Did my text about her reach you?"),  # the same speaker goes on: no pair
    _turn("c-D1-10", "Anna: She sleeps on the sofa now and barks at every single pigeon in the garden."),
    _turn("c-D1-11", "Ben: Pigeons? Why?"),  # too short a question
    _turn("c-D1-12", "Anna: Nobody knows why, but shall we bring both dogs to the beach next month?"),
    _turn("c-D2-1", "Ben: Did you ever tell me where you found her?", session="Anna & Ben, session 2"),
    _turn(
        "c-D2-2",
        "Anna: At the shelter on Mill Road, the one my sister volunteers at on Saturdays.",
        "Anna & Ben, session 2",
    ),
]


def test_question_pairs_ask_the_answering_turn_in_the_third_person():
    pairs = mine_pairs(CHAT, ["question"])
    # the question sentences only (captions dropped), "you"/"your" -> the one asked, "I"/"me"/"my" -> the
    # one asking; turns in natural id order; no pair where the same speaker goes on, for a question of
    # fewer than four words, or across sessions (c-D1-12 -> c-D2-1)
    assert [(p.query, p.positive_id) for p in pairs] == [
        ("How have Ben been lately, and how is Ben's new job going?", "c-D1-2#0"),
        ("What did Anna do last weekend?", "c-D1-4#0"),
        ("Did Anna ever tell Ben where Anna found her?", "c-D2-2#0"),
    ]
    assert {p.kind for p in pairs} == {"question"}
    assert pairs[1].positive == CHAT[3].text  # the whole answering turn, its speaker included


def test_question_pairs_go_through_the_filters():
    answer = CHAT[1]
    pairs = [
        *mine_pairs(CHAT, ["question"]),
        # a question that repeats its answer word for word teaches nothing: dropped as copied
        WeakPair("question", "the new job at the bakery", answer.chunk_id, answer.text),
        # an answer shorter than a passage: dropped as too short
        WeakPair("question", "How is Ben's new job going?", answer.chunk_id, "Ben: Busy."),
    ]
    kept, report = filter_pairs(pairs)
    assert (report.kept, report.copied, report.too_short) == (3, 1, 1)
    assert [p.positive_id for p in kept] == ["c-D1-2#0", "c-D1-4#0", "c-D2-2#0"]


def test_turn_pairs_are_mined_only_when_named():
    # measured worse on a conversation set (docs/experiments/embedder-adaptation.md): not in the default mix
    assert "turn" not in default_kinds() and "question" in default_kinds()
    assert {p.kind for p in mine_pairs(CHAT)} == {"question"}
    assert {p.kind for p in mine_pairs(CHAT, ["turn", "question"])} == {"turn", "question"}
