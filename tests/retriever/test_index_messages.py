"""What ``sieve index`` tells the user: no bar before validation, bars with totals, every skip reason,
library warnings without log timestamps, ignored files by suffix; and clean HTML text in the chunks."""

from __future__ import annotations

import json
import re

import pytest
from _ingest_files import SITE_PAGE, TEXINFO_PAGE, minimal_pdf, pdf_with_a_wrong_startxref

TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d")


@pytest.fixture()
def messy(tmp_path):
    """Two readable files, one damaged-but-readable PDF, two unreadable files, three of other types."""
    root = tmp_path / "messy"
    (root / "bin").mkdir(parents=True)
    (root / "guide.html").write_text(SITE_PAGE, encoding="utf-8")
    (root / "notes.md").write_text("# Notes\n\nMarkdown notes about martens.", encoding="utf-8")
    pdf_with_a_wrong_startxref(root / "damaged.pdf")
    (root / "bin" / "broken.pdf").write_bytes(b"%PDF-1.4\n this is not a pdf body")
    (root / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    for name in ("a.png", "b.png", "Makefile"):
        (root / name).write_bytes(b"\x89")
    return root


def test_a_missing_path_fails_before_any_progress_bar(run, tmp_path):
    res = run("index", str(tmp_path / "bad1"), "-c", "bad1")
    assert res.exit_code == 2 and "not_found" in res.stderr
    assert "Indexing" not in res.stderr and "chunk" not in res.stderr


def test_nothing_readable_lists_every_reason_and_draws_no_bar(run, tmp_path):
    folder = tmp_path / "junk"
    folder.mkdir()
    (folder / "one.pdf").write_bytes(b"%PDF-1.4\n not a pdf")
    (folder / "two.txt").write_bytes(b"\xff\xfe")
    (folder / "three.png").write_bytes(b"\x89")
    res = run("index", str(folder), "-c", "junk")
    assert res.exit_code == 2 and "invalid_input" in res.stderr and "Indexing" not in res.stderr
    assert (
        "2 skipped" in res.stderr
        and "one.pdf: unreadable .pdf" in res.stderr
        and "two.txt: not valid UTF-8" in res.stderr
    )
    assert "1 ignored for its type: 1 .png" in res.stderr and "..." not in res.stderr


def test_the_report_lists_all_skips_warnings_and_ignored_suffixes(run, messy):
    res = run("index", str(messy), "-c", "messy")
    assert res.exit_code == 0, res.output
    assert "3 documents from 5 files: 3 added" in res.stdout
    err = res.stderr
    assert "Skipped 2 inputs (the rest was indexed):" in err
    assert f"  {messy / 'bin' / 'broken.pdf'}: unreadable .pdf file" in err
    assert f"  {messy / 'latin.txt'}: not valid UTF-8" in err
    # pypdf's warnings: one line for the file, through Sieve's report, with no log timestamp or level.
    assert "Indexed despite warnings of the library that read them (the text may be incomplete): 1 file" in err
    assert re.search(rf"  {re.escape(str(messy / 'damaged.pdf'))}: pypdf: .*startxref", err)
    assert not TIMESTAMP.search(err) and "WARNING" not in err
    assert "Ignored 3 files: 2 .png, 1 (no suffix); Sieve reads .txt .md .markdown .qmd .rmd .mdx .rst" in err
    # The bar has its total (5 inputs: 3 documents, 2 skipped files) and ends at it.
    assert re.search(r"Indexing messy: 100%\|.*\| 5/5 ", err), err

    body = json.loads(run("index", str(messy), "-c", "messy", "--json").stdout)
    assert body["unchanged"] == 3 and len(body["skipped"]) == 2
    assert body["ignored_by_suffix"] == {".png": 2, "(no suffix)": 1} and body["hidden"] == 0
    assert [w["where"] for w in body["warnings"]] == [str(messy / "damaged.pdf")] * len(body["warnings"])


def test_chunks_of_html_hold_the_content_and_none_of_the_navigation(make_index, tmp_path, capsys):
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "otters.html").write_text(SITE_PAGE, encoding="utf-8")
    (folder / "The-Basics.html").write_text(TEXINFO_PAGE, encoding="utf-8")
    (folder / "memo.pdf").write_bytes(minimal_pdf("A portable memo"))
    index = make_index("site", chunk_tokens=32, chunk_overlap=8)
    report = index.writer.index_path(folder, progress=True)
    assert report.added == 3 and report.ingest.skipped == []
    texts = [text for _, text, _ in index.store.scan(include_text=True)]
    joined = "\n".join(texts)
    assert "Otters hold hands" in joined and "favourite stone" in joined and "Call InterFace" in joined
    for nav in (
        "Field Guide home",
        "menu entry",
        "Breadcrumb",
        "sidebar",
        "Privacy policy",
        "Next:",
        "Up:",
        "Simple Example",
    ):
        assert nav not in joined, nav
    bar = capsys.readouterr().err
    assert re.search(r"Indexing site: 100%\|.*\| 3/3 .*chunks=\d+", bar), bar
