"""The index bar: drawn at most 100 columns wide on a wide terminal (the demo's table is 100 columns)."""

from __future__ import annotations

from sieve.retriever.progress import IndexProgress, _bar_columns
from sieve.retriever.types import Document


def test_the_bar_is_at_most_100_columns_on_a_wide_terminal(monkeypatch, capsys):
    docs = [Document(f"d{i}", "text") for i in range(3)]
    for columns, expected in (("240", 100), ("72", 72)):
        monkeypatch.setenv("COLUMNS", columns)
        assert _bar_columns() == expected
        bar = IndexProgress("Indexing notes", docs)
        for i, _ in enumerate(bar.track(docs), 1):
            bar.done(1, chunks=i * 7)
        assert bar._bar is not None and bar._bar.ncols == expected  # tqdm draws the bar this wide
        bar.close()
    assert "chunks=21" in capsys.readouterr().err
