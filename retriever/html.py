"""The main text of an HTML page: what a reader came for, without navigation, menus and footers.

Extraction is trafilatura's (a maintained main-content extractor that scores the page's blocks
and keeps the article), run on a tree from which the navigation that documentation generators
mark as such has already been cut: ``<nav>``, ``<header>``, ``<footer>``, ``<aside>``,
``role="navigation"`` and the classes of Texinfo (``div.header``: "Next: … Previous: … Up: …";
``div.nav-panel``; section menus), DocBook (``navheader``/``navfooter``), Sphinx (``related``,
``sphinxsidebar``, ``footer``) and gtk-doc (``table.navigation``). trafilatura alone keeps
Texinfo's one-line header, because to a scorer it looks like a short paragraph.

When trafilatura finds no main content (a tiny page, a page that is all table), the page's
visible text is used instead, from the same cleaned tree, so a page is never lost for being small.
"""

from __future__ import annotations

import re
from copy import deepcopy

from sieve.retriever.sections import atx_heading, fenced


def _has_class(tag: str, name: str) -> str:
    """XPath for ``tag`` elements with class ``name`` (case-insensitive: old DocBook writes NAVHEADER)."""
    lowered = "translate(@class, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')"
    return f"//{tag}[contains(concat(' ', normalize-space({lowered}), ' '), ' {name} ')]"


# Elements that are navigation wherever they appear.
_NAV_XPATH = " | ".join(
    [
        "//nav",
        "//aside",
        "//script",
        "//style",
        "//noscript",
        "//template",
        # A page's header and footer; an article's own <header> (its title, its byline) is content.
        "//header[not(ancestor::article or ancestor::main)]",
        "//footer[not(ancestor::article or ancestor::main)]",
        "//*[@role='navigation' or @role='banner' or @role='contentinfo' or @role='search']",
        # Texinfo (makeinfo --html): the "Next: … Previous: … Up: …" line, its newer nav-panel, node menus
        # and mini tables of contents (they repeat titles of other pages).
        _has_class("div", "header"),
        _has_class("div", "nav-panel"),
        _has_class("table", "menu"),
        _has_class("ul", "section-toc"),
        _has_class("ul", "mini-toc"),
        # DocBook XSL and gtk-doc.
        _has_class("div", "navheader"),
        _has_class("div", "navfooter"),
        _has_class("table", "navigation"),
        # Sphinx.
        _has_class("div", "related"),
        _has_class("div", "sphinxsidebar"),
        _has_class("div", "footer"),
        # Permalink anchors after headings (Sphinx's ¶, Node's #).
        "//a[normalize-space(.)='#' or normalize-space(.)='¶' or normalize-space(.)='§']",
    ]
)


def _parse(raw: str):
    import lxml.html

    # lxml refuses a str that declares its encoding; the bytes carry the declaration honestly.
    data = raw.encode("utf-8")
    parser = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True)
    return lxml.html.document_fromstring(data, parser=parser)


def _title(tree) -> str:
    title = tree.find(".//title")
    return re.sub(r"\s+", " ", title.text_content()).strip() if title is not None else ""


def _strip_navigation(tree) -> None:
    for el in tree.xpath(_NAV_XPATH):
        if el.getparent() is not None:
            el.drop_tree()  # keeps the tail text that follows the element


def _visible_text(tree) -> str:
    from bs4 import BeautifulSoup
    import lxml.html

    soup = BeautifulSoup(lxml.html.tostring(tree, encoding="unicode"), "html.parser")
    return re.sub(r"\n\s*\n+", "\n\n", soup.get_text("\n")).strip()


def _main_text(tree) -> str:
    import trafilatura

    text = trafilatura.extract(
        deepcopy(tree),  # a copy: the fallback reads the tree as it was
        output_format="txt",
        include_comments=False,  # a page's reader comments are not its documentation
        include_tables=True,
        include_images=False,
        include_links=False,
        deduplicate=False,
        with_metadata=False,
    )
    return (text or "").strip()


def _mark_structure(tree) -> None:
    """Headings as Markdown headings (``<h2>Pin it</h2>`` -> ``## Pin it``) and ``<pre>`` as fenced code.

    Why: plain-text extraction keeps a heading's words but not that it is one, and the chunker finds
    sections by the shape of lines (:mod:`sieve.retriever.sections`); the fences keep a shell comment
    in a code block (``# install it``) from reading as a heading. trafilatura's own Markdown output
    was not used: it escapes prose (``ffi\\_cif``), which BM25 then reads as two words.
    """
    for el in tree.xpath("//h1 | //h2 | //h3 | //h4 | //h5 | //h6"):
        title = " ".join(el.text_content().split()).rstrip("\u00b6\u00a7#").strip()  # Sphinx/MkDocs anchors: ¶, §, #
        tail = el.tail
        el.clear()
        el.text, el.tail = atx_heading(int(el.tag[1]), title) if title else "", tail
    for el in tree.xpath("//pre"):
        code, tail = el.text_content(), el.tail
        el.clear()
        el.text, el.tail = fenced(code.strip("\n")), tail


def html_text(raw: str) -> tuple[str, str]:
    """The title and main text of an HTML page.

    Args:
        raw: the page's markup.

    Returns:
        ``(title, text)``: the ``<title>`` (empty when there is none) and the main content, or the
        page's visible text when no main content was found; ``text`` is empty for a page with no
        text at all.

    Example:
        >>> html_text("<title>T</title><nav>Next: Other page</nav><p>Badgers dig setts.</p>")
        ('T', 'Badgers dig setts.')
    """
    if not raw.strip():
        return "", ""
    tree = _parse(raw)
    title = _title(tree)
    head = tree.find("head")
    if head is not None:
        head.drop_tree()  # the title is kept above; nothing else in <head> is text
    _strip_navigation(tree)
    _mark_structure(tree)
    text = _main_text(tree)
    if not text:
        text = _visible_text(tree)
    return title, text


__all__ = ["html_text"]
