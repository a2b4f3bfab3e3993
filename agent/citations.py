"""The answer's citations: chunk handles a model cites (``[c1]``, ``[c1, c4]``, ``【c2】``) resolved to chunks.

A model sees chunks under episode-local handles (``[c17] id=doc#0 | Title``) and cites them the
same way in ``finish``'s answer. A handle means nothing outside the episode, so the trace keeps
the answer as written and a list of citations, each naming the chunk and document it stands for.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sieve.pruning.context import ContextState

# A bracketed group ([...], 【...】 or (...)) holding handles, e.g. "[c1]", "[c1, c3]", "(c2)".
_GROUP = re.compile(r"[\[【(]\s*(c\d+(?:\s*[,;]\s*c\d+)*)\s*[\]】)]", re.IGNORECASE)
_HANDLE = re.compile(r"c\d+", re.IGNORECASE)


def cited_handles(answer: str | None) -> list[str]:
    """The handles an answer cites, in order of first mention, lower-cased.

    Example:
        >>> cited_handles("St. Louis [c1] had 301,578 people [c4, c1] (c2).")
        ['c1', 'c4', 'c2']
    """
    found: dict[str, None] = {}
    for group in _GROUP.finditer(answer or ""):
        for handle in _HANDLE.findall(group.group(1)):
            found.setdefault(handle.lower(), None)
    return list(found)


def resolve_citations(answer: str | None, context: ContextState) -> list[dict[str, Any]]:
    """``[{"handle", "chunk_id", "doc_id", "title"}]`` for each handle ``answer`` cites that names a chunk
    shown in ``context`` (pruned ones too: the model saw them), in order of first mention."""
    out = []
    for handle in cited_handles(answer):
        entry = context.chunks.get(handle)
        if entry is None:
            continue
        out.append({"handle": handle, "chunk_id": entry.chunk_id, "doc_id": entry.doc_id, "title": entry.chunk.title})
    return out


__all__ = ["cited_handles", "resolve_citations"]
