"""Readers: HTML by its main content, reStructuredText without markup, .docx paragraphs and tables,
and library warnings returned with the file instead of printed."""

from __future__ import annotations

import logging
import threading

import pytest

from sieve.retriever.html import html_text
from sieve.retriever.sections import find_headings
from sieve.retriever.readers import READERS, captured_library_logs, read_file, supported_suffixes

from _ingest_files import SITE_PAGE, TEXINFO_PAGE, pdf_pages, pdf_with_a_wrong_startxref


def test_html_keeps_the_article_and_drops_menus_headers_sidebars_and_footers():
    title, text = html_text(SITE_PAGE)
    assert title == "Otters | Field Guide"
    assert "Otters hold hands while they sleep" in text and "favourite stone" in text
    for boilerplate in (
        "Field Guide home",
        "Sign in",
        "menu entry",
        "Breadcrumb",
        "sidebar",
        "footer",
        "Privacy",
        "analytics",
        "font-family",
    ):
        assert boilerplate not in text, boilerplate


SPHINX_PAGE = """<html><head><title>Pin packages - pipx</title></head><body>
<div class="related" role="navigation"><a href="index.html">pipx</a> &#187; How-to guides</div>
<div class="body" role="main"><section id="pin-packages">
<h1>Pin packages<a class="headerlink" href="#pin-packages">\u00b6</a></h1>
<p>Hold an installation at its current version so upgrade and reinstall skip it until you unpin, even ffi_cif.</p>
<section id="pin-it"><h2>Pin <em>it</em><a class="headerlink" href="#pin-it">\u00b6</a></h2>
<div class="highlight-console"><pre><span class="c1"># pin it before the next upgrade</span>
$ pipx pin black</pre></div>
<p>Pinned environments are <strong>skipped</strong> by <code>pipx upgrade</code> and <code>pipx upgrade-all</code>.</p>
</section></section></div></body></html>"""


def test_html_headings_are_read_as_headings_and_code_as_code():
    """Plain-text extraction kept a heading's words, not that it was one: no HTML page had sections."""
    title, text = html_text(SPHINX_PAGE)
    assert title == "Pin packages - pipx"
    assert text.startswith("# Pin packages\n") and "\n## Pin it\n" in text and "\u00b6" not in text
    assert "```\n# pin it before the next upgrade\n$ pipx pin black\n```" in text
    assert "even ffi_cif." in text and "**" not in text  # prose as written: no Markdown escapes or emphasis
    assert [(h.level, h.title) for h in find_headings(text)] == [(1, "Pin packages"), (2, "Pin it")]


def test_texinfo_navigation_header_is_not_content():
    title, text = html_text(TEXINFO_PAGE)
    assert title == "The Basics (libffi)"
    assert "create an ffi_cif object" in text and "Call InterFace" in text
    assert "Next:" not in text and "Previous:" not in text and "Up:" not in text and "Simple Example" not in text


def test_a_page_too_small_for_main_content_keeps_its_visible_text():
    title, text = html_text(
        "<html><head><title>Badgers</title><style>p{color:red}</style></head><body>"
        "<script>var hidden = 1;</script><p>Badgers dig setts.</p><nav>Next: Otters</nav>"
        "<p>They are nocturnal.</p></body></html>"
    )
    assert title == "Badgers"
    assert "Badgers dig setts." in text and "They are nocturnal." in text
    assert "hidden" not in text and "color" not in text and "Otters" not in text


@pytest.mark.parametrize("raw", ["", "   ", "<html><body><nav>Only navigation</nav></body></html>"])
def test_a_page_without_text_reads_as_empty(raw):
    assert html_text(raw)[1] == ""


def test_html_that_declares_another_encoding_is_still_read_as_the_utf8_it_is():
    raw = (
        '<?xml version="1.0" encoding="ISO-8859-1"?><html><head><meta charset="iso-8859-1"></head>'
        "<body><p>Caf\u00e9 cr\u00e8me, na\u00efve r\u00e9sum\u00e9.</p></body></html>"
    )
    assert html_text(raw)[1] == "Caf\u00e9 cr\u00e8me, na\u00efve r\u00e9sum\u00e9."


def test_html_in_a_declared_single_byte_charset_is_decoded_by_it(tmp_path):
    page = (
        "<html><head><meta http-equiv='Content-Type' content='text/html; charset=ISO-8859-1'>"
        "<title>Caf\u00e9</title></head><body><p>Copyright \u00a9 2001 John Fleck, caf\u00e9 cr\u00e8me.</p></body></html>"
    )
    declared = tmp_path / "old.html"
    declared.write_bytes(page.encode("latin-1"))
    assert read_file(declared)[:2] == ("Caf\u00e9", "Copyright \u00a9 2001 John Fleck, caf\u00e9 cr\u00e8me.")
    undeclared = tmp_path / "guess.html"
    undeclared.write_bytes("<p>caf\u00e9</p>".encode("latin-1"))
    with pytest.raises(UnicodeDecodeError):  # never guessed: reported as not UTF-8
        read_file(undeclared)


RST = """\
=================
Installing Sieve
=================

.. contents::

.. toctree::
   :maxdepth: 2

   quickstart
   reference

Sieve needs *Python 3.10* and reads :ref:`your documents <formats>`; see :func:`~sieve.retriever.index_path`
and ``sieve index``.

.. _formats:

Formats
-------

.. note:: HTML is read by its main content.

.. versionadded:: 0.2
   Word documents are **read** too.

.. code-block:: bash

   sieve index docs/

.. |tool| replace:: the indexer

Run |tool| again to update.

.. a comment nobody should search for

.. image:: diagram.png
"""


def test_rst_is_read_without_markup_comments_or_tables_of_contents(tmp_path):
    f = tmp_path / "install.rst"
    f.write_text(RST, encoding="utf-8")
    title, text, warnings = read_file(f)
    text = " ".join(text.split())  # source line breaks stay in the text; the chunker does not mind
    assert title == "Installing Sieve" and warnings == []
    # a cross-reference is a Markdown link (sieve train mines its sentence and target as a pair)
    assert "Sieve needs Python 3.10 and reads [your documents](#formats); see index_path and sieve index." in text
    assert "HTML is read by its main content." in text
    assert "Word documents are read too." in text  # an unknown (Sphinx) directive keeps its content ...
    assert "sieve index docs/" in text and "Run the indexer again to update." in text
    for markup in (
        "..",
        ":ref:",
        ":func:",
        "toctree",
        "maxdepth",
        "quickstart",
        "Contents",
        "comment nobody",
        "diagram.png",
        "**",
        "``",
        "versionadded",
    ):  # ... but none of its syntax (code is fenced as Markdown fences it)
        assert markup not in text.replace("```", ""), markup
    assert text.startswith("# Installing Sieve") and "## Formats" in text  # titles as headings: the chunker's sections
    assert "``` sieve index docs/ ```" in text


def test_rst_docutils_cannot_parse_is_read_as_plain_text(tmp_path, monkeypatch):
    import sieve.retriever.readers as readers

    def broken(source: str, depth: int = 0):
        raise RuntimeError("docutils gave up")

    monkeypatch.setattr(readers, "_rst_text", broken)
    f = tmp_path / "odd.rst"
    f.write_text("Some *odd* text.\n", encoding="utf-8")
    assert read_file(f)[:2] == ("", "Some *odd* text.\n")


def test_pdf_bookmarks_become_headings_on_their_pages(tmp_path):
    """A PDF's outline is the sections its author declared; its extracted text has no other sign of them."""
    import io

    from pypdf import PdfReader, PdfWriter

    raw = pdf_pages(
        [
            [
                (18, "Field guide"),
                (11, "Otters live by rivers."),
                (14, "1.2 Feeding"),
                (11, "They eat fish and crabs."),
            ],
            [(14, "2   Sleeping"), (11, "Otters hold hands while they sleep."), (9, "# a comment in an example")],
        ]
    )
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(raw)))
    top = writer.add_outline_item(title="Field guide", page_number=0)
    writer.add_outline_item(title="Feeding", page_number=0, parent=top)  # the page numbers it, the bookmark not
    writer.add_outline_item(title="2 Sleeping", page_number=1)
    writer.add_outline_item(title="Appendix", page_number=1)  # on no line of its page: nothing marked
    f = tmp_path / "guide.pdf"
    with f.open("wb") as out:
        writer.write(out)
    title, text, warnings = read_file(f)
    assert warnings == [] and title == ""  # ingestion names it after its file
    assert text.split("\n") == [
        "# Field guide",
        "Otters live by rivers.",
        "## 1.2 Feeding",
        "They eat fish and crabs.",
        "",
        "# 2 Sleeping",
        "Otters hold hands while they sleep.",
        "    # a comment in an example",  # a '#' line is not a heading in a PDF: only its bookmarks are
    ]
    assert [(h.level, h.title) for h in find_headings(text)] == [
        (1, "Field guide"),
        (2, "1.2 Feeding"),
        (1, "2 Sleeping"),
    ]
    plain = tmp_path / "plain.pdf"
    plain.write_bytes(raw)  # no outline: the text as extracted
    unmarked = read_file(plain)[1]
    assert find_headings(unmarked) == [] and "1.2 Feeding\nThey eat fish" in unmarked


def test_docx_paragraphs_and_table_cells_in_document_order(tmp_path):
    import docx

    document = docx.Document()
    document.add_paragraph("Quarterly report", style="Title")
    document.add_paragraph("Revenue grew in the northern region.")
    document.add_heading("By region", level=1)
    table = document.add_table(rows=3, cols=3)
    for r, row in enumerate([("Region", "Q1", "Q2"), ("North", "10", "12"), ("South", "7", "")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    table.cell(2, 1).merge(table.cell(2, 2))  # a merged cell is read once
    document.add_paragraph("Costs were flat.")
    document.sections[0].footer.paragraphs[0].text = "Confidential page footer"
    f = tmp_path / "report.docx"
    document.save(str(f))

    title, text, warnings = read_file(f)
    assert title == "Quarterly report" and warnings == []
    assert text.split("\n\n") == [
        "# Quarterly report",  # Title and Heading styles as Markdown headings: the chunker's sections
        "Revenue grew in the northern region.",
        "## By region",
        "Region | Q1 | Q2",
        "North | 10 | 12",
        "South | 7",
        "Costs were flat.",
    ]


def test_docx_nested_tables_are_read_inside_their_cell(tmp_path):
    import docx

    document = docx.Document()
    outer = document.add_table(rows=1, cols=2)
    outer.cell(0, 0).text = "Outer"
    inner = outer.cell(0, 1).add_table(rows=1, cols=2)
    inner.cell(0, 0).text, inner.cell(0, 1).text = "inner a", "inner b"
    f = tmp_path / "nested.docx"
    document.save(str(f))
    assert read_file(f)[1] == "Outer | inner a | inner b"


def test_markdown_title_is_the_first_top_heading_outside_code(tmp_path):
    """httpx's docs: a page whose first code block held "# Instantiate a client with the default
    configuration." (a Python comment) was titled by it; npm's pages by "same as:" or "~ or ~"."""
    page = tmp_path / "clients.md"
    page.write_text(
        "Some text.\n\n```python\n# Instantiate a client.\nclient = httpx.Client()\n```\n\n# `Client` Instances\n\nMore.\n",
        encoding="utf-8",
    )
    assert read_file(page)[0] == "Client Instances"
    (tmp_path / "setext.md").write_text("Quick Start\n===========\n\n## Install\n", encoding="utf-8")
    assert read_file(tmp_path / "setext.md")[0] == "Quick Start"
    # Front matter names the page first (npm's docs: "title: npm-exec", then "### Synopsis").
    (tmp_path / "front.md").write_text('---\ntitle: "npm-exec"\nsection: 1\n---\n\n# Run\n', encoding="utf-8")
    assert read_file(tmp_path / "front.md")[0] == "npm-exec"
    (tmp_path / "none.md").write_text("## Only a subsection\n\ntext\n", encoding="utf-8")
    assert read_file(tmp_path / "none.md")[0] == ""


MDX_PAGE = """---
title: Server Actions
---

import Tabs from '@theme/Tabs';
import {
  InstallSnippet,
} from '@site/src/components/InstallSnippet';

Call procedures from client components. {/* keep this short */}

## Install

<Tabs groupId="pm">
<TabItem value="npm" label="npm">
<InstallSnippet
  pkgs="@trpc/server zod"
/>
</TabItem>
</Tabs>

```tsx
import { useTRPC } from './trpc';
export function Page() { return <div>{/* ... */}</div>; }
```

<details>
<summary>Backend code</summary>
</details>
"""


def test_quarto_and_r_markdown_are_read_as_markdown_their_code_chunks_as_code(tmp_path):
    page = (
        '---\ntitle: "Fitting a model"\nformat: html\n---\n\n## Load\n\n```{python}\n# read the csv\ndf = load()\n```\n'
    )
    for name in ("fit.qmd", "fit.Rmd"):
        (tmp_path / name).write_text(page.replace("python", "r"), encoding="utf-8")
        title, text, _ = read_file(tmp_path / name)
        assert title == "Fitting a model" and text == page.replace("python", "r")
        assert [h.title for h in find_headings(text)] == ["Load"]  # "# read the csv" is code


def test_mdx_is_read_as_markdown_without_its_imports_comments_and_component_tags(tmp_path):
    """Docusaurus, Nextra and Mintlify pages are .mdx: read as Markdown, the JavaScript left out
    (tRPC's docs: 29 of its 90 pages, each opening with imports)."""
    page = tmp_path / "server-actions.mdx"
    page.write_text(MDX_PAGE, encoding="utf-8")
    title, text, _ = read_file(page)
    assert title == "Server Actions"
    assert "@theme/Tabs" not in text and "InstallSnippet" not in text and "keep this short" not in text
    assert "<Tabs" not in text and "TabItem" not in text
    # what the tags' attributes say stays; code examples are untouched; HTML tags are as in .md
    assert "## Install\n\nnpm\n@trpc/server zod\n\n```tsx\n" in text  # the tab's label, the snippet's packages
    assert "import { useTRPC } from './trpc';\nexport function Page() { return <div>{/* ... */}</div>; }" in text
    assert "<summary>Backend code</summary>" in text
    assert [h.title for h in find_headings(text)] == ["Install"]


def test_a_notebook_is_read_as_its_markdown_and_fenced_code_without_outputs(tmp_path):
    import json

    from sieve.retriever.ingest import IngestReport, iter_documents

    cells = [
        {"cell_type": "markdown", "source": ["# Density based relevance\n", "\n", "Why distances drift."]},
        {"cell_type": "code", "source": ["# load the vectors\n", "x = load()"], "outputs": [{"text": "Loaded 4 rows"}]},
        {"cell_type": "raw", "source": ".. autoclass:: Store"},
        {"cell_type": "markdown", "source": "## Results"},
    ]
    nb = {"nbformat": 4, "metadata": {"kernelspec": {"language": "python"}}, "cells": cells}
    (tmp_path / "relevance.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    title, text, _ = read_file(tmp_path / "relevance.ipynb")
    assert title == "Density based relevance"
    assert text == (
        "# Density based relevance\n\nWhy distances drift.\n\n```python\n# load the vectors\nx = load()\n```\n\n## Results"
    )
    assert [h.title for h in find_headings(text)] == ["Density based relevance", "Results"]  # the comment is code
    # an nbformat 3 notebook and a broken file are skipped, each with its reason; the rest is read
    (tmp_path / "old.ipynb").write_text(json.dumps({"nbformat": 3, "worksheets": [{"cells": []}]}), encoding="utf-8")
    (tmp_path / "cut.ipynb").write_text('{"cells": [', encoding="utf-8")
    report = IngestReport()
    assert [d.doc_id for d in iter_documents(tmp_path, report)] == ["relevance.ipynb"]
    reasons = {w.rsplit("/", 1)[-1]: r for w, r in report.skipped}
    assert "nbformat 3" in reasons["old.ipynb"] and "JSONDecodeError" in reasons["cut.ipynb"]


ADOC_PAGE = """= Safe Modes
:navtitle: Safe modes
// a comment nobody reads

Asciidoctor runs in one of four safe modes; see xref:api:options.adoc#safe[the safe option^] and <<secure,SECURE>>.
Report problems at {url-repo}/issues[the tracker^] or https://example.org/chat[the chat].

[#secure]
== Secure mode

.Run it from the command line
[source,sh]
----
# as any user
asciidoctor -S secure doc.adoc
----

////
A draft paragraph.
////

[cols="1,1"]
|===
|Mode |Reads files
|===

 # an indented literal line
----
a delimiter never closed
"""


def test_asciidoc_is_read_with_its_sections_code_and_cross_references_as_markdown(tmp_path):
    page = tmp_path / "safe-modes.adoc"
    page.write_text(ADOC_PAGE, encoding="utf-8")
    title, text, _ = read_file(page)
    assert title == "Safe Modes"
    assert [(h.level, h.title, h.anchor) for h in find_headings(text)] == [
        (1, "Safe Modes", ""),
        (2, "Secure mode", "secure"),
    ]
    assert "[the safe option](options.adoc#safe) and [SECURE](#secure)" in text  # Antora's api: prefix dropped
    assert "Report problems at the tracker or [the chat](https://example.org/chat)." in text
    assert "Run it from the command line\n```sh\n# as any user\nasciidoctor -S secure doc.adoc\n```" in text
    assert "navtitle" not in text and "comment nobody" not in text and "draft" not in text and "cols" not in text
    assert "|===" not in text and "|Mode |Reads files" in text
    assert "\n     # an indented literal line\n" in text  # indented further: no heading
    assert text.endswith("----\na delimiter never closed")


def test_docx_title_from_its_properties(tmp_path):
    import docx

    document = docx.Document()
    document.core_properties.title = "Set in properties"
    document.add_paragraph("Body text.")
    f = tmp_path / "p.docx"
    document.save(str(f))
    assert read_file(f)[:2] == ("Set in properties", "Body text.")


def test_library_warnings_come_back_with_the_file_and_are_not_logged(tmp_path, caplog, capsys):
    f = tmp_path / "damaged.pdf"
    pdf_with_a_wrong_startxref(f)
    with caplog.at_level(logging.WARNING):
        title, text, warnings = read_file(f)
    assert text == "Damaged but readable"
    assert warnings and all(w.startswith("pypdf: ") for w in warnings) and len(set(warnings)) == len(warnings)
    assert "startxref" in " ".join(warnings)
    assert not [r for r in caplog.records if r.name.startswith("pypdf")]
    assert "startxref" not in capsys.readouterr().err
    # Outside a read, the library logs as usual again.
    with caplog.at_level(logging.WARNING):
        from pypdf import PdfReader

        PdfReader(str(f))
    assert [r for r in caplog.records if r.name.startswith("pypdf")]


def test_captures_are_per_thread():
    log = logging.getLogger("pypdf.test")
    other: list[list[str]] = []
    inside, release = threading.Event(), threading.Event()

    def worker() -> None:
        with captured_library_logs() as mine:
            inside.set()
            release.wait(5)
            log.warning("from the worker")
        other.append(mine)

    t = threading.Thread(target=worker)
    t.start()
    inside.wait(5)
    with captured_library_logs() as main:
        log.warning("from the main thread")
    release.set()
    t.join(5)
    assert main == ["pypdf: from the main thread"] and other == [["pypdf: from the worker"]]
    assert logging.getLogger("pypdf").propagate and not logging.getLogger("pypdf").handlers


def test_every_supported_suffix_has_a_reader():
    assert supported_suffixes() == (*READERS, ".jsonl")  # .jsonl holds many documents: ingest reads it
    shipped = (
        ".txt",
        ".md",
        ".markdown",
        ".qmd",
        ".rmd",
        ".mdx",
        ".rst",
        ".html",
        ".htm",
        ".docx",
        ".pdf",
        ".ipynb",
        ".adoc",
        ".asciidoc",
    )
    assert tuple(READERS) == shipped
