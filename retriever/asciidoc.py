"""AsciiDoc pages (``.adoc``: Antora sites, Spring, Asciidoctor) as the Markdown a reader sees.

AsciiDoc marks sections with leading ``=`` (``== Install``) and code with delimited blocks
(``----``), which the chunker's Markdown and rst rules do not read: a page would have no sections
and its ``# comment`` lines in code could open some. So the page is rewritten line by line, its
words untouched:

- a section title ``== Install`` becomes ``## Install`` (``= Page`` the page's ``#`` title), with the
  id an anchor line gave it (``[#install]``, ``[[install]]``) as ``{#install}``;
- listing and literal blocks (``----``, ``....``) become fenced code in the language their
  ``[source,ruby]`` line names; comment blocks (``////``) and ``//`` comments are left out;
- other delimiters (example, sidebar, quote, open, passthrough blocks; ``|===`` tables) are dropped
  and their content kept; so are block attribute lines (``[NOTE]``, ``[cols=...]``), attribute
  entries (``:toc:``) and ``include::`` lines (the included file is a file of its own);
- a block title ``.Options`` is kept as the line ``Options``; an indented (literal) line is indented
  further, so it never reads as a heading;
- cross references become Markdown links that the link miner follows: ``xref:page.adoc#id[Text]``
  → ``[Text](page.adoc#id)`` (an Antora ``component:module:`` prefix dropped), ``<<id,Text>>`` →
  ``[Text](#id)``, ``link:url[Text]`` and ``url[Text]`` → ``[Text](url)``; a link whose address is
  an attribute reference (``{url-repo}/issues[the tracker]``) keeps its text.

Example:
    >>> page = "= Guide\\n:toc:\\n\\n[#setup]\\n== Set up\\n\\n.Install it\\n[,sh]\\n----\\n# as root\\ngem install x\\n----\\n"
    >>> print(asciidoc_text(page))
    # Guide
    <BLANKLINE>
    ## Set up {#setup}
    <BLANKLINE>
    Install it
    ```sh
    # as root
    gem install x
    ```
"""

from __future__ import annotations

import re

from sieve.retriever.sections import atx_heading, fenced

_TITLE = re.compile(r"(={1,6})[ \t]+(\S.*?)[ \t]*$")
_CODE_BLOCK = re.compile(r"-{4,}|\.{4,}")  # listing, literal; closed by the same line
_DROPPED_DELIMITERS = re.compile(r"(?:={4,}|\*{4,}|_{4,}|\+{4,}|-{2}|[|,:!]={3,})[ \t]*$")
_COMMENT_BLOCK = re.compile(r"/{4,}[ \t]*$")
_ANCHOR_LINE = re.compile(r"\[\[([\w:.-]+)(?:,[^\]]*)?\]\][ \t]*")  # [[install]] or [[install,Install]]
_BLOCK_ATTRIBUTES = re.compile(r"\[([^\[\]]*)\][ \t]*")  # [source,ruby], [#install], [NOTE], [cols=2*]
_ATTRIBUTE_ENTRY = re.compile(r":!?[\w-]+!?:(?:[ \t].*)?$")
_BLOCK_TITLE = re.compile(r"\.([^.\s].*)$")
_XREF = re.compile(r"xref:(?:[\w.-]*:){0,2}([^\[\s]*)\[([^\]]*)\]")
_INTERNAL = re.compile(r"<<([\w:.-]+)(?:,\s*([^>]+))?>>")
_ATTRIBUTE_URL = re.compile(r"\{[\w-]+\}[^\[\s]*\[([^\]]*)\]")  # {url-org}/issues/1601[issue #1601]: the text
_URL = re.compile(r"(?:link:)?((?:https?|mailto):[^\[\s]+|link:[^\[\s]+)\[([^\]]*)\]")


def asciidoc_text(text: str) -> str:
    """``text`` (an AsciiDoc page) as Markdown, as the module describes."""
    out: list[str] = []
    lines = text.splitlines()
    anchor = language = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if _CODE_BLOCK.fullmatch(stripped) or _COMMENT_BLOCK.fullmatch(stripped):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == stripped), None)
            if end is not None:  # a delimiter never closed is text
                if _CODE_BLOCK.fullmatch(stripped):
                    out.append(fenced("\n".join(lines[i + 1 : end]), language))
                i, anchor, language = end + 1, "", ""
                continue
        i += 1
        anchor_line = None if line[:1].isspace() else _ANCHOR_LINE.fullmatch(stripped)
        if anchor_line:
            anchor = anchor_line.group(1)
            continue
        attributes = None if line[:1].isspace() else _BLOCK_ATTRIBUTES.fullmatch(stripped)
        if attributes:
            anchor, language = _anchor_and_language(attributes.group(1), anchor, language)
            continue
        if (
            stripped.startswith("//")
            or stripped.startswith("include::")
            or _ATTRIBUTE_ENTRY.fullmatch(stripped)
            or _DROPPED_DELIMITERS.fullmatch(stripped)
        ):
            continue
        title = _TITLE.fullmatch(line)
        if title:
            mark = f" {{#{anchor}}}" if anchor else ""
            out.append(atx_heading(len(title.group(1)), _links(title.group(2)) + mark))
            anchor = language = ""
            continue
        block_title = _BLOCK_TITLE.fullmatch(line)
        if block_title:
            out.append(_links(block_title.group(1)))
            continue
        out.append("    " + line if line[:1].isspace() and stripped.startswith("#") else _links(line))
        if not stripped:
            anchor = language = ""
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")


def _anchor_and_language(attributes: str, anchor: str, language: str) -> tuple[str, str]:
    """The anchor and code language a block attribute line sets (``[#install]``, ``[id=install]``,
    ``[source,ruby]``, ``[,ruby]``, ``[source%linenums,ruby]``); what it does not set is kept.

    Example:
        >>> [_anchor_and_language(a, "", "") for a in ("#setup.lead", "source%linenums,ruby", ",sh", "NOTE", "id=x")]
        [('setup', ''), ('', 'ruby'), ('', 'sh'), ('', ''), ('x', '')]
    """
    parts = [p.strip() for p in attributes.split(",")]
    style = re.split(r"[#.%]", parts[0], maxsplit=1)[0]
    own_id = re.search(r"#([\w:-]+)", parts[0])
    named = next((p[3:].strip("\"'") for p in parts if p.startswith("id=")), "")
    anchor = (own_id.group(1) if own_id else named) or anchor
    if style in ("source", "") and len(parts) > 1 and re.fullmatch(r"[\w+#.-]+", parts[1]):
        language = parts[1].lower()
    return anchor, language


def _links(line: str) -> str:
    """AsciiDoc's cross references and links as Markdown links (text first, as Markdown writes them)."""
    line = _XREF.sub(lambda m: f"[{m.group(2).rstrip('^') or m.group(1)}]({m.group(1)})", line)
    line = _INTERNAL.sub(lambda m: f"[{(m.group(2) or m.group(1)).strip()}](#{m.group(1)})", line)
    line = _ATTRIBUTE_URL.sub(lambda m: m.group(1).rstrip("^"), line)
    return _URL.sub(lambda m: f"[{m.group(2).rstrip('^') or m.group(1)}]({m.group(1).removeprefix('link:')})", line)


__all__ = ["asciidoc_text"]
