"""Ingestion of .txt/.md/.rst/.jsonl/.html/.docx/.pdf; unreadable inputs are reported, never dropped silently;
files of other types are counted by suffix."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from sieve.core.errors import NotFound
from sieve.retriever.ingest import IngestReport, content_hash, iter_documents, load_documents
from sieve.retriever.types import Document

from _ingest_files import minimal_pdf

if TYPE_CHECKING:
    from pathlib import Path


def _ingest(path: Path) -> tuple[dict[str, Document], IngestReport]:
    report = IngestReport()
    docs = {d.doc_id: d for d in iter_documents(path, report)}
    return docs, report


def test_every_supported_format(tmp_path):
    (tmp_path / "notes.txt").write_text("Plain text about otters.\n", encoding="utf-8")
    (tmp_path / "guide.md").write_text("Intro line\n# The Guide\n\nMarkdown about beavers.", encoding="utf-8")
    (tmp_path / "long.markdown").write_text("# Voles\n\nMarkdown's longer suffix.", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "page.html").write_text(
        "<html><head><title>Badgers</title><style>p{color:red}</style></head>"
        "<body><script>var hidden = 1;</script><p>Badgers dig setts.</p><p>They are nocturnal.</p></body></html>",
        encoding="utf-8",
    )
    (tmp_path / "paper.pdf").write_bytes(minimal_pdf("Sieve reads portable documents"))
    (tmp_path / "howto.rst").write_text("How to\n======\n\nRead *restructured* text.\n", encoding="utf-8")
    import docx

    word = docx.Document()
    word.add_paragraph("Word documents about martens.")
    word.save(str(tmp_path / "memo.docx"))
    (tmp_path / "recs.jsonl").write_text(
        json.dumps({"id": "r1", "title": "Stoats", "text": "Stoats turn white.", "metadata": {"topic": "animals"}})
        + "\n\n"  # blank lines are not records
        + json.dumps({"id": 2, "text": "Weasels are small.", "source": "field-notes"})
        + "\n",
        encoding="utf-8",
    )
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    (tmp_path / ".hidden.png").write_bytes(b"")

    docs, report = _ingest(tmp_path)
    assert sorted(docs) == [
        "2",
        "guide.md",
        "howto.rst",
        "long.markdown",
        "memo.docx",
        "notes.txt",
        "paper.pdf",
        "r1",
        "sub/page.html",
    ]
    assert docs["long.markdown"].title == "Voles"
    assert docs["notes.txt"].text == "Plain text about otters.\n"
    assert docs["notes.txt"].title == "notes" and docs["notes.txt"].source == str(tmp_path / "notes.txt")
    assert docs["guide.md"].title == "The Guide"
    html = docs["sub/page.html"]
    assert html.title == "Badgers"
    assert "Badgers dig setts." in html.text and "They are nocturnal." in html.text
    assert "hidden" not in html.text and "color" not in html.text
    assert docs["paper.pdf"].text == "Sieve reads portable documents"
    assert (docs["howto.rst"].title, docs["howto.rst"].text) == ("How to", "# How to\n\nRead restructured text.")
    assert (docs["memo.docx"].title, docs["memo.docx"].text) == ("memo", "Word documents about martens.")
    assert (docs["r1"].title, docs["r1"].metadata, docs["r1"].source) == (
        "Stoats",
        {"topic": "animals"},
        "recs.jsonl:1",
    )
    assert (docs["2"].title, docs["2"].source) == ("", "field-notes")
    assert report.files_read == 8 and report.documents == 9 and report.skipped == []
    assert report.ignored == [str(tmp_path / "image.png")]  # listed, not silently passed over
    assert report.hidden == 1  # .hidden.png: counted, not listed


def test_single_file_gets_its_name_as_id(tmp_path):
    f = tmp_path / "one.txt"
    f.write_text("just one", encoding="utf-8")
    docs, _ = _ingest(f)
    assert list(docs) == ["one.txt"]


def test_sample_docs_report_the_latin1_file(sample_dir):
    docs, report = _ingest(sample_dir / "docs")
    skipped = {w: r for w, r in report.skipped}
    latin1 = str(sample_dir / "docs" / "latin1-note.txt")
    assert list(skipped) == [latin1]
    assert "UTF-8" in skipped[latin1]
    # Nothing dropped silently: each file read became a document or a reported skip.
    assert report.files_read == len(docs) + len(report.skipped) == len(list((sample_dir / "docs").iterdir()))


def test_bad_jsonl_lines_are_reported_with_line_numbers(tmp_path):
    lines = [
        json.dumps({"id": "ok1", "text": "first good record"}),
        "{not json",
        json.dumps({"text": "no id"}),
        json.dumps({"id": "t", "text": 42}),
        json.dumps({"id": "blank", "text": "   "}),
        json.dumps({"id": "m", "text": "bad metadata", "metadata": ["x"]}),
        json.dumps(["a", "list"]),
        json.dumps({"id": "b#3", "text": "an id shaped like a chunk id"}),
        json.dumps({"id": "ok2", "text": "second good record"}),
    ]
    f = tmp_path / "mixed.jsonl"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    docs, report = _ingest(f)
    assert sorted(docs) == ["ok1", "ok2"]
    assert [w for w, _ in report.skipped] == [f"{f}:{n}" for n in (2, 3, 4, 5, 6, 7, 8)]
    reasons = dict(report.skipped)
    assert "invalid JSON" in reasons[f"{f}:2"] and "empty text" in reasons[f"{f}:5"]
    assert "metadata" in reasons[f"{f}:6"] and "'#<digits>'" in reasons[f"{f}:8"]
    assert report.documents + len(report.skipped) == len(lines)


def test_non_utf8_jsonl_and_broken_or_empty_pdf_are_reported(tmp_path):
    from pypdf import PdfWriter

    (tmp_path / "latin.jsonl").write_bytes('{"id": "x", "text": "café"}\n'.encode("latin-1"))
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\n this is not a pdf body")
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    with (tmp_path / "blank.pdf").open("wb") as fh:
        writer.write(fh)
    (tmp_path / "empty.md").write_text("  \n", encoding="utf-8")
    (tmp_path / "good.txt").write_text("still indexed", encoding="utf-8")

    docs, report = _ingest(tmp_path)
    assert list(docs) == ["good.txt"]
    reasons = {w.rsplit("/", 1)[-1]: r for w, r in report.skipped}
    assert sorted(reasons) == ["blank.pdf", "broken.pdf", "empty.md", "latin.jsonl"]
    assert "UTF-8" in reasons["latin.jsonl"]
    assert "unreadable .pdf" in reasons["broken.pdf"]
    assert reasons["blank.pdf"] == reasons["empty.md"] == "no text"


def test_missing_path_and_duplicate_ids(tmp_path):
    with pytest.raises(NotFound, match="does not exist"):
        list(iter_documents(tmp_path / "nope"))
    f = tmp_path / "dupes.jsonl"
    lines = [{"id": "same", "text": "v0"}, {"id": "other", "text": "v1"}, {"id": "same", "text": "v2"}]
    f.write_text("\n".join(json.dumps(r) for r in lines), encoding="utf-8")
    # A repeated id skips that line (and says where the kept one is); the rest of the file is read.
    docs, report = load_documents(f)
    assert [(d.doc_id, d.text) for d in docs] == [("same", "v0"), ("other", "v1")]
    assert report.documents == 2
    assert report.skipped == [(f"{f}:3", f"duplicate id 'same' (first at {f}:1; that one is indexed)")]


def test_duplicate_ids_across_files_are_skipped_and_listed(tmp_path):
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": "x", "text": "from a"}), encoding="utf-8")
    (tmp_path / "b.jsonl").write_text(
        json.dumps({"id": "x", "text": "from b"}) + "\n" + json.dumps({"id": "y", "text": "only b"}), encoding="utf-8"
    )
    docs, report = _ingest(tmp_path)
    assert {d: doc.text for d, doc in docs.items()} == {"x": "from a", "y": "only b"}
    assert [(w.rsplit("/", 1)[-1], r.split(" (")[0]) for w, r in report.skipped] == [("b.jsonl:1", "duplicate id 'x'")]


@pytest.mark.parametrize(
    "meta,problem",
    [
        ({"tags": {"nested": 1}}, "got a dict"),
        ({"tags": []}, "got an empty list"),
        ({"tags": ["a", 1]}, "got a list mixing int and str"),
        ({"tags": [["a"]]}, "got a list holding a list"),
        ({"n": 2**70}, "outside 64 bits"),
        ({"title": "shadow"}, "other than Sieve's own"),
        ({"$op": 1}, "not starting with '$'"),
        ("not an object", "to be an object, got str"),
    ],
)
def test_metadata_chroma_cannot_hold_skips_the_line_with_the_reason(tmp_path, meta, problem):
    f = tmp_path / "m.jsonl"
    f.write_text(
        json.dumps({"id": "bad", "text": "t", "metadata": meta})
        + "\n"
        + json.dumps({"id": "good", "text": "t", "metadata": {"ok": 1}}),
        encoding="utf-8",
    )
    docs, report = _ingest(f)
    assert list(docs) == ["good"]
    [(where, reason)] = report.skipped
    assert where == f"{f}:1" and problem in reason and "Expected metadata" in reason


def test_list_metadata_is_kept_as_lists_and_none_means_absent(tmp_path):
    f = tmp_path / "m.jsonl"
    meta = {"tags": ["a", "b"], "years": [1990, 2020], "flags": [True], "note": None, "score": 0.5}
    f.write_text(json.dumps({"id": "d", "text": "t", "metadata": meta}), encoding="utf-8")
    docs, report = _ingest(f)
    assert docs["d"].metadata == {"tags": ["a", "b"], "years": [1990, 2020], "flags": [True], "score": 0.5}
    assert report.skipped == []


def test_content_hash_tracks_everything_that_changes_chunks():
    base = Document("d", "text", title="t", source="s", metadata={"a": 1, "b": 2})
    assert content_hash(base) == content_hash(Document("d", "text", title="t", source="s", metadata={"b": 2, "a": 1}))
    variants = [
        Document("d", "text!", title="t", source="s", metadata={"a": 1, "b": 2}),
        Document("d", "text", title="T", source="s", metadata={"a": 1, "b": 2}),
        Document("d", "text", title="t", source="s2", metadata={"a": 1, "b": 2}),
        Document("d", "text", title="t", source="s", metadata={"a": 1, "b": 3}),
        Document("d", "t", title="ext", source="s", metadata={"a": 1, "b": 2}),  # field boundaries matter
    ]
    hashes = {content_hash(v) for v in variants} | {content_hash(base, "structure/200/32")}  # other chunking
    assert len(hashes) == len(variants) + 1 and content_hash(base) not in hashes


def test_ignored_files_are_counted_by_suffix_and_hidden_ones_only_by_number(tmp_path):
    for name in (
        "a.png",
        "b.png",
        "c.PNG",
        "d.png",
        "e.png",
        "f.png",
        "g.png",
        "x.js",
        "y.js",
        "z.js",
        "Makefile",
        "LICENSE",
        "keep.md",
    ):
        (tmp_path / name).write_text("x", encoding="utf-8")
    (tmp_path / ".git" / "objects").mkdir(parents=True)
    for name in ("HEAD", "config", "objects/ab12"):
        (tmp_path / ".git" / name).write_text("x", encoding="utf-8")
    (tmp_path / ".env").write_text("SECRET=1", encoding="utf-8")

    docs, report = _ingest(tmp_path)
    assert list(docs) == ["keep.md"]
    assert report.ignored_by_suffix() == {".png": 7, ".js": 3, "(no suffix)": 2}
    assert report.ignored_summary() == "ignored 12 files: 7 .png, 3 .js, 2 (no suffix) (and 4 hidden files)"
    assert len(report.ignored) == 12 and report.hidden == 4
    assert IngestReport(hidden=4).ignored_summary() == ""  # hidden files alone are no news


def test_many_suffixes_are_summed_past_the_tenth():
    report = IngestReport(ignored=[f"f{i}.s{i:02d}" for i in range(12)] + ["more.s00"])
    assert report.ignored_counts().endswith("1 .s09, 2 with 2 other suffixes")
    assert report.ignored_counts().startswith("2 .s00, 1 .s01")


def test_problem_lines_list_every_skip_with_its_reason(tmp_path):
    report = IngestReport(skipped=[(f"bad{i}.pdf", f"reason number {i}") for i in range(30)], ignored=["a.png"])
    lines = report.problem_lines()
    assert lines[0] == "30 skipped:" and len(lines) == 32
    assert [line.strip() for line in lines[1:31]] == [f"bad{i}.pdf: reason number {i}" for i in range(30)]
    assert lines[-1] == "1 ignored for its type: 1 .png (e.g. a.png)"
    assert "..." not in "\n".join(lines)


def test_a_stream_touches_nothing_until_iterated_and_counts_its_inputs(tmp_path):
    stream = iter_documents(tmp_path / "later")  # no error yet: index_path cleans up where it is consumed
    with pytest.raises(NotFound):
        next(stream)
    (tmp_path / "a.txt").write_text("alpha", encoding="utf-8")
    (tmp_path / "b.txt").write_bytes(b"\xff")
    (tmp_path / "c.jsonl").write_text(
        '{"id": "c1", "text": "x"}\n\n{"id": "c2"}\n{"id": "c3", "text": "y"}\n', encoding="utf-8"
    )
    stream = iter_documents(tmp_path)
    assert stream.total == 5  # two files, three JSONL records (the blank line is none)
    assert [d.doc_id for d in stream] == ["a.txt", "c1", "c3"]
    assert (stream.decided, stream.yielded, stream.skipped) == (5, 3, 2)


def test_a_jsonl_record_may_hold_unicode_line_separators(tmp_path):
    f = tmp_path / "seps.jsonl"
    text = "before\u2028after\u0085next\x0cpage"
    f.write_text(
        json.dumps({"id": "s", "text": text}, ensure_ascii=False)
        + "\r\n"
        + json.dumps({"id": "t", "text": "second"})
        + "\n",
        encoding="utf-8",
    )
    stream = iter_documents(f)
    assert stream.total == 2
    assert [(d.doc_id, d.text) for d in stream] == [("s", text), ("t", "second")]
    assert stream.report.skipped == []


def test_linked_folders_are_followed_once_and_links_to_nothing_are_reported(tmp_path):
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "note.md").write_text("A note kept in a shared folder.", encoding="utf-8")
    root = tmp_path / "docs"
    root.mkdir()
    (root / "own.md").write_text("The folder's own text.", encoding="utf-8")
    (root / "linked").symlink_to(tmp_path / "shared", target_is_directory=True)
    (root / "loop").symlink_to(root, target_is_directory=True)  # a link back up the tree
    (root / "gone.md").symlink_to(tmp_path / "deleted.md")
    docs, report = _ingest(root)
    assert sorted(docs) == ["linked/note.md", "own.md"]
    assert report.skipped == [(str(root / "gone.md"), "a link to nothing: no file behind it")]


def test_a_file_without_text_is_skipped_once_without_its_readers_warnings(tmp_path):
    (tmp_path / "empty.html").write_text("<html><body></body></html>", encoding="utf-8")
    (tmp_path / "ok.txt").write_text("Some text.", encoding="utf-8")
    docs, report = _ingest(tmp_path)
    assert sorted(docs) == ["ok.txt"]
    assert report.skipped == [(str(tmp_path / "empty.html"), "no text")] and report.warnings == []
