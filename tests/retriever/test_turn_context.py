"""A chat log's turns, each indexed with the turn before it as its context (searched, never returned):
the rule on hand-written turns, then real indexing (real tokenizer, embedder, Chroma and BM25) through
every write path."""

from __future__ import annotations

import hashlib
import json

from sieve.retriever import Document, RetrieverConfig
from sieve.retriever.index import CorpusIndex
from sieve.retriever.ingest import IngestReport, content_hash, iter_documents
from sieve.retriever.ray_stages import documents_batch, documents_from_batch
from sieve.retriever.turns import TURN_CONTEXT_CHARS, with_turn_context
from sieve.train.weak_pairs import mine_headings

SESSION = "Anna & Ben, session 1 (8 May 2023)"
TURNS = [
    ("t1", "Anna: Hi Ben! What did you cook for the street party on Saturday?"),
    ("t2", "Ben: A big pot of chili with beans and smoked peppers; the neighbours asked me for the recipe twice."),
    ("t3", "Anna: Nice. I went hiking with my sister instead, up the old trail behind the lake."),
]


# Another session of the same chat, so that BM25's words are rare enough to score.
LATER = "Anna & Ben, session 2 (9 June 2023)"
OTHER = [
    ("u1", "Ben: My bike got a flat tyre on the way to work."),
    ("u2", "Anna: Oh no! Did you fix it yourself?"),
    ("u3", "Ben: Yes, with the spare tube from the garage."),
    ("u4", "Anna: I finished reading the novel you lent me."),
    ("u5", "Ben: Great, tell me what you thought of the ending."),
]


def _log_lines(turns: list[tuple[str, str]]) -> str:
    rows = [{"id": i, "title": SESSION, "text": t} for i, t in turns]
    rows += [{"id": i, "title": LATER, "text": t} for i, t in OTHER]
    return "".join(json.dumps(r) + "\n" for r in rows)


def _turns(title: str = SESSION) -> list[Document]:
    return [Document(i, text, title=title) for i, text in TURNS]


def test_each_turn_gets_the_turn_before_it_in_the_same_session():
    docs = list(with_turn_context(_turns()))
    assert [d.context for d in docs] == ["", TURNS[0][1], TURNS[1][1]]
    assert [d.text for d in docs] == [t for _, t in TURNS]  # the turns themselves are untouched


def test_no_context_across_sessions_for_untitled_or_non_turn_documents_and_a_given_one_is_kept():
    other = Document("u1", "Ben: Another day.", title="Anna & Ben, session 2")
    prose = Document("p1", "The cache keeps rows on disk.", title=SESSION)
    untitled = [Document("a", "Anna: Hi?"), Document("b", "Ben: Hello.")]
    given = Document("g", "Ben: Yes.", title=SESSION, context="Anna: Ready?")
    docs = list(with_turn_context([*_turns(), other, prose, *untitled, given]))
    assert [d.context for d in docs[3:]] == ["", "", "", "", "Anna: Ready?"]


def test_a_long_previous_turn_gives_its_speaker_and_its_end_from_a_word_start():
    long_turn = "Anna: " + " ".join(f"word{i}" for i in range(200)) + " What did you cook?"
    docs = list(with_turn_context([Document("a", long_turn, SESSION), Document("b", "Ben: Chili.", SESSION)]))
    context = docs[1].context
    assert len(context) <= TURN_CONTEXT_CHARS and context.endswith("What did you cook?")
    assert context.startswith("Anna: ")  # who asked stays
    assert long_turn.endswith(" " + context.removeprefix("Anna: "))  # whole words only


def test_a_given_context_is_cut_as_a_previous_turn_is(tmp_path):
    """A turn sent alone brings the turn before it (a .jsonl record's or a request's ``context``)."""
    long_turn = "Anna: " + " ".join(f"word{i}" for i in range(200)) + " What did you cook?"
    rows = [
        {"id": "b", "title": SESSION, "text": "Ben: Chili.", "context": long_turn},
        {"id": "c", "title": SESSION, "text": "Anna: Yum.", "context": ["not", "text"]},
    ]
    f = tmp_path / "turns.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    report = IngestReport()
    (doc,) = list(with_turn_context(iter_documents(f, report)))
    from_log = list(with_turn_context([Document("a", long_turn, SESSION), Document("b", "Ben: Chili.", SESSION)]))
    assert doc.context == from_log[1].context and len(doc.context) <= TURN_CONTEXT_CHARS
    assert report.skipped == [
        (f"{f}:2", "expected 'context' to be a string (the text searched with this one, never returned)")
    ]


def test_a_context_changes_the_content_hash_and_no_context_keeps_the_old_one():
    doc = Document("t2", TURNS[1][1], title=SESSION, metadata={"k": 1})
    h = hashlib.sha256()
    for part in (doc.title, doc.source, doc.text, json.dumps(doc.metadata, sort_keys=True)):
        h.update(part.encode() + b"\x00")
    assert content_hash(doc) == h.hexdigest()[:32]  # collections indexed before contexts stay valid
    with_context = Document("t2", TURNS[1][1], title=SESSION, metadata={"k": 1}, context="Anna: Hi?")
    assert content_hash(with_context) != content_hash(doc)


def test_the_ray_batch_carries_the_context():
    docs = list(with_turn_context(_turns()))
    back = documents_from_batch(documents_batch(docs, ["h1", "h2", "h3"]))
    assert [d for d, _ in back] == docs


def test_a_chat_log_is_searched_with_each_turns_context_and_returns_the_turn_alone(tmp_path, embedder):
    log = tmp_path / "chat.jsonl"
    log.write_text(_log_lines(TURNS))
    cfg = RetrieverConfig(data_dir=tmp_path / "data")
    index = CorpusIndex.open(cfg, "chat", create=True, embedder=embedder)
    index.writer.index_path(log, progress=False)
    # "cook" and "party" are only in Anna's question: Ben's answer is found through it
    hits = index.search("cook street party", k=3, mode="bm25")
    assert [h.chunk.doc_id for h in hits[:2]] == ["t1", "t2"]
    assert hits[1].chunk.text == TURNS[1][1]  # the context is searched, never returned
    (stored,) = index.get_chunks(["t2#0"])
    assert stored.heading_path == TURNS[0][1]
    dense = index.search("What food did Ben make for the street party?", k=3, mode="dense")
    assert "t2" in [h.chunk.doc_id for h in dense[:2]]
    # a fresh process reads BM25 back from disk with the same contexts
    again = CorpusIndex.open(cfg, "chat", embedder=embedder)
    assert [h.chunk.doc_id for h in again.search("cook street party", k=2, mode="bm25")] == ["t1", "t2"]
    # indexing again changes nothing; editing Anna's question rewrites her turn and Ben's answer
    assert index.writer.index_path(log, progress=False).unchanged == 8
    edited = [("t1", "Anna: Hi Ben! What did you bake for the school fair?"), *TURNS[1:]]
    log.write_text(_log_lines(edited))
    report = index.writer.index_path(log, progress=False)
    assert (report.updated, report.unchanged) == (2, 6)
    assert [h.chunk.doc_id for h in index.search("bake school fair", k=2, mode="bm25")] == ["t1", "t2"]
    assert not index.search("street party", k=3, mode="bm25")


def test_a_request_sized_write_gives_its_turns_their_context(tmp_path, embedder):
    index = CorpusIndex.open(RetrieverConfig(data_dir=tmp_path), "chat", create=True, embedder=embedder)
    index.writer.upsert_documents(_turns())
    assert [c.heading_path for c in index.get_chunks(["t1#0", "t2#0", "t3#0"])] == ["", TURNS[0][1], TURNS[1][1]]


def test_the_heading_miner_takes_no_pair_from_a_turns_context(tmp_path, embedder):
    index = CorpusIndex.open(RetrieverConfig(data_dir=tmp_path), "chat", create=True, embedder=embedder)
    index.writer.index_documents(_turns(), progress=False)
    chunks = index.get_chunks(["t1#0", "t2#0", "t3#0"])
    assert [c.heading_path for c in chunks][1:] == [TURNS[0][1], TURNS[1][1]]
    assert mine_headings(chunks) == []


def test_the_task_writer_reads_a_turn_by_its_own_words(tmp_path, embedder):
    """`sieve train`'s hard tasks need a phrase only one chunk holds: the next turn, indexed with this one
    as its context, must not count as holding it (else no turn of a chat log is ever a task's gold)."""
    from sieve.retriever.bm25 import tokenize
    from sieve.train.synth_hard import OwnWords, own_words
    from sieve.train.task_io import all_chunks

    index = CorpusIndex.open(RetrieverConfig(data_dir=tmp_path), "chat", create=True, embedder=embedder)
    docs = [Document(i, t, title=SESSION) for i, t in TURNS] + [Document(i, t, title=LATER) for i, t in OTHER]
    index.writer.index_documents(docs, progress=False)
    phrase = tuple(tokenize("smoked peppers"))  # Ben's answer (t2), and t3's context
    assert index.bm25_index().ids_with_all(phrase) == ["t2#0", "t3#0"]
    own = own_words(index.bm25_index(), all_chunks(index))
    assert isinstance(own, OwnWords) and own.ids_with_all(phrase) == ["t2#0"]
    assert own.ids_with_all(tuple(tokenize("Anna hiking sister"))) == ["t3#0"]  # its own words still count
    assert len(own) == len(index.bm25_index()) == 8
    # a corpus with no turns is read as BM25 has it
    docs_index = CorpusIndex.open(RetrieverConfig(data_dir=tmp_path), "prose", create=True, embedder=embedder)
    docs_index.writer.index_documents([Document("p", "Plain prose about caching.", title="Cache")], progress=False)
    assert own_words(docs_index.bm25_index(), all_chunks(docs_index)) is docs_index.bm25_index()
