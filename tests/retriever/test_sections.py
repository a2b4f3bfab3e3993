"""Documentation read as documentation: headings found in Markdown and reStructuredText, one section a
chunk, and the heading path in what is embedded and BM25-indexed (real tokenizer, real Chroma, real BM25)."""

from __future__ import annotations

import pytest

from sieve.retriever import Document, RetrieverConfig
from sieve.retriever.chunking import Chunker
from sieve.retriever.index import CorpusIndex
from sieve.retriever.readers import read_file
from sieve.retriever.sections import SectionMap, find_headings, heading_path
from sieve.retriever.types import passage_text

MARKDOWN = """---
title: "Commands"
---

# Commands

Poetry's commands, one by one.

## add

The add command adds required packages.

```bash
# this comment is code, not a heading
poetry add requests
```

### Options

* `--dev`: add to the development group.

Setext section
--------------

Body of the setext section.
"""

RST = """=========
User Guide
=========

Welcome to the guide.

Installing
==========

Run the installer.

From source
-----------

Clone the repository.

    Indented text
    -------------

A paragraph line
right above a rule
------------------

Uninstalling
============

Remove it.
"""


def _titles(text: str) -> list[tuple[int, str]]:
    return [(h.level, h.title) for h in find_headings(text)]


def test_markdown_headings_skip_front_matter_and_code():
    assert _titles(MARKDOWN) == [(1, "Commands"), (2, "add"), (3, "Options"), (2, "Setext section")]
    start = find_headings(MARKDOWN)[1].start
    assert MARKDOWN[start:].startswith("## add\n")


def test_a_heading_carries_the_anchor_it_declares_apart_from_its_title():
    text = "# Config {#config .wide}\n\nIntro.\n\nCache dir {#cache-dir}\n---------\n\nBody.\n\n## Plain\n"
    assert [(h.title, h.anchor) for h in find_headings(text)] == [
        ("Config", "config"),
        ("Cache dir", "cache-dir"),
        ("Plain", ""),
    ]


def test_rst_levels_follow_the_order_of_adornment_styles():
    # an overlined title is a style of its own; indented text and a paragraph above a rule are not titles
    assert _titles(RST) == [(1, "User Guide"), (2, "Installing"), (3, "From source"), (2, "Uninstalling")]
    heads = find_headings(RST)
    assert heads[0].start == 0 and RST[heads[0].end :].startswith("\nWelcome")


def test_heading_path_at_an_offset_and_without_the_page_title():
    smap = SectionMap(find_headings(MARKDOWN))
    at = MARKDOWN.index("`--dev`")
    assert smap.path_at(at) == ("Commands", "add", "Options")
    assert smap.path_at(MARKDOWN.index("Body of the setext")) == ("Commands", "Setext section")
    assert smap.path_at(0) == ()
    assert heading_path(smap.path_at(at), title="commands") == "add > Options"
    assert passage_text("Commands", "`--dev`: ...", "add > Options") == "Commands > add > Options\n`--dev`: ..."


@pytest.fixture(scope="module")
def tokenizer(embedder):
    return embedder.tokenizer


def _long_sections(n: int, words: int) -> str:
    body = " ".join(f"Setting {{i}} line {j} reads well." for j in range(words))
    return "# Manual\n\n" + "\n\n".join(f"## Part {i}\n\n" + body.format(i=i) for i in range(n))


@pytest.mark.parametrize("text", [MARKDOWN, RST, _long_sections(6, 3)])
def test_sections_never_join_the_end_of_one_section_to_the_next(tokenizer, text):
    doc = Document("d", text, title="Manual")
    chunks = Chunker(tokenizer, 200, 32, split="sections").chunk(doc)
    heads = find_headings(text)
    for c in chunks:
        assert text[c.char_start : c.char_end] == c.text  # offsets stay offsets into the original
        inside = [h for h in heads if c.char_start < h.start < c.char_end]
        # a heading inside a chunk only where nothing but headings came before it in that chunk
        for h in inside:
            before = text[c.char_start : h.start]
            assert all(
                line.strip() == "" or any(line in text[g.start : g.end] for g in heads) for line in before.splitlines()
            ), c.text[:80]
    # structure would have joined these short sections into one chunk
    assert len(Chunker(tokenizer, 200, 32, split="structure").chunk(doc)) < len(chunks)


def test_sections_record_the_heading_path_and_cut_long_sections_as_structure_does(tokenizer):
    text = _long_sections(3, 40)  # each section longer than a chunk
    chunks = Chunker(tokenizer, 96, 16, split="sections").chunk(Document("m", text, title="Manual"))
    assert {c.heading_path for c in chunks} == {"Part 0", "Part 1", "Part 2"}
    for c in chunks:
        assert c.n_tokens <= 96
        part = c.heading_path.split()[-1]
        assert f"Setting {part} line" in c.text and all(f"Setting {i} line" not in c.text for i in "012" if i != part)
    # a section's title directly above its first subsection's stays with it: no chunk of headings alone
    (first, *_) = Chunker(tokenizer, 200, 32, split="sections").chunk(Document("m", text, title="Manual"))
    assert first.text.startswith("# Manual\n\n## Part 0") and first.heading_path == "Part 0"


PIN_RST = """\
##############
 Pin packages
##############

Hold an installation at its current version so upgrade and reinstall skip it until you unpin.

********
 Pin it
********

.. code-block:: console

    # pin it before the next upgrade
    $ pipx pin black

Pinned environments are skipped by ``pipx upgrade`` and ``pipx upgrade-all``.

Only injected ones
==================

``pipx pin PACKAGE --injected-only`` leaves the main package upgradable.

.. note::

   Notes have titles of their own in docutils, not sections.

***********
 Verify it
***********

Run ``pipx list --pinned``.

.. tab:: Windows

   .. code-block:: console

      # the same on Windows
      > pipx list --pinned
"""


def test_an_rst_file_is_read_with_its_sections(tmp_path, tokenizer):
    """docutils drops rst's adornment lines when it renders a page; the reader writes the titles back
    as headings, so a Sphinx page's chunks are its sections (pipx's docs: before, no chunk had a path)."""
    f = tmp_path / "pin-packages.rst"
    f.write_text(PIN_RST, encoding="utf-8")
    title, text, _ = read_file(f)
    chunks = Chunker(tokenizer, 200, 32, split="sections").chunk(Document("pin-packages.rst", text, title=title))
    assert title == "Pin packages"
    assert [c.heading_path for c in chunks] == ["", "Pin it", "Pin it > Only injected ones", "Verify it"]
    pin = chunks[1].text
    assert "# pin it before the next upgrade" in pin and "```" in pin  # code stays code: no heading of its own
    assert "Hold an installation" in chunks[0].text and "--injected-only" in chunks[2].text
    assert "```\n# the same on Windows" in chunks[3].text  # code inside a Sphinx-only directive is fenced too


def test_text_without_headings_is_cut_as_structure_cuts_it(tokenizer, sample_dir):
    text = (sample_dir / "corpus.jsonl").read_text(encoding="utf-8")[:6000].replace("\\n", "\n")
    a = Chunker(tokenizer, 64, 16, split="structure").chunk(Document("s", text))
    b = Chunker(tokenizer, 64, 16, split="sections").chunk(Document("s", text))
    assert [(c.char_start, c.char_end) for c in a] == [(c.char_start, c.char_end) for c in b]
    assert all(c.heading_path == "" for c in b)


def test_the_heading_path_is_stored_searched_and_read_back(tmp_path, embedder):
    # "sqlite" is in the Tuning chunk only through its heading path: BM25 finds it there
    text = (
        "# Guide\n\n## SQLite backend\n\nIt keeps rows in one local file on disk.\n\n### Tuning\n\n"
        "Set the page cache size for speed.\n\n## Remote server\n\nIt listens on a port.\n\n"
        "## Logging\n\nLines go to standard error.\n\n## Backups\n\nCopy the folder while idle.\n"
    )
    cfg = RetrieverConfig(data_dir=tmp_path)
    assert cfg.chunk_split == "sections"
    index = CorpusIndex.open(cfg, "docs", create=True, embedder=embedder)
    index.writer.index_documents([Document("guide.md", text, title="Guide")], progress=False)
    hits = index.search("sqlite page cache", k=3, mode="bm25")
    assert hits and hits[0].chunk.heading_path == "SQLite backend > Tuning"
    assert hits[0].chunk.text == "### Tuning\n\nSet the page cache size for speed."
    assert "sqlite" not in hits[0].chunk.text.lower()
    (stored,) = index.get_chunks([hits[0].chunk.chunk_id])
    assert stored.heading_path == "SQLite backend > Tuning"
    # a later process (a fresh open of the store, its BM25 read back from disk) sees the same path
    again = CorpusIndex.open(cfg, "docs", embedder=embedder)
    assert again.search("sqlite page cache", k=1, mode="bm25")[0].chunk.chunk_id == hits[0].chunk.chunk_id
    # the vector was made from the path too: dense search ranks the Tuning chunk for a backend question
    dense = index.search("SQLite backend tuning", k=1, mode="dense")
    assert dense[0].chunk.chunk_id == hits[0].chunk.chunk_id
