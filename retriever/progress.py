"""The bar an index run draws: documents done out of the total, chunks embedded beside them (as each
batch is embedded, not a batch later when it is written; at the end, the chunks written).

The bar counts inputs (documents, plus inputs a :class:`~sieve.retriever.ingest.DocumentStream`
skipped), so it ends at its total exactly. Its total is known for a list of documents and for a
stream of files (one per file, one per JSONL record); it is drawn only when the first document
arrives, so a run that fails validation (a missing path, nothing readable) prints no bar.
"""

from __future__ import annotations

from collections.abc import Sized
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from sieve.retriever.types import Document


def _bar_columns(limit: int = 100) -> int:
    """The terminal's width, at most ``limit``.

    Example:
        >>> 20 <= _bar_columns() <= 100
        True
    """
    import shutil

    return max(20, min(shutil.get_terminal_size().columns, limit))


class IndexProgress:
    """A lazily drawn tqdm bar over the documents of one index run.

    Args:
        desc: the bar's label (``"Indexing mydocs"``).
        docs: the documents being indexed: a sequence, a ``DocumentStream`` (whose ``total`` and
            ``skipped`` it reads) or any iterable (no total then).
        enabled: ``False`` draws nothing.

    Example:
        >>> bar = IndexProgress("Indexing x", [], enabled=False)
        >>> bar.done(1, chunks=3); bar.close()
    """

    def __init__(self, desc: str, docs: Iterable[Document], *, enabled: bool = True) -> None:
        self._desc = desc
        self._docs = docs
        self._enabled = enabled
        self._bar: Any = None
        self._done = 0  # documents finished (written, unchanged or skipped at chunking)

    def _total(self) -> int | None:
        if isinstance(self._docs, Sized):
            return len(self._docs)
        total = getattr(self._docs, "total", None)
        return total if isinstance(total, int) else None

    def track(self, docs: Iterable[Document]) -> Iterator[Document]:
        """``docs``, drawing the bar when the first one arrives."""
        for doc in docs:
            if self._bar is None and self._enabled:
                from tqdm.auto import tqdm

                # At most 100 columns: a bar as wide as a wide terminal reads worse and outgrows
                # the demo's 100-column table (tqdm takes the terminal's width otherwise).
                self._bar = tqdm(desc=self._desc, total=self._total(), unit="doc", ncols=_bar_columns())
            yield doc

    def done(self, n: int, *, chunks: int | None = None) -> None:
        """``n`` more documents finished; ``chunks``: chunks done so far, shown beside the count."""
        self._done += n
        self._sync(chunks)

    def _sync(self, chunks: int | None = None) -> None:
        if self._bar is None:
            return
        skipped = getattr(self._docs, "skipped", 0)
        position = self._done + (skipped if isinstance(skipped, int) else 0)
        if chunks is not None:
            self._bar.set_postfix(chunks=chunks, refresh=False)
        self._bar.update(position - self._bar.n)

    def close(self) -> None:
        """Count what the stream skipped last, and close the bar (if it was ever drawn)."""
        if self._bar is not None:
            self._sync()
            self._bar.close()


__all__ = ["IndexProgress"]
