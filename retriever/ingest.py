"""Turn files and folders into :class:`Document` objects.

Supported: ``.txt``, ``.md`` (one document each), ``.jsonl`` (one record a line with ``id``,
``title``, ``text`` and optional ``source``/``metadata``), ``.html``/``.htm`` (visible text via
BeautifulSoup) and ``.pdf`` (text via pypdf). A file that cannot be read (not UTF-8, broken PDF,
bad JSON line, metadata Chroma cannot hold, an id seen earlier in the same run) is skipped and
reported in :class:`IngestReport`, never dropped silently; the rest is indexed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sieve.errors import InvalidInput, NotFound
from sieve.retriever.metadata import validate_metadata
from sieve.retriever.types import Document

if TYPE_CHECKING:
    from collections.abc import Iterator

logger = logging.getLogger(__name__)

SUPPORTED_SUFFIXES = (".txt", ".md", ".jsonl", ".html", ".htm", ".pdf")


@dataclass
class IngestReport:
    files_read: int = 0
    documents: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path[:line], reason)
    ignored: list[str] = field(default_factory=list)  # unsupported suffixes

    def skip(self, where: str, reason: str) -> None:
        self.skipped.append((where, reason))
        # INFO, not WARNING: the report lists every skip and callers show it (the CLI prints it
        # once, after the progress bar); a warning here printed each one twice.
        logger.info("Skipped %s: %s", where, reason)


def content_hash(doc: Document) -> str:
    """Hash of everything that changes a document's chunks (text, title, source, metadata)."""
    h = hashlib.sha256()
    for part in (doc.title, doc.source, doc.text, json.dumps(doc.metadata, sort_keys=True, default=str)):
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:32]


def _doc_id_for(path: Path, root: Path) -> str:
    rel = path.relative_to(root) if path != root else Path(path.name)
    return re.sub(r"[^A-Za-z0-9._/-]+", "-", rel.as_posix())


def _read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8")  # strict: a latin-1 file is reported, not garbled


def _html_text(raw: str) -> tuple[str, str]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(raw, "html.parser")
    for tag in soup(["script", "style", "noscript", "template"]):
        tag.decompose()
    title = soup.title.get_text(strip=True) if soup.title else ""
    text = re.sub(r"\n\s*\n+", "\n\n", soup.get_text("\n")).strip()
    return title, text


def _pdf_text(path: Path) -> str:
    from pypdf import PdfReader

    reader = PdfReader(str(path))
    return "\n\n".join((page.extract_text() or "") for page in reader.pages).strip()


def _markdown_title(text: str) -> str:
    m = re.search(r"^#\s+(.+)$", text, flags=re.MULTILINE)
    return m.group(1).strip() if m else ""


def _jsonl_docs(path: Path, report: IngestReport) -> Iterator[tuple[Document, str]]:
    try:
        raw = _read_text(path)
    except UnicodeDecodeError as exc:
        report.skip(str(path), f"not valid UTF-8 ({exc.reason} at byte {exc.start})")
        return
    for lineno, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            report.skip(where, f"invalid JSON ({exc.msg})")
            continue
        if not isinstance(rec, dict) or not isinstance(rec.get("text"), str) or "id" not in rec:
            report.skip(where, "expected an object with 'id' and a string 'text'")
            continue
        if not rec["text"].strip():
            report.skip(where, "empty text")
            continue
        try:
            meta = validate_metadata(rec.get("metadata"))
        except InvalidInput as exc:
            report.skip(where, exc.message)
            continue
        yield Document(
            doc_id=str(rec["id"]), text=rec["text"], title=str(rec.get("title") or ""),
            source=str(rec.get("source") or f"{path.name}:{lineno}"), metadata=meta,
        ), where


def iter_documents(path: str | Path, report: IngestReport | None = None) -> Iterator[Document]:
    """Documents from a file or (recursively, in sorted order) a folder.

    Raises:
        NotFound: the path does not exist.
    """
    root = Path(path).expanduser()
    report = report if report is not None else IngestReport()
    if not root.exists():
        raise NotFound(f"Expected a file or folder to index, got {str(path)!r} (does not exist)")
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    base = root.parent if root.is_file() else root
    first_seen: dict[str, str] = {}  # doc id -> where it first came from, in this run

    def fresh(doc: Document, where: str) -> bool:
        first = first_seen.setdefault(doc.doc_id, where)
        if first != where:
            report.skip(where, f"duplicate id {doc.doc_id!r} (first at {first}; that one is indexed)")
            return False
        return True

    for f in files:
        suffix = f.suffix.lower()
        if suffix not in SUPPORTED_SUFFIXES:
            if not f.name.startswith("."):
                report.ignored.append(str(f))
            continue
        report.files_read += 1
        if suffix == ".jsonl":
            for doc, where in _jsonl_docs(f, report):
                if fresh(doc, where):
                    report.documents += 1
                    yield doc
            continue
        try:
            if suffix == ".pdf":
                title, text = "", _pdf_text(f)
            elif suffix in (".html", ".htm"):
                title, text = _html_text(_read_text(f))
            else:
                text = _read_text(f)
                title = _markdown_title(text) if suffix == ".md" else ""
        except UnicodeDecodeError as exc:
            report.skip(str(f), f"not valid UTF-8 ({exc.reason} at byte {exc.start}); re-encode it as UTF-8")
            continue
        except Exception as exc:  # pypdf raises many types for broken files; report them all
            report.skip(str(f), f"unreadable {suffix} file ({type(exc).__name__}: {exc})")
            continue
        if not text.strip():
            report.skip(str(f), "no text")
            continue
        doc = Document(doc_id=_doc_id_for(f, base), text=text, title=title or f.stem, source=str(f))
        if fresh(doc, str(f)):
            report.documents += 1
            yield doc


def load_documents(path: str | Path) -> tuple[list[Document], IngestReport]:
    """Every document under ``path`` (ids unique: later duplicates are in ``report.skipped``)."""
    report = IngestReport()
    docs = list(iter_documents(path, report))
    return docs, report


__all__ = ["IngestReport", "SUPPORTED_SUFFIXES", "content_hash", "iter_documents", "load_documents"]
