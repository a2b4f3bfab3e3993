"""Two rankings of one question side by side in one table, overlaps marked (``sieve demo``).

The playground shows the agent's evidence beside hybrid retrieval's top-k and marks a chunk found
by both with ``● also #N``; this is the terminal's version: one row per rank, one column per
system, each cell the chunk's title (and ``#position`` past a document's first chunk) and its text
cut to fit, ``●N`` before a chunk that is also the other list's #N.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sieve.cli.commands._common import shorten

MAX_WIDTH = 100  # the table never grows past this, however wide the terminal
BOTH = "●"
LEGEND = f"{BOTH}N: also #N in the other list"


def output_width(console: Any = None) -> int:
    """The width ``sieve demo`` writes to: the terminal's (``console``'s, default stdout's), at most :data:`MAX_WIDTH`."""
    from rich.console import Console

    return min((console or Console()).width, MAX_WIDTH)


def _label(hit: Mapping[str, Any]) -> str:
    title = str(hit.get("title") or hit.get("doc_id") or hit.get("id") or "")
    position = hit.get("position")
    if position is None and hit.get("doc_id"):  # an episode's evidence: the position is in the id, "doc#N"
        tail = str(hit["id"]).removeprefix(f"{hit['doc_id']}#")
        position = int(tail) if tail.isdigit() else None
    return f"{title} #{position}" if isinstance(position, int) and position > 0 else title


def _cell(hit: Mapping[str, Any] | None, other: Mapping[str, int], wide: bool) -> Any:
    from rich.text import Text

    cell = Text(no_wrap=not wide, overflow="fold" if wide else "ellipsis")
    if hit is None:
        return cell
    also = other.get(str(hit["id"]))
    if also is not None:
        cell.append(f"{BOTH}{also} ", style="bold magenta")
    cell.append(_label(hit), style="bold")
    cell.append("  " + shorten(str(hit.get("text") or ""), 200 if wide else 2 * MAX_WIDTH))
    return cell


def compare_table(
    left: tuple[str, Sequence[Mapping[str, Any]]],
    right: tuple[str, Sequence[Mapping[str, Any]]],
    title: str,
    *,
    wide: bool = False,
    console: Any = None,
) -> None:
    """Print two ranked lists (``(name, hits)``, each hit a ``hit_json``-like dict with ``id``, ``title``,
    ``text`` and optionally ``position``) as one table on ``console`` (default: stdout's), at the
    console's width but at most :data:`MAX_WIDTH` columns.

    Compact (the default): one line per rank, every cell cut with an ellipsis. ``wide``: the cells
    wrap (up to 200 characters of text each).

    Example:
        >>> import io
        >>> from rich.console import Console
        >>> out = io.StringIO()
        >>> a = [{"id": "x#0", "title": "X", "text": "x text"}, {"id": "y#2", "title": "Y", "text": "y", "position": 2}]
        >>> compare_table(("hybrid", a), ("agent", a[::-1]), "q", console=Console(file=out, width=60))
        >>> print(out.getvalue().splitlines()[3].rstrip())
        1  ●2 X  x text                 ●2 Y #2  y
    """
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = console or Console()
    width = output_width(console)
    (left_name, left_hits), (right_name, right_hits) = left, right
    left_rank = {str(h["id"]): i + 1 for i, h in enumerate(left_hits)}
    right_rank = {str(h["id"]): i + 1 for i, h in enumerate(right_hits)}
    table = Table(
        title=Text(" ".join(title.split()), no_wrap=not wide, overflow="fold" if wide else "ellipsis"),
        width=width,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
        padding=(0, 1),
        caption=LEGEND if set(left_rank) & set(right_rank) else None,
        caption_justify="left",
        title_justify="left",
    )
    table.add_column("#", no_wrap=True, justify="right")
    for name in (left_name, right_name):
        table.add_column(name, no_wrap=not wide, overflow="fold" if wide else "ellipsis", ratio=1)
    for i in range(max(len(left_hits), len(right_hits))):
        table.add_row(
            str(i + 1),
            _cell(left_hits[i] if i < len(left_hits) else None, right_rank, wide),
            _cell(right_hits[i] if i < len(right_hits) else None, left_rank, wide),
        )
    console.print(table, width=width)


__all__ = ["BOTH", "LEGEND", "MAX_WIDTH", "compare_table", "output_width"]
