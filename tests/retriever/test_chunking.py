"""Chunk boundaries, sizes, overlaps, offsets and ids, with the real MiniLM tokenizer, for both splits."""

from __future__ import annotations

import json

import pytest

from sieve.core.errors import InvalidInput
from sieve.retriever import Document, RetrieverConfig
from sieve.retriever.chunking import SPLITS, Chunker, chunk_id_for, split_chunk_id

LONG_WORD = "Pneumonoultramicroscopicsilicovolcanoconiosis"  # ~15 word pieces


@pytest.fixture(scope="module")
def tokenizer(embedder):
    return embedder.tokenizer


@pytest.fixture(scope="module")
def long_text(sample_dir) -> str:
    """Real prose, some non-ASCII, and long words that the tokenizer splits into many pieces."""
    with (sample_dir / "corpus.jsonl").open(encoding="utf-8") as f:
        rows = [json.loads(line) for line, _ in zip(f, range(6))]
    filler = f" {LONG_WORD} Zürich café naïve 北京大学 — “quoted” {LONG_WORD}-{LONG_WORD}. "
    return filler.join(r["text"] for r in rows) + " The end"


def _spans(tokenizer, text: str) -> list[tuple[int, int]]:
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return [(s, e) for s, e in enc["offset_mapping"] if e > s]


@pytest.mark.parametrize(("size", "overlap"), [(32, 8), (50, 0), (16, 15)])
def test_windows_cover_the_right_tokens_with_the_configured_overlap(tokenizer, long_text, size, overlap):
    spans = _spans(tokenizer, long_text)
    chunks = Chunker(tokenizer, size, overlap, split="window").chunk(Document("doc", long_text))
    step = size - overlap
    expected_n = 1 + max(0, -(-(len(spans) - size) // step))  # windows until one reaches the end
    assert len(chunks) == expected_n
    for i, c in enumerate(chunks):
        first, last = i * step, min(i * step + size, len(spans)) - 1
        assert c.n_tokens == last - first + 1
        assert c.n_tokens == size or i == len(chunks) - 1
        # The chunk holds its whole token window, and anything beyond the window is only the rest
        # of a word the window cut (no whitespace between the window edge and the chunk edge).
        assert c.char_start <= spans[first][0] and spans[last][1] <= c.char_end
        assert not any(ch.isspace() for ch in long_text[c.char_start : spans[first][0]])
        assert not any(ch.isspace() for ch in long_text[spans[last][1] : c.char_end])
    for a, b in zip(chunks, chunks[1:]):
        if overlap:
            # the last `overlap` tokens of one window are the first of the next
            assert b.char_start <= spans[(a.position + 1) * step][0] < a.char_end
        assert b.char_start >= a.char_start and b.char_end >= a.char_end


@pytest.mark.parametrize("split", SPLITS)
def test_offsets_map_back_to_the_text_exactly_and_cover_it(tokenizer, long_text, split):
    chunks = Chunker(tokenizer, 40, 10, split=split).chunk(Document("doc", long_text))
    covered = [False] * len(long_text)
    for c in chunks:
        assert long_text[c.char_start : c.char_end] == c.text
        assert c.text == c.text.strip() and c.text
        covered[c.char_start : c.char_end] = [True] * (c.char_end - c.char_start)
    lost = [ch for ch, cov in zip(long_text, covered) if not cov and not ch.isspace()]
    assert lost == [], f"characters in no chunk: {lost[:20]}"
    assert chunks[0].char_start == 0 and chunks[-1].char_end == len(long_text)
    assert all(c.n_tokens <= 40 for c in chunks)


@pytest.mark.parametrize("split", SPLITS)
def test_boundaries_never_split_a_word(tokenizer, split):
    # Every window edge falls somewhere inside the long words (each is many word pieces).
    text = " ".join(f"{LONG_WORD}{i} and" for i in range(40))
    chunks = Chunker(tokenizer, 20, 5, split=split).chunk(Document("w", text))
    assert len(chunks) > 5
    for c in chunks:
        if c.char_start > 0:
            assert not (text[c.char_start - 1].isalnum() and text[c.char_start].isalnum()), c
        if c.char_end < len(text):
            assert not (text[c.char_end - 1].isalnum() and text[c.char_end].isalnum()), c
        for word in c.text.split():
            assert word in ("and",) or word.startswith(LONG_WORD), f"partial word {word!r} in {c.chunk_id}"


def test_ids_positions_and_fields(tokenizer, long_text):
    doc = Document("wiki#odd-id", long_text, title="T", source="s.txt", metadata={"topic": "x", "n": 1})
    chunks = Chunker(tokenizer, 32, 8).chunk(doc)
    assert [c.chunk_id for c in chunks] == [f"wiki#odd-id#{i}" for i in range(len(chunks))]
    assert [c.position for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert (c.doc_id, c.title, c.source, c.metadata) == ("wiki#odd-id", "T", "s.txt", {"topic": "x", "n": 1})
        assert split_chunk_id(c.chunk_id) == ("wiki#odd-id", c.position)
    chunks[0].metadata["topic"] = "changed"  # chunks get their own copy of the metadata
    assert doc.metadata["topic"] == "x" and chunks[1].metadata["topic"] == "x"


@pytest.mark.parametrize("split", SPLITS)
def test_ids_and_spans_are_stable_across_runs(tokenizer, long_text, split):
    a = Chunker(tokenizer, 32, 8, split=split).chunk(Document("d", long_text))
    b = Chunker(tokenizer, 32, 8, split=split).chunk(Document("d", long_text))
    assert a == b
    # Editing the end of a document leaves the ids and text of the earlier chunks unchanged.
    c = Chunker(tokenizer, 32, 8, split=split).chunk(Document("d", long_text + " An appended closing sentence."))
    assert [(x.chunk_id, x.text) for x in c[: len(a) - 1]] == [(x.chunk_id, x.text) for x in a[:-1]]


@pytest.mark.parametrize("text", ["", "   ", "\n\t \n", "\u200b\u200b"])
def test_text_without_tokens_gives_no_chunks(tokenizer, text):
    assert Chunker(tokenizer, 32, 8).chunk(Document("e", text)) == []


def test_short_text_is_one_chunk_of_the_stripped_text(tokenizer):
    (c,) = Chunker(tokenizer, 32, 8).chunk(Document("s", "  Hello, wide world.\n"))
    assert (c.chunk_id, c.text, c.char_start, c.char_end, c.n_tokens) == ("s#0", "Hello, wide world.", 2, 20, 5)


def test_chunk_all_keeps_document_order(tokenizer):
    docs = [Document(f"d{i}", f"document number {i} " * 30) for i in range(3)]
    chunks = Chunker(tokenizer, 32, 0).chunk_all(docs)
    assert [c.doc_id for c in chunks] == sorted(c.doc_id for c in chunks)
    assert {c.doc_id for c in chunks} == {"d0", "d1", "d2"}


def test_structure_cuts_at_paragraphs_and_repeats_nothing(tokenizer):
    paragraphs = [f"Section {i}. " + " ".join(f"word{i}x{j}" for j in range(9)) + "." for i in range(12)]
    text = "\n\n".join(paragraphs)
    chunks = Chunker(tokenizer, 64, 16).chunk(Document("p", text))
    assert len(chunks) > 3
    for c in chunks:  # whole paragraphs, each in one chunk, none repeated
        assert c.n_tokens <= 64
        assert c.text.split("\n\n") == [p for p in paragraphs if p in c.text]
    assert sum(len(c.text.split("\n\n")) for c in chunks) == len(paragraphs)
    # the same text in fixed windows cuts paragraphs apart
    windows = Chunker(tokenizer, 64, 16, split="window").chunk(Document("p", text))
    assert any(not c.text.endswith(".") for c in windows[:-1])


def test_structure_prefers_a_line_break_to_a_sentence_end_and_a_blank_line_to_both(tokenizer):
    line = "alpha beta gamma. delta epsilon zeta"  # a sentence end inside every line
    text = "\n".join([line] * 6) + "\n\n" + "\n".join([line] * 6)
    chunks = Chunker(tokenizer, 48, 8).chunk(Document("l", text))
    for c in chunks[:-1]:
        after = text[c.char_end : c.char_end + 2]
        assert after.startswith("\n"), (c.text[-30:], after)
    cut = text.index("\n\n")
    # the blank line is a chunk edge: no chunk runs across it
    assert not any(c.char_start < cut < c.char_end for c in chunks)


def test_structure_opens_a_chunk_with_a_markdown_heading(tokenizer):
    # bodies of about 60 tokens: the window's last blank line would follow the next section's heading
    sections = [
        f"## Option {i}\n\n" + " ".join(f"Setting {i} line {j} reads well." for j in range(8)) for i in range(8)
    ]
    text = "\n\n".join(sections)
    chunks = Chunker(tokenizer, 96, 16).chunk(Document("m", text))
    assert len(chunks) > 2
    for c in chunks:
        assert c.text.startswith("## Option"), c.text[:40]
        assert "##" not in c.text.splitlines()[-1]  # no heading left at a chunk's end


def test_structure_overlaps_at_sentence_starts_inside_a_paragraph(tokenizer):
    text = " ".join(f"Sentence number {i} says something about topic {i}." for i in range(40))
    chunks = Chunker(tokenizer, 50, 20).chunk(Document("s", text))
    assert len(chunks) > 3
    for a, b in zip(chunks, chunks[1:]):
        assert a.text.endswith(".")  # cut after a sentence
        assert b.text.startswith("Sentence number")  # the next starts at a sentence
        assert b.char_start < a.char_end  # and repeats the end of the previous one (the overlap)


def test_structure_without_breaks_falls_back_to_windows(tokenizer):
    text = " ".join(f"token{i}" for i in range(300))  # no line, no sentence end
    a = Chunker(tokenizer, 40, 10).chunk(Document("n", text))
    b = Chunker(tokenizer, 40, 10, split="window").chunk(Document("n", text))
    assert [(c.char_start, c.char_end) for c in a] == [(c.char_start, c.char_end) for c in b]


def test_bad_settings_and_ids_raise(tokenizer):
    with pytest.raises(ValueError):
        Chunker(tokenizer, 32, 8, split="sentences")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Chunker(tokenizer, 32, 32)
    with pytest.raises(InvalidInput, match="chunk_overlap"):
        RetrieverConfig(chunk_tokens=32, chunk_overlap=40)
    with pytest.raises(InvalidInput, match="chunk_tokens"):
        RetrieverConfig(chunk_tokens=8, chunk_overlap=0)
    with pytest.raises(ValueError):
        split_chunk_id("no-position")
    with pytest.raises(ValueError):
        split_chunk_id("doc#x")
    assert chunk_id_for("a", 0) == "a#0"


def test_break_strength_by_hand(tokenizer):
    text = 'He said "yes." Then he left\nfor good.\n\nThe end, almost\n# Next'
    spans = _spans(tokenizer, text)
    starts = {text[s:e]: i for i, (s, e) in enumerate(spans)}
    words = ("Then", "for", "The", "almost", "yes", "#")
    strength = {w: Chunker.break_strength(text, spans, starts[w]) for w in words}
    # after a closing quote, a line break, a blank line, a comma, inside a quote, before a heading
    assert strength == {"Then": 1, "for": 2, "The": 3, "almost": 0, "yes": 0, "#": 4}
