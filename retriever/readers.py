"""Readers: one file's title and text, per format, by suffix: one registry (:data:`READERS`).

Adding a format is one :func:`register_reader` call; what ingestion picks up in a folder
(:func:`supported_suffixes`) and ``sieve index``'s help (:func:`formats_help`) read the registry.

``.txt`` and ``.md`` are read as they are (strict UTF-8: a latin-1 file is reported, not garbled);
``.mdx`` as Markdown without its JavaScript (:mod:`~sieve.retriever.mdx`: imports, JSX comments
and component tags removed); ``.ipynb`` notebooks as their Markdown cells and fenced code cells
(:mod:`~sieve.retriever.notebooks`; outputs left out); ``.adoc`` with its sections, code blocks and
cross references written as Markdown's (:mod:`~sieve.retriever.asciidoc`);
``.html``/``.htm`` through :func:`~sieve.retriever.html.html_text` (main content, no navigation;
UTF-8, or the charset the page itself declares);
``.rst`` through docutils (markup, comments, tables of contents and Sphinx-only directives'
syntax removed, their content kept); ``.docx`` through python-docx (paragraphs and table cells in
document order; page headers and footers left out); ``.pdf`` through pypdf. Every format's sections
come out as Markdown headings, which the chunker cuts at: rst section titles, HTML ``<h1>``-``<h6>``,
.docx Title and Heading styles, a PDF's bookmarks.

What a library logs while it reads (pypdf's "Ignoring wrong pointing object …", say) is not
printed: :func:`read_file` returns it with the text, so ingestion reports it once, beside the file
it concerns, through Sieve's own logging.
"""

from __future__ import annotations

import io
import logging
import re
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sieve.core.errors import InvalidInput
from sieve.retriever.asciidoc import asciidoc_text
from sieve.retriever.mdx import mdx_text
from sieve.retriever.notebooks import notebook_text
from sieve.retriever.sections import atx_heading, fenced, find_headings

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

# Loggers of the libraries the readers call; their records are captured per file.
_LIBRARY_LOGGERS = ("pypdf", "trafilatura", "htmldate", "courlan", "justext", "docx", "docutils")


class _PerThread(logging.Handler):
    """Routes a library's records to the capture of the thread that logged them; records of a
    thread that captures nothing go on to the root logger's handlers, as if never intercepted."""

    def __init__(self) -> None:
        super().__init__(level=logging.NOTSET)
        self.captures: dict[int, list[str]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        messages = self.captures.get(record.thread or 0)
        if messages is None:
            logging.getLogger().handle(record)
            return
        if record.levelno < logging.WARNING:
            return
        try:
            message = f"{record.name.split('.')[0]}: {record.getMessage()}"
        except Exception:  # a malformed record must not fail the read
            message = f"{record.name}: {record.msg!r}"
        if message not in messages:
            messages.append(message)


_router = _PerThread()
_router_lock = threading.Lock()
_saved_propagate: dict[str, bool] = {}


@contextmanager
def captured_library_logs() -> Iterator[list[str]]:
    """Collect what the readers' libraries log at WARNING and above, in this thread, instead of printing it.

    Thread-safe: each thread gets its own list; the loggers are restored when the last capture ends.

    Yields:
        The list the messages are appended to (``"pypdf: …"``), each once.
    """
    messages: list[str] = []
    me = threading.get_ident()
    with _router_lock:
        if not _router.captures:
            for name in _LIBRARY_LOGGERS:
                lg = logging.getLogger(name)
                _saved_propagate[name] = lg.propagate
                lg.addHandler(_router)
                lg.propagate = False
        outer = _router.captures.get(me)
        _router.captures[me] = messages
    try:
        yield messages
    finally:
        with _router_lock:
            if outer is None:
                del _router.captures[me]
            else:
                _router.captures[me] = outer
            if not _router.captures:
                for name in _LIBRARY_LOGGERS:
                    lg = logging.getLogger(name)
                    lg.removeHandler(_router)
                    lg.propagate = _saved_propagate.pop(name, True)


def read_utf8(path: Path) -> str:
    """The file's text; ``UnicodeDecodeError`` when it is not UTF-8 (never replaced characters)."""
    return path.read_bytes().decode("utf-8")


_FRONT_MATTER = re.compile(r"---\r?\n(.*?)\r?\n(?:---|\.\.\.)\r?\n", re.DOTALL)


def _markdown_title(text: str) -> str:
    """The ``title:`` of the page's front matter (Hugo, Jekyll, Docusaurus: npm's docs hold
    ``title: npm-exec``), else its first top-level heading outside fenced code: a ``# comment`` in a
    code block is no title (httpx's docs were titled "Instantiate a client with the default
    configuration.", npm's "same as:")."""
    front = _FRONT_MATTER.match(text)
    found = re.search(r"^title:[ \t]*(.+?)[ \t]*$", front.group(1), re.MULTILINE) if front else None
    if found and found.group(1).strip("'\""):
        return found.group(1).strip("'\"").strip()
    return next((h.title for h in find_headings(text) if h.level == 1), "")


# Markdown, and the notebooks' Markdown of Quarto (.qmd) and R Markdown (.Rmd): code in ```{python} fences.
_MARKDOWN = (".md", ".markdown", ".qmd", ".rmd")


def read_text(path: Path) -> tuple[str, str]:
    text = read_utf8(path)
    return (_markdown_title(text) if path.suffix.lower() in _MARKDOWN else ""), text


def as_markdown(convert: Callable[[str], str]) -> Callable[[Path], tuple[str, str]]:
    """A reader for a format that ``convert`` rewrites as Markdown (MDX, notebooks, AsciiDoc): the
    file's UTF-8 text converted, titled as a Markdown page is (front matter, else its first ``#``)."""

    def read(path: Path) -> tuple[str, str]:
        text = convert(read_utf8(path))
        return _markdown_title(text), text

    return read


_DECLARED_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9._:-]+)|<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9._:-]+)""",
    re.IGNORECASE,
)


def _declared_charset(data: bytes) -> str | None:
    """The encoding a page declares in its first 4 KB (``<meta charset>``, ``http-equiv``, ``<?xml encoding>``),
    if Python knows it."""
    import codecs

    m = _DECLARED_CHARSET.search(data[:4096])
    if m is None:
        return None
    name = (m.group(1) or m.group(2)).decode("ascii")
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def read_html(path: Path) -> tuple[str, str]:
    """UTF-8, or the charset the page declares (old manuals say ISO-8859-1); undeclared non-UTF-8 is an error."""
    from sieve.retriever.html import html_text

    data = path.read_bytes()
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError:
        charset = _declared_charset(data)
        if charset is None or charset == "utf-8":
            raise
        raw = data.decode(charset, errors="replace")  # what the author declared; single-byte charsets never fail
    return html_text(raw)


def read_pdf(path: Path) -> tuple[str, str]:
    from pypdf import PdfReader

    reader = PdfReader(str(path))
    # A line of the page that opens with '#' (a config file's comment in a manual) is not a heading:
    # indented four spaces, the chunker does not read it as one. Only bookmarks are.
    pages = [re.sub(r"^#", "    #", page.extract_text() or "", flags=re.MULTILINE) for page in reader.pages]
    for page, level, title in _pdf_outline(reader):
        if page < len(pages):
            pages[page] = _mark_heading(pages[page], title, level)
    # No title from the info dictionary: it is often a generator's ("Microsoft Word - draft.docx").
    return "", "\n\n".join(pages).strip()


def _pdf_outline(reader) -> list[tuple[int, int, str]]:
    """The PDF's bookmarks as (page index, depth from 1, title), in order; none when it has no
    readable outline (a damaged one is skipped: the pages are still worth reading)."""
    out: list[tuple[int, int, str]] = []

    def walk(items: list, depth: int) -> None:
        for item in items:
            if isinstance(item, list):  # the children of the item before it
                walk(item, depth + 1)
                continue
            page = reader.get_destination_page_number(item)
            title = " ".join(str(item.get("/Title") or "").split())
            if title and page is not None and page >= 0:
                out.append((page, depth, title))

    try:
        walk(reader.outline, 1)
    except Exception:  # pypdf raises many types on a broken outline
        return []
    return out


def _mark_heading(text: str, title: str, level: int) -> str:
    """``text`` with its first line that reads ``title`` (spacing and case aside) written as a Markdown
    heading (``## 1.2 Feeding``); unchanged when no line does.

    Why: a PDF's bookmarks are the sections its author declared, and the chunker finds sections by
    Markdown headings (:mod:`sieve.retriever.sections`); extracted text has no other sign of them.
    """
    want = "".join(title.split()).casefold()
    lines = text.split("\n")
    for i, line in enumerate(lines):
        squeezed = "".join(line.split()).casefold()
        # the page may number a section its bookmark does not ("2.1 ASN.1 syntax" for "ASN.1 syntax")
        if squeezed.endswith(want) and _SECTION_NUMBER.fullmatch(squeezed[: len(squeezed) - len(want)]):
            lines[i] = atx_heading(level, " ".join(line.split()))
            return "\n".join(lines)
    return text


_SECTION_NUMBER = re.compile(r"|\d+(?:\.\d+)*\.?|[a-z](?:\.\d+)+\.?|[a-z]\.")  # none, 2.1, 2.1., A.1, A.


def _docx_blocks(container, headings: bool = False) -> list[str]:
    """The non-empty paragraphs and table rows of a document or a table cell, in order; with
    ``headings``, a Title or Heading paragraph as a Markdown heading (:func:`_docx_heading`)."""
    from docx.table import Table

    blocks: list[str] = []
    for item in container.iter_inner_content():
        if isinstance(item, Table):
            blocks += _docx_rows(item)
        elif item.text.strip():
            level = _docx_heading(item) if headings else 0
            blocks.append(atx_heading(level, " ".join(item.text.split())) if level else item.text.strip())
    return blocks


def _docx_heading(paragraph) -> int:
    """A paragraph's heading level: 1 for the Title style, n + 1 for "Heading n" (at most 6), else 0.

    Why: the chunker finds sections by Markdown headings (:mod:`sieve.retriever.sections`), and a Word
    document states its sections in paragraph styles, which plain paragraph text drops.
    """
    name = paragraph.style.name if paragraph.style is not None else ""
    if name == "Title":
        return 1
    m = re.fullmatch(r"Heading (\d)", name)
    return min(int(m.group(1)) + 1, 6) if m else 0


def _docx_cell_text(cell) -> str:
    """A table cell's paragraphs and nested tables' cells, as one line."""
    return " ".join(_docx_blocks(cell))


def _docx_rows(table) -> list[str]:
    """One line per row, cells joined by `` | ``; a merged cell (repeated per grid column it spans) once."""
    lines = []
    for row in table.rows:
        seen: list = []  # the cells' XML elements: held, so identity is stable
        cells = []
        for cell in row.cells:
            if any(cell._tc is tc for tc in seen):
                continue
            seen.append(cell._tc)
            cells.append(_docx_cell_text(cell))
        line = " | ".join(c for c in cells if c)
        if line:
            lines.append(line)
    return lines


def read_docx(path: Path) -> tuple[str, str]:
    """Paragraphs and table rows in document order (page headers and footers are boilerplate: left out)."""
    import docx

    document = docx.Document(str(path))
    blocks = _docx_blocks(document, headings=True)
    title = (document.core_properties.title or "").strip()
    if not title:
        styled = (p.text.strip() for p in document.paragraphs if p.style is not None and p.style.name == "Title")
        title = next((t for t in styled if t), "")
    return title, "\n\n".join(blocks)


# reStructuredText ---------------------------------------------------------------------------------

# Sphinx directives whose content is navigation or a pointer to other files: dropped whole.
_RST_DROPPED = {
    "toctree",
    "index",
    "include",
    "literalinclude",
    "tabularcolumns",
    "highlight",
    "currentmodule",
    "module",
    "automodule",
    "autoclass",
    "autofunction",
    "automethod",
    "autoattribute",
    "autodata",
    "autoexception",
    "autosummary",
    "codeauthor",
    "sectionauthor",
    "moduleauthor",
    "default-role",
    "default-domain",
}
_ROLE = re.compile(r"^:((?:[\w.+-]+:)+)`(.*)`$", re.DOTALL)
_DIRECTIVE = re.compile(r"^\.\.\s+([\w:.+-]+)::[ \t]*(.*)$")


def _role_text(raw: str) -> str:
    """A Sphinx role as its text: a cross-reference as a Markdown link (``:ref:`Title <label>``` ->
    ``[Title](#label)``, ``:doc:`Install <../how-to/install>``` -> ``[Install](../how-to/install)``),
    ``:func:`~pkg.mod.f``` -> ``f``, other markup unwrapped.

    Why links: a cross-reference's sentence and the section it points to are a pair written by the
    page's authors (``sieve train``'s link pairs, :mod:`sieve.train.weak_pairs`), as in Markdown docs.
    """
    m = _ROLE.match(raw.strip())
    role = m.group(1).strip(":").rsplit(":", 1)[-1] if m else ""
    inner = m.group(2) if m else raw.strip().strip("`_|")
    titled = re.match(r"^(.*?)\s*<([^<>]*)>$", inner, flags=re.DOTALL)
    title, target = (titled.group(1), titled.group(2).strip()) if titled and titled.group(1) else ("", inner.strip())
    if role == "doc":
        return f"[{' '.join((title or target.rsplit('/', 1)[-1]).split())}]({target})"
    if role == "ref" and title:  # an untitled :ref: shows the target's title, unknown to this page
        return f"[{' '.join(title.split())}](#{target})"
    if title:
        return title
    if inner.startswith("~"):
        return inner[1:].rsplit(".", 1)[-1]
    return inner.lstrip("!")


def _unknown_directive_text(block: str, depth: int) -> str:
    """What an unknown directive (Sphinx's ``versionadded``, ``py:function``, …) says, without its syntax."""
    lines = block.splitlines()
    m = _DIRECTIVE.match(lines[0]) if lines else None
    if m is None:
        return ""
    name, argument = m.group(1), m.group(2).strip()
    if name.split(":")[-1] in _RST_DROPPED:
        return ""
    body = lines[1:]
    while body and re.match(r"^\s+:[\w-]+:", body[0]):  # the directive's options
        body = body[1:]
    import textwrap

    content = textwrap.dedent("\n".join(body)).strip()
    parts = [argument] if argument else []
    if content:
        parts.append(_rst_text(content, depth + 1)[1] if depth < 3 else content)
    return "\n\n".join(parts)


def _rst_text(source: str, depth: int = 0) -> tuple[str, str]:
    from docutils import nodes
    from docutils.core import publish_doctree

    doctree = publish_doctree(
        source,
        settings_overrides={
            "report_level": 5,
            "halt_level": 5,
            "warning_stream": io.StringIO(),
            "file_insertion_enabled": False,
            "raw_enabled": False,
            "_disable_config": True,
            "syntax_highlight": "none",
            "input_encoding": "unicode",
            "doctitle_xform": depth == 0,
        },
    )
    for node in list(doctree.findall(nodes.problematic)):  # an unknown role (Sphinx's :ref:, :func:)
        node.parent.replace(node, nodes.Text(_role_text(node.astext())))
    for node in list(doctree.findall(nodes.system_message)):
        literal = next(iter(node.findall(nodes.literal_block)), None)
        kept = _unknown_directive_text(literal.astext(), depth) if literal is not None else ""
        if kept and node.parent is not None:
            node.parent.replace(node, nodes.paragraph(text=kept))
        elif node.parent is not None:
            node.parent.remove(node)
    dropped: tuple[Callable[[nodes.Node], bool], ...] = (
        lambda n: isinstance(
            n, (nodes.comment, nodes.substitution_definition, nodes.raw, nodes.target, nodes.pending, nodes.image)
        ),
        lambda n: isinstance(n, nodes.topic) and "contents" in n.get("classes", ()),  # .. contents::
    )
    for node in list(doctree.findall(lambda n: any(test(n) for test in dropped))):
        if node.parent is not None:
            node.parent.remove(node)
    _mark_structure(doctree, titles=depth == 0)  # a directive's content (depth > 0) has code, not sections
    text = re.sub(r"\n{3,}", "\n\n", doctree.astext()).strip()
    return str(doctree.get("title") or ""), text


def _mark_structure(doctree: Any, titles: bool = True) -> None:
    """Write the page's title and section titles as Markdown headings (``# Page``, ``## Section``) and its
    literal blocks as fenced code, in the text docutils renders.

    Why: rendering drops rst's adornment lines, and the chunker finds sections by the shape of lines
    (:mod:`sieve.retriever.sections`): without the marks a rendered page has no headings, so its chunks
    record no heading path and run from one section into the next. The fences keep a shell comment
    in a code block (``# install it``) from reading as a heading.
    """
    from docutils import nodes

    for title in list(doctree.findall(nodes.title)) if titles else []:
        if not isinstance(title.parent, (nodes.document, nodes.section)):
            continue  # an admonition's or a table's title is not a section
        level = 1 + sum(1 for a in _ancestors(title) if isinstance(a, nodes.section))
        heading = " ".join(title.astext().split())
        # A label (".. _cache-dir:") that cross-references point at, as a Pandoc/Hugo anchor ("{#cache-dir}").
        labels = [i for i in title.parent.get("ids", []) if i != nodes.make_id(heading)]
        del title[:]
        title += nodes.Text(atx_heading(level, heading + (f" {{#{labels[0]}}}" if labels else "")))
    for block in list(doctree.findall(nodes.literal_block)):
        code = block.astext()
        del block[:]
        block += nodes.Text(fenced(code.rstrip("\n")))


def _ancestors(node: Any) -> Iterator[Any]:
    while node.parent is not None:
        node = node.parent
        yield node


def read_rst(path: Path) -> tuple[str, str]:
    """reStructuredText as its readable text (a file docutils cannot parse is read as it is)."""
    source = read_utf8(path)
    try:
        return _rst_text(source)
    except Exception as exc:  # docutils raises many types on odd input; the plain text is still worth indexing
        logging.getLogger(__name__).info(
            "%s: docutils failed (%s: %s); reading it as plain text", path, type(exc).__name__, exc
        )
        return "", source


READERS: dict[str, Callable[[Path], tuple[str, str]]] = {}
"""Suffix (lower-case, with its dot) -> the reader of such files: the one list of the formats Sieve reads
one document a file from; ``sieve index``'s help and what ingestion picks up derive from it."""

JSONL = ".jsonl"  # many documents a file, one a line: read record by record by sieve.retriever.ingest


def register_reader(read: Callable[[Path], tuple[str, str]], *suffixes: str) -> None:
    """Read files of ``suffixes`` (``".md"``; lower-case, with the dot) with ``read`` from now on.

    Raises:
        InvalidInput: a suffix without its leading dot, with capitals, or ``.jsonl`` (ingestion's own).
    """
    for suffix in suffixes:
        if not suffix.startswith(".") or suffix != suffix.lower() or suffix == JSONL:
            raise InvalidInput(f"Expected a lower-case suffix with its dot, not {JSONL}, got {suffix!r}")
        READERS[suffix] = read


def supported_suffixes() -> tuple[str, ...]:
    """Every suffix ingestion reads: the registered readers' (in registry order), then ``.jsonl``."""
    return (*READERS, JSONL)


def formats_help() -> str:
    """``".txt .md ... .jsonl and Slack exports"``: the suffixes for a help text, and the one folder
    layout ingestion reads beside them (:mod:`~sieve.retriever.slack`)."""
    return " ".join(supported_suffixes()) + " and Slack exports"


register_reader(read_text, ".txt", *_MARKDOWN)
register_reader(as_markdown(mdx_text), ".mdx")
register_reader(read_rst, ".rst")
register_reader(read_html, ".html", ".htm")
register_reader(read_docx, ".docx")
register_reader(read_pdf, ".pdf")
register_reader(as_markdown(notebook_text), ".ipynb")
register_reader(as_markdown(asciidoc_text), ".adoc", ".asciidoc")


def read_file(path: Path) -> tuple[str, str, list[str]]:
    """A file's title, text and what its library warned about while reading it.

    Args:
        path: a file whose suffix (lower-cased) is in :data:`READERS`.

    Returns:
        ``(title, text, warnings)``; ``title`` may be empty (the caller names the document after
        the file then).

    Raises:
        UnicodeDecodeError: a text format that is not UTF-8.
        Exception: whatever the format's library raises for a broken file.
    """
    reader = READERS[path.suffix.lower()]
    with captured_library_logs() as warnings:
        title, text = reader(path)
    return title, text, list(warnings)


__all__ = [
    "JSONL",
    "READERS",
    "as_markdown",
    "captured_library_logs",
    "formats_help",
    "read_file",
    "read_utf8",
    "register_reader",
    "supported_suffixes",
]
