"""Where a document's sections start, and the heading path (``Install > Options``) at any offset.

Documentation states its structure in headings, and both formats people write docs in are read:

- Markdown: ATX headings (``## Options``, level = the number of ``#``) and setext headings (a line
  underlined with ``===``, level 1, or ``---``, level 2). Lines inside fenced code blocks (````` ``` `````,
  ``~~~``) are code, not headings: a shell comment ``# install it`` opens no section. A front matter
  block (``---`` ... ``---`` at the very top, as Hugo and Jekyll pages have) is skipped.
- reStructuredText: a title underlined (and optionally overlined) with a line of one punctuation
  character at least as long as the title. As in docutils, levels are given by the order in which
  the adornment styles first appear in the document.

Only the shape of lines is read (no Markdown or rst parser is pulled in for it): the chunker needs the
character offsets of headings in the raw text it cuts, which a rendering parser does not keep.

Example:
    >>> text = "Guide\\n=====\\n\\nIntro.\\n\\nInstall\\n-------\\n\\nRun it.\\n"
    >>> [(h.start, h.level, h.title) for h in find_headings(text)]
    [(0, 1, 'Guide'), (21, 2, 'Install')]
    >>> SectionMap(find_headings(text)).path_at(40)
    ('Guide', 'Install')
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

# rst's adornment characters (docutils accepts any non-alphanumeric printable ASCII; these are the
# ones its documentation recommends, and every one seen in real docs).
_ADORNMENT = "=-~^\"'`*+#:._<>"
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$", re.MULTILINE)
_FENCE = re.compile(r" {0,3}(```+|~~~+)")
# "## Options {#options}": a Hugo/Pandoc anchor (an rst label, as the rst reader writes it), not title text
_ANCHOR = re.compile(r"\s*\{#([^}\s]*)[^}]*\}\s*$")
_MAX_TITLE_CHARS = 120  # a longer line is a paragraph above a rule, not a title


@dataclass(frozen=True)
class Heading:
    """One heading: the offset of its first character, its depth (1 = top), its text, the offset
    just past its own lines (an underline included), and the anchor it declares (``{#id}``; links
    to ``page#id`` reach it), or ``""``."""

    start: int
    level: int
    title: str
    end: int
    anchor: str = ""


def _clean(title: str) -> str:
    return _ANCHOR.sub("", title).replace("`", "").replace("**", "").strip()


def _anchor(title: str) -> str:
    m = _ANCHOR.search(title)
    return m.group(1) if m else ""


def _adornment(line: str) -> str | None:
    """The character of an rst/setext adornment line (``=====``), else None."""
    s = line.rstrip()
    if len(s) < 2 or s[0] not in _ADORNMENT or s.strip(s[0]):
        return None
    return s[0]


def _front_matter_end(lines: list[str]) -> int:
    """Index of the first line after a leading ``---`` ... ``---`` block (0 when there is none)."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    for i in range(1, min(len(lines), 200)):
        if lines[i].rstrip() in ("---", "..."):
            return i + 1
    return 0


def find_headings(text: str) -> list[Heading]:
    """Every Markdown (ATX, setext) and reStructuredText heading of ``text``, in order."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    styles: dict[tuple[str, bool], int] = {}  # rst: (char, overlined) -> level, by first appearance
    if _ATX.search(text):  # Markdown: its setext headings have fixed levels, '=' 1 and '-' 2, as ATX's # and ##
        styles.update({("=", False): 1, ("-", False): 2})
    out: list[Heading] = []
    i = lo = _front_matter_end(lines)
    code = [False] * lo + in_code(lines[lo:])
    while i < len(lines):
        line = lines[i].rstrip("\r\n")
        if code[i]:
            i += 1
            continue
        atx = _ATX.match(line)
        if atx and _clean(atx.group(2)):
            raw = atx.group(2)
            out.append(Heading(offsets[i], len(atx.group(1)), _clean(raw), offsets[i + 1], _anchor(raw)))
            i += 1
            continue
        found = _underlined(lines, i, styles, lo)
        if found is not None:
            first, level, raw = found
            out.append(Heading(offsets[first], level, _clean(raw), offsets[i + 2], _anchor(raw)))
            i = first + 2
            continue
        i += 1
    return out


def in_code(lines: list[str]) -> list[bool]:
    """For each line, whether it belongs to a fenced code block (its fence lines included): a
    closing fence is of the opening one's character and at least its length, as CommonMark has it.

    Example:
        >>> in_code(["Text", "```sh", "# a comment", "~~~", "```", "# Title"])
        [False, True, True, True, True, False]
    """
    out: list[bool] = []
    fence: str | None = None
    for line in lines:
        m = _FENCE.match(line.rstrip("\r\n"))
        if m and (fence is None or m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence)):
            out.append(True)
            fence = None if fence else m.group(1)
        else:
            out.append(fence is not None)
    return out


def _underlined(
    lines: list[str], i: int, styles: dict[tuple[str, bool], int], lo: int = 0
) -> tuple[int, int, str] | None:
    """(first line, level, title as written) when line ``i`` is a title underlined on line ``i + 1`` (an
    overline on ``i - 1`` joins it; nothing before line ``lo``, the front matter, does), else None."""
    if i + 1 >= len(lines):
        return None
    title = lines[i].strip()
    under = _adornment(lines[i + 1])
    if (
        not title
        or under is None
        or lines[i][:1].isspace()  # indented: a block quote or code, never a title
        or len(title) > _MAX_TITLE_CHARS
        or _adornment(lines[i]) is not None
        or len(lines[i + 1].rstrip()) < min(len(title), 3)  # rst: at least as long as the title
    ):
        return None
    if under not in "=-" and len(lines[i + 1].rstrip()) < len(title):
        return None  # only Markdown's setext ('=' and '-') tolerates a short underline
    over = i > lo and _adornment(lines[i - 1]) == under
    if i > lo and not over and lines[i - 1].strip():
        return None  # the last line of a paragraph above a rule: not a title
    level = styles.setdefault((under, over), len(styles) + 1)
    return (i - 1 if over else i), level, title


class SectionMap:
    """The heading path in force at any character offset of one document."""

    def __init__(self, headings: list[Heading]) -> None:
        self.headings = headings
        self._starts = [h.start for h in headings]
        self._paths: list[tuple[str, ...]] = []
        stack: list[Heading] = []
        for h in headings:
            while stack and stack[-1].level >= h.level:
                stack.pop()
            stack.append(h)
            self._paths.append(tuple(s.title for s in stack))

    def path_at(self, offset: int) -> tuple[str, ...]:
        """The titles of the sections that hold ``offset`` (a heading starting there included), outermost first."""
        i = bisect.bisect_right(self._starts, offset) - 1
        return self._paths[i] if i >= 0 else ()


def atx_heading(level: int, title: str) -> str:
    """``title`` as the Markdown heading :func:`find_headings` reads at ``level`` (at most 6): how the
    readers of rst, HTML, .docx and PDF write a format's own headings into the text they return.

    Example:
        >>> atx_heading(2, "Pin it"), atx_heading(9, "Deep")
        ('## Pin it', '###### Deep')
    """
    return "#" * min(level, 6) + " " + title


def fenced(code: str, info: str = "") -> str:
    """``code`` in a Markdown fence, inside which :func:`find_headings` sees no heading (a ``# comment``);
    ``info`` names its language. The fence is longer than any run of backticks in ``code``, so a
    Markdown example inside it does not close it.

    Example:
        >>> fenced("print(1)", "python")
        '```python\\nprint(1)\\n```'
        >>> fenced("md = '```'")
        "````\\nmd = '```'\\n````"
    """
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", code)), default=0))
    return f"{fence}{info}\n{code}\n{fence}"


def heading_path(path: tuple[str, ...], title: str = "") -> str:
    """The path as a chunk records it: `` > ``-joined, without a top heading that only repeats the page title.

    Example:
        >>> heading_path(("Commands", "add", "Options"), title="Commands")
        'add > Options'
    """
    if path and title and path[0].casefold() == title.strip().casefold():
        path = path[1:]
    return " > ".join(path)


__all__ = ["Heading", "SectionMap", "atx_heading", "fenced", "find_headings", "heading_path", "in_code"]
