"""Indexing a folder leaves out what its repository's .gitignore files leave out (a Sphinx build's
HTML beside the .rst sources would otherwise return every page twice); --no-gitignore reads it all."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from sieve.retriever.ingest import IngestReport, iter_documents

if TYPE_CHECKING:
    from pathlib import Path


def _repo(tmp_path: Path) -> Path:
    """A repository whose root ignores the docs' build and whose docs folder ignores drafts."""
    repo = tmp_path / "project"
    (repo / ".git").mkdir(parents=True)
    (repo / ".gitignore").write_text("docs/_build/\n*.log\n", encoding="utf-8")
    docs = repo / "docs"
    (docs / "_build" / "html").mkdir(parents=True)
    (docs / "guide").mkdir()
    (docs / ".gitignore").write_text("# drafts stay local\n*.draft.md\n!keep.draft.md\n", encoding="utf-8")
    (docs / "index.rst").write_text("Project\n=======\n\nWhat the project does.\n", encoding="utf-8")
    (docs / "guide" / "setup.md").write_text("# Setup\n\nInstall it with pip.\n", encoding="utf-8")
    (docs / "guide" / "next.draft.md").write_text("# Next\n\nNot written yet.\n", encoding="utf-8")
    (docs / "keep.draft.md").write_text("# Kept\n\nA draft the docs keep.\n", encoding="utf-8")
    (docs / "build.log").write_text("sphinx-build output\n", encoding="utf-8")
    (docs / "_build" / "html" / "index.html").write_text("<h1>Project</h1><p>What the project does.</p>")
    return docs


def test_a_folder_in_a_repository_is_read_without_what_its_gitignore_files_leave_out(tmp_path):
    docs = _repo(tmp_path)
    report = IngestReport()
    stream = iter_documents(docs, report)
    assert sorted(d.doc_id for d in stream) == ["guide/setup.md", "index.rst", "keep.draft.md"]
    # the root's docs/_build/ (a folder, not entered), its *.log, and docs/.gitignore's draft
    assert report.gitignored == 3 and report.ignored == []
    everything = IngestReport()
    ids = sorted(d.doc_id for d in iter_documents(docs, everything, gitignore=False))
    assert ids == ["_build/html/index.html", "guide/next.draft.md", "guide/setup.md", "index.rst", "keep.draft.md"]
    assert everything.gitignored == 0 and everything.ignored == [str(docs / "build.log")]  # .log: not a type read


def test_outside_a_repository_only_the_folders_own_gitignore_files_count(tmp_path):
    outer = tmp_path / "outer"
    (outer / "notes").mkdir(parents=True)
    (outer / ".gitignore").write_text("*.md\n", encoding="utf-8")  # above the folder, and no .git: not read
    (outer / "notes" / ".gitignore").write_text("private/\n", encoding="utf-8")
    (outer / "notes" / "private").mkdir()
    (outer / "notes" / "a.md").write_text("# A\n\nkept\n", encoding="utf-8")
    (outer / "notes" / "private" / "b.md").write_text("# B\n\nleft out\n", encoding="utf-8")
    assert [d.doc_id for d in iter_documents(outer / "notes")] == ["a.md"]


def test_a_file_named_on_the_command_line_is_read_even_when_ignored(tmp_path):
    docs = _repo(tmp_path)
    assert [d.doc_id for d in iter_documents(docs / "guide" / "next.draft.md")] == ["next.draft.md"]


def test_sieve_index_says_what_it_left_out_and_no_gitignore_reads_it(run, tmp_path):
    docs = _repo(tmp_path)
    res = run("index", str(docs), "-c", "repo-docs", "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert (report["documents"], report["gitignored"]) == (3, 3)
    text = run("index", str(docs), "-c", "repo-docs-2")
    assert "Left out 3 paths that .gitignore names (--no-gitignore or SIEVE_GITIGNORE=false reads them)" in text.output
    every = json.loads(run("index", str(docs), "-c", "repo-docs-3", "--no-gitignore", "--json").stdout)
    assert (every["documents"], every["gitignored"]) == (5, 0)


def test_documents_a_gitignore_now_leaves_out_are_listed_as_no_longer_read_and_removed_on_request(run, tmp_path):
    # indexed with --no-gitignore (or before the rule was written), then read as git reads the folder
    docs = _repo(tmp_path)
    assert json.loads(run("index", str(docs), "-c", "was-all", "--no-gitignore", "--json").stdout)["documents"] == 5
    again = run("index", str(docs), "-c", "was-all")
    assert again.exit_code == 0, again.output
    assert "Still indexed: 2 documents of files no longer read from this folder" in again.output
    report = json.loads(run("index", str(docs), "-c", "was-all", "--json").stdout)
    # the build's page (under a left-out folder) and the draft; the three read files are unchanged
    assert (sorted(report["gone"]), report["unchanged"]) == (["_build/html/index.html", "guide/next.draft.md"], 3)
    removed = json.loads(run("index", str(docs), "-c", "was-all", "--delete-missing", "--json").stdout)
    assert removed["deleted"] == 2
    assert json.loads(run("index", str(docs), "-c", "was-all", "--json").stdout)["gone"] == []
