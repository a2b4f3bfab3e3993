"""MDX pages (Docusaurus, Nextra, Mintlify, Starlight) as the Markdown a reader sees.

An ``.mdx`` file is Markdown with JavaScript in it: ``import``/``export`` statements that pull in
components, JSX comments (``{/* ... */}``), and component tags (``<Tabs>``, ``<TabItem value="npm">``,
``<InstallSnippet pkgs="..." />``) around Markdown content. The site renders the content and never
shows the statements or the tags. Indexed as written, a chunk would open with a block of imports
and search would match component names, so they are taken out here and the Markdown between them
kept as it is: its headings still open sections, and its code blocks are never touched (an
``import`` in a fence is an example to read).

What is removed, outside fenced code only:

- an ESM block: a paragraph that opens with ``import`` or ``export`` at the start of a line, up to
  the next blank line (MDX's own rule for where such a block ends);
- JSX comments, on one line or several;
- lines that hold nothing but component tags, a component being a tag whose name is capitalised
  (lower-case tags such as ``<details>`` are HTML that Markdown pages hold too, and stay), and a
  component's opening tag written over several lines. What the tags' quoted attributes say stays,
  as one line: a tab's label (``<TabItem label="Yarn">``), the packages an install snippet names
  (``<InstallSnippet pkgs="@trpc/server zod" />``) are the page's words too.

Example:
    >>> page = "import Tabs from '@theme/Tabs';\\n\\n# Install\\n\\n<Tabs>\\n{/* npm first */}\\nRun it.\\n</Tabs>\\n"
    >>> mdx_text(page)
    '# Install\\n\\nRun it.\\n'
"""

from __future__ import annotations

import re

from sieve.retriever.sections import in_code

_ESM = re.compile(r"(?:import|export)[\s{*]")
_JSX_COMMENT = re.compile(r"\{/\*.*?\*/\}", re.DOTALL)
_COMPONENTS_ONLY = re.compile(r"\s*(?:</?[A-Z][\w.]*(?:\s[^<>]*)?/?>\s*)+")
_COMPONENT_OPENS = re.compile(r"\s*<[A-Z][\w.]*(?:\s[^<>]*)?")  # "<InstallSnippet" with its attributes below
_ATTRIBUTE = re.compile(r"""([\w-]+)=(?:"([^"]*)"|'([^']*)')""")
_NOT_WORDS = re.compile(r"(?i)(?:id|key|class|classname|style|src|href|width|height)$")  # an id, a path, a size
_MAX_TAG_LINES = 30  # a component's opening tag longer than this is left as written
_BLANK_RUNS = re.compile(r"\n{3,}")


def mdx_text(text: str) -> str:
    """``text`` (an MDX page) without its ESM blocks, JSX comments and component-tag lines."""
    lines = _without_comments(text.splitlines(keepends=True))
    code = in_code(lines)
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if code[i]:
            out.append(line)
            i += 1
        elif _ESM.match(line) and (not out or not out[-1].strip()):
            while i < len(lines) and lines[i].strip() and not code[i]:
                i += 1
        elif line.strip() and _COMPONENTS_ONLY.fullmatch(line.rstrip("\r\n")):
            out.extend(_said(lines[i : i + 1]))
            i += 1
        elif _COMPONENT_OPENS.fullmatch(line.rstrip("\r\n")):
            end = next((j for j in range(i + 1, min(len(lines), i + _MAX_TAG_LINES)) if ">" in lines[j]), None)
            if end is None or not lines[end].rstrip().endswith(">"):
                out.append(line)
                i += 1
            else:
                out.extend(_said(lines[i : end + 1]))
                i = end + 1
        else:
            out.append(line)
            i += 1
    return _BLANK_RUNS.sub("\n\n", "".join(out)).lstrip("\n")


def _without_comments(lines: list[str]) -> list[str]:
    """``lines`` with the JSX comments outside fenced code removed (a comment may span lines; one
    inside a code example is the example's)."""
    out: list[str] = []
    prose: list[str] = []
    for line, is_code in zip(lines, in_code(lines), strict=True):
        if is_code:
            out.extend(_JSX_COMMENT.sub("", "".join(prose)).splitlines(keepends=True))
            prose = []
            out.append(line)
        else:
            prose.append(line)
    out.extend(_JSX_COMMENT.sub("", "".join(prose)).splitlines(keepends=True))
    return out


def _said(tag_lines: list[str]) -> list[str]:
    """The quoted attribute values of component tags, each once, as one line (none when they hold none)."""
    values = [a or b for line in tag_lines for name, a, b in _ATTRIBUTE.findall(line) if not _NOT_WORDS.search(name)]
    words = " ".join(dict.fromkeys(v.strip() for v in values if v.strip()))
    return [words + "\n"] if words else []


__all__ = ["mdx_text"]
