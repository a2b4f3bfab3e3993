"""Turn files and folders into :class:`Document` objects.

Supported: every format registered in :data:`sieve.retriever.readers.READERS`, one document a file
(``.txt``, ``.md``, ``.rst``, ``.html``/``.htm`` by main content only, without navigation, menus and
footers, ``.docx``, ``.pdf``, ...), and ``.jsonl`` (one record a line with ``id``, ``title``, ``text``
and optional ``source``/``metadata``). A file that cannot be read (not UTF-8, broken PDF, bad JSON
line, metadata Chroma cannot hold, an id seen earlier in the same run) is skipped and reported in
:class:`IngestReport`, never dropped silently; the rest is indexed. Files of other types are
counted by suffix; hidden files and files in hidden folders (``.git``) only by number.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sieve.core.errors import InvalidInput, NotFound
from sieve.retriever.chunking import validate_doc_id
from sieve.retriever.gitignore import GitIgnore
from sieve.retriever.metadata import validate_metadata
from sieve.retriever.readers import JSONL, read_file, read_utf8, supported_suffixes
from sieve.retriever.slack import is_slack_day, read_slack_day
from sieve.retriever.types import Document

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from sieve.retriever.store import DocState

logger = logging.getLogger(__name__)

NO_SUFFIX = "(no suffix)"
_SUFFIXES_SHOWN = 10  # by-suffix counts on one line; the JSON report has every ignored path


@dataclass
class IngestReport:
    """What a run read, skipped (with the reason) and ignored (by type).

    Attributes:
        files_read: files of a supported type that were opened.
        documents: documents produced.
        skipped: ``(path[:line], reason)`` for every input that was not indexed.
        ignored: paths of files whose type Sieve does not read.
        hidden: hidden files and files in hidden folders of an unsupported type (not listed).
        gitignored: paths a ``.gitignore`` leaves out (:mod:`sieve.retriever.gitignore`; not listed):
            files, and folders not entered (one each, whatever they hold).
        warnings: ``(path, message)``: what a reader's library warned about a file it still read.
    """

    files_read: int = 0
    documents: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    hidden: int = 0
    gitignored: int = 0
    warnings: list[tuple[str, str]] = field(default_factory=list)

    def skip(self, where: str, reason: str) -> None:
        self.skipped.append((where, reason))
        # INFO, not WARNING: the report lists every skip and callers show it (the CLI prints it
        # once, after the progress bar); a warning here printed each one twice.
        logger.info("Skipped %s: %s", where, reason)

    def warn(self, where: str, message: str) -> None:
        self.warnings.append((where, message))
        logger.info("Read %s with a warning: %s", where, message)

    def ignored_by_suffix(self) -> dict[str, int]:
        """Ignored files per suffix, most frequent first (``"(no suffix)"`` for ``Makefile``).

        Example:
            >>> IngestReport(ignored=["a.png", "b.PNG", "Makefile"]).ignored_by_suffix()
            {'.png': 2, '(no suffix)': 1}
        """
        counts = Counter(Path(p).suffix.lower() or NO_SUFFIX for p in self.ignored)
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def ignored_counts(self) -> str:
        """``"7 .png, 3 .js, 2 (no suffix)"``: ignored files by suffix, the ten most frequent named.

        Example:
            >>> IngestReport(ignored=["a.png", "b.png", "Makefile"]).ignored_counts()
            '2 .png, 1 (no suffix)'
        """
        counts = list(self.ignored_by_suffix().items())
        text = ", ".join(f"{n:,} {suffix}" for suffix, n in counts[:_SUFFIXES_SHOWN])
        rest = counts[_SUFFIXES_SHOWN:]
        if rest:
            text += f", {sum(n for _, n in rest):,} with {len(rest)} other suffixes"
        return text

    def ignored_summary(self) -> str:
        """``"ignored 12 files: 7 .png, 3 .js, 2 (no suffix)"``, or ``""`` when none was ignored for its type
        (hidden files alone are no news: a documentation folder in git has hundreds).

        Example:
            >>> IngestReport(ignored=["a.png", "b.png", "Makefile"], hidden=4).ignored_summary()
            'ignored 3 files: 2 .png, 1 (no suffix) (and 4 hidden files)'
        """
        if not self.ignored:
            return ""
        text = f"ignored {_plural(len(self.ignored), 'file')}: {self.ignored_counts()}"
        if self.hidden:
            text += f" (and {_plural(self.hidden, 'hidden file')})"
        return text

    def gitignored_summary(self) -> str:
        """``"left out 2 paths that .gitignore names (--no-gitignore or SIEVE_GITIGNORE=false reads them)"``, or ``""`` for none.

        Example:
            >>> IngestReport(gitignored=2).gitignored_summary()
            'left out 2 paths that .gitignore names (--no-gitignore or SIEVE_GITIGNORE=false reads them)'
        """
        if not self.gitignored:
            return ""
        return f"left out {_plural(self.gitignored, 'path')} that .gitignore names (--no-gitignore or SIEVE_GITIGNORE=false reads them)"

    def problem_lines(self) -> list[str]:
        """Every skip with its reason, then the ignored files by suffix: one line each, nothing elided.

        Example:
            >>> IngestReport(skipped=[("a.txt", "no text")], ignored=["b.png"]).problem_lines()
            ['1 skipped:', '  a.txt: no text', '1 ignored for its type: 1 .png (e.g. b.png)']
        """
        lines: list[str] = []
        if self.skipped:
            lines.append(f"{len(self.skipped):,} skipped:")
            lines += [f"  {where}: {reason}" for where, reason in self.skipped]
        if self.ignored:
            its = "its" if len(self.ignored) == 1 else "their"
            lines.append(
                f"{len(self.ignored):,} ignored for {its} type: {self.ignored_counts()} (e.g. {self.ignored[0]})"
            )
        if self.hidden:
            lines.append(f"{_plural(self.hidden, 'hidden file')} (or files in hidden folders) passed over")
        if self.gitignored:
            lines.append(self.gitignored_summary())
        return lines


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def content_hash(doc: Document, chunking: str = "") -> str:
    """Hash of everything that changes a document's chunks (text, title, source, metadata, its
    ``context`` when it has one, and ``chunking``: :attr:`RetrieverConfig.chunking_key`, so new chunk
    settings re-chunk a document). Without a context the hash is what it was before contexts existed."""
    h = hashlib.sha256()
    parts: tuple[str, ...] = (doc.title, doc.source, doc.text, json.dumps(doc.metadata, sort_keys=True, default=str))
    if doc.context:  # a turn whose previous turn changed is embedded again
        parts = (*parts, f"context:{doc.context}")
    for part in (*parts, chunking) if chunking else parts:
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:32]


def _source_for(path: Path) -> str:
    """A file's ``source``: its absolute path, so that the same file hashes the same whatever the
    working directory or the spelling of the path it was indexed by (``docs``, ``./docs``, ``/abs/docs``)."""
    return os.path.abspath(path)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def id_conflicts(claims: Mapping[str, str], stored: Mapping[str, str]) -> list[str]:
    """The documents of a run that would replace a document of the same id read from *another* file
    that still exists, one line each (``claims`` and ``stored``: doc id -> source).

    A document's id is its path relative to the folder indexed, so two folders (or two single files)
    with a ``README.md`` each claim the same id; without this check the second run silently replaces
    the first one's document. A stored source that no longer exists is a moved or renamed folder:
    that is an update, not a conflict. Sources that are not files (JSONL records, upserts) never conflict.
    """
    out = []
    for doc_id, source in claims.items():
        old = stored.get(doc_id)
        if old and old != source and os.path.isfile(old) and not _same_file(old, source):
            out.append(f"{doc_id!r} is indexed from {old}, and {source} would replace it")
    return out


def review_against_store(docs: object, states: Mapping[str, DocState], collection: str) -> list[str]:
    """Check a run over ``docs`` against what ``collection`` holds (``states``: its
    :meth:`~sieve.retriever.store.ChromaStore.doc_states`) before it writes anything, and return the
    ids of documents whose files are gone.

    For a :class:`DocumentStream` (anything else passes, and nothing is gone):

    - raises :class:`InvalidInput` when its files would replace documents of other files
      (:func:`id_conflicts`);
    - returns the documents indexed from files inside the folder it reads that this run does not
      index again because they no longer exist (deleted, or moved out of the folder) or because a
      ``.gitignore`` now leaves them out (indexed before the rule, or with ``gitignore=False``);
      none when it reads one file.
    """
    if not isinstance(docs, DocumentStream):
        return []
    stored = {d: st.source for d, st in states.items()}
    claims = docs.claims()
    conflicts = id_conflicts(claims, stored)
    if conflicts:
        shown = "; ".join(conflicts[:5]) + (f"; and {len(conflicts) - 5} more" if len(conflicts) > 5 else "")
        raise InvalidInput(
            f"Expected files whose ids no other file holds in collection {collection!r}, got "
            f"{len(conflicts)} that would replace another file's document (a document's id is its path "
            f"relative to the folder indexed): {shown}. Nothing was written. Index a folder that holds "
            "both files (their ids then differ), or index into another collection (-c)."
        )
    if docs.folder is None:
        return []
    inside = os.path.join(os.path.abspath(docs.folder), "")
    return sorted(
        d
        for d, src in stored.items()
        if src.startswith(inside) and d not in claims and (not os.path.lexists(src) or docs.left_out(src))
    )


def id_safe(name: str) -> str:
    """``name`` (a file's path in its folder) as it stands in a document id: every run of other
    characters than ``A-Za-z0-9._/-`` one '-' (``My Notes.md`` -> ``My-Notes.md``).

    Example:
        >>> id_safe("guide/Cache Directory.md"), id_safe("Anna's notes.txt")
        ('guide/Cache-Directory.md', 'Anna-s-notes.txt')
    """
    return re.sub(r"[^A-Za-z0-9._/-]+", "-", name)


def _doc_id_for(path: Path, root: Path) -> str:
    rel = path.relative_to(root) if path != root else Path(path.name)
    return id_safe(rel.as_posix())


def _jsonl_records(path: Path) -> int:
    """Records a JSONL file holds: its non-blank lines, as the reader splits them (on ``\\n`` only)."""
    with path.open("rb") as fh:
        return sum(1 for line in fh if line.decode("utf-8", "replace").strip())


def _read(path: Path) -> tuple[str, str, list[str]]:
    """A listed file's title, text and its library's warnings: a Slack export's day file as the
    session it is (:mod:`~sieve.retriever.slack`), any other by its format's reader."""
    if is_slack_day(path):
        title, text = read_slack_day(path)
        return title, text, []
    return read_file(path)


class DocumentStream:
    """The documents of a file or folder, read one at a time.

    Nothing is touched until the stream is first iterated (or :attr:`total` is read): then the
    path is checked and its files listed, so :class:`NotFound` surfaces where the documents are
    consumed (``IndexWriter.index_path`` cleans up a new collection there), and a caller that
    draws a progress bar at the first document draws none for a path that fails. Files are read
    as the stream is consumed.

    Attributes:
        report: where skips, ignored files and warnings are recorded.
        decided: inputs decided so far: yielded as a document or skipped.
        yielded: documents yielded so far.
    """

    def __init__(self, path: str | Path, report: IngestReport | None = None, *, gitignore: bool = True) -> None:
        self.path = path
        self.gitignore = gitignore
        self.report = report if report is not None else IngestReport()
        self.decided = 0
        self.yielded = 0
        self._files: list[Path] | None = None
        self._total = 0
        self._base = Path(".")
        self._first_seen: dict[str, str] = {}  # doc id -> where it first came from, in this run
        self._left_out: set[str] = set()  # absolute paths (files and folders) a .gitignore left out
        self._documents: Iterator[Document] | None = None

    def _list(self) -> list[Path]:
        if self._files is not None:
            return self._files
        root = Path(self.path).expanduser()
        if not root.exists():
            raise NotFound(f"Expected a file or folder to index, got {str(self.path)!r} (does not exist)")
        self._base = root.parent if root.is_file() else root
        candidates = (
            [root] if root.is_file() else self._walk(root, GitIgnore.for_folder(root) if self.gitignore else None)
        )
        files: list[Path] = []
        suffixes = supported_suffixes()
        for f in candidates:
            if not f.is_file():  # a link to nothing (or to what is no file): said, not dropped silently
                self.report.skip(str(f), "a link to nothing: no file behind it")
                continue
            if f.suffix.lower() in suffixes or is_slack_day(f):
                files.append(f)
            elif any(part.startswith(".") for part in f.relative_to(self._base).parts):
                self.report.hidden += 1
            else:
                self.report.ignored.append(str(f))
        self._total = sum(_jsonl_records(f) if f.suffix.lower() == JSONL else 1 for f in files)
        self._files = files
        return files

    @property
    def folder(self) -> Path | None:
        """The folder read, or None when the path is one file."""
        self._list()
        return None if Path(self.path).expanduser().is_file() else self._base

    def claims(self) -> dict[str, str]:
        """doc id -> source of every listed file but JSONL ones: known from the listing alone, before
        any file is read, so a run can check them (:func:`id_conflicts`) before it writes anything."""
        out: dict[str, str] = {}
        for f in self._list():
            if f.suffix.lower() != JSONL:
                out.setdefault(_doc_id_for(f, self._base), _source_for(f))  # the first is indexed
        return out

    def _walk(self, root: Path, ignore: GitIgnore | None) -> list[Path]:
        """Every file under ``root`` in sorted order, linked folders followed (each real folder once,
        so a link back up the tree ends there); ``Path.rglob`` of Python 3.11 skips linked folders.
        With ``ignore``, what the ``.gitignore`` files leave out is counted in the report, not listed
        (a left-out folder is not entered: ``node_modules`` costs nothing)."""
        found: list[Path] = []
        seen: set[str] = set()
        for folder, subfolders, names in os.walk(root, followlinks=True):
            real = os.path.realpath(folder)
            if real in seen:
                subfolders[:] = []
                continue
            seen.add(real)
            here = Path(folder)
            if ignore is not None:
                if here != root:  # the root's own .gitignore came with GitIgnore.for_folder
                    ignore.add(here)
                entered = [d for d in subfolders if not ignore.ignores(here / d, is_dir=True)]
                kept = [n for n in names if not ignore.ignores(here / n)]
                self.report.gitignored += len(subfolders) - len(entered) + len(names) - len(kept)
                dropped = set(subfolders) - set(entered) | set(names) - set(kept)
                self._left_out.update(os.path.abspath(here / n) for n in dropped)
                subfolders[:], names = entered, kept
            found.extend(here / name for name in names)
        return sorted(found)

    def left_out(self, source: str) -> bool:
        """Whether the file at ``source`` (an absolute path) is one a ``.gitignore`` left out of this
        run, itself or a folder above it."""
        self._list()
        path = Path(source)
        return any(str(p) in self._left_out for p in (path, *path.parents))

    @property
    def files(self) -> list[Path]:
        """The files of a supported type, in reading order."""
        return self._list()

    @property
    def total(self) -> int:
        """Inputs the stream decides on: one per file, one per JSONL record."""
        self._list()
        return self._total

    def __iter__(self) -> DocumentStream:
        return self

    def __next__(self) -> Document:
        if self._documents is None:
            self._documents = self._generate(self._list())
        return next(self._documents)

    @property
    def skipped(self) -> int:
        """Inputs decided without a document (skipped)."""
        return self.decided - self.yielded

    def _skip(self, where: str, reason: str, inputs: int = 1) -> None:
        self.report.skip(where, reason)
        self.decided += inputs

    def _fresh(self, doc: Document, where: str) -> bool:
        first = self._first_seen.setdefault(doc.doc_id, where)
        if first != where:
            self._skip(where, f"duplicate id {doc.doc_id!r} (first at {first}; that one is indexed)")
            return False
        return True

    def _emit(self, doc: Document) -> Document:
        self.decided += 1
        self.yielded += 1
        self.report.documents += 1
        return doc

    def _generate(self, files: list[Path]) -> Iterator[Document]:
        for f in files:
            self.report.files_read += 1
            if f.suffix.lower() == JSONL:
                for doc, where in self._jsonl_docs(f):
                    if self._fresh(doc, where):
                        yield self._emit(doc)
                continue
            try:
                title, text, warnings = _read(f)
            except UnicodeDecodeError as exc:
                self._skip(str(f), f"not valid UTF-8 ({exc.reason} at byte {exc.start}); re-encode it as UTF-8")
                continue
            except Exception as exc:  # pypdf, python-docx, docutils raise many types for broken files
                self._skip(str(f), f"unreadable {f.suffix.lower()} file ({type(exc).__name__}: {exc})")
                continue
            if not text.strip():  # skipped: what its reader warned about says nothing more
                self._skip(str(f), "no text")
                continue
            for message in warnings:
                self.report.warn(str(f), message)
            doc = Document(doc_id=_doc_id_for(f, self._base), text=text, title=title or f.stem, source=_source_for(f))
            if self._fresh(doc, str(f)):
                yield self._emit(doc)

    def _jsonl_docs(self, path: Path) -> Iterator[tuple[Document, str]]:
        try:
            raw = read_utf8(path)
        except UnicodeDecodeError as exc:
            self._skip(str(path), f"not valid UTF-8 ({exc.reason} at byte {exc.start})", inputs=_jsonl_records(path))
            return
        # split("\n"), not splitlines(): JSON strings may hold U+2028 and other line separators raw.
        for lineno, line in enumerate(raw.split("\n"), start=1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                self._skip(where, f"invalid JSON ({exc.msg})")
                continue
            if not isinstance(rec, dict) or not isinstance(rec.get("text"), str) or "id" not in rec:
                self._skip(where, "expected an object with 'id' and a string 'text'")
                continue
            if not isinstance(rec.get("context", ""), str):
                self._skip(where, "expected 'context' to be a string (the text searched with this one, never returned)")
                continue
            if not rec["text"].strip():
                self._skip(where, "empty text")
                continue
            try:
                meta = validate_metadata(rec.get("metadata"))
                doc_id = validate_doc_id(str(rec["id"]))
            except InvalidInput as exc:
                self._skip(where, exc.message)
                continue
            yield (
                Document(
                    doc_id=doc_id,
                    text=rec["text"],
                    title=str(rec.get("title") or ""),
                    source=str(rec.get("source") or f"{path.name}:{lineno}"),
                    metadata=meta,
                    context=rec.get("context") or "",
                ),
                where,
            )


def iter_documents(path: str | Path, report: IngestReport | None = None, *, gitignore: bool = True) -> DocumentStream:
    """Documents from a file or (recursively, in sorted order) a folder, read as they are iterated;
    in a folder, files its ``.gitignore`` files leave out are not read unless ``gitignore`` is False
    (:mod:`sieve.retriever.gitignore`; a path given as a file is always read).

    Raises:
        NotFound: the path does not exist (when the result is first iterated).
    """
    return DocumentStream(path, report, gitignore=gitignore)


def load_documents(path: str | Path) -> tuple[list[Document], IngestReport]:
    """Every document under ``path`` (ids unique: later duplicates are in ``report.skipped``)."""
    report = IngestReport()
    docs = list(iter_documents(path, report))
    return docs, report


__all__ = [
    "DocumentStream",
    "IngestReport",
    "NO_SUFFIX",
    "content_hash",
    "id_safe",
    "iter_documents",
    "load_documents",
]
