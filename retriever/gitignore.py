"""The files a folder's ``.gitignore`` files leave out, as git reads them, so ``sieve index`` skips them too.

A documentation folder in a repository often holds what its build wrote: Sphinx's ``_build/html``
beside the ``.rst`` sources, MkDocs' ``site/``, a ``node_modules``. Indexed, every page would come
back twice (its source and its rendering) and crowd other pages out of the top k. The repository
already says which files are not its own: its ``.gitignore`` files. Read here, as git reads them:
those of the folders from the repository's root (the nearest folder above holding ``.git``) down to
the folder indexed, and those inside it, each pattern relative to its own file's folder. Outside a
repository only the ``.gitignore`` files inside the folder count. Pattern matching is ``pathspec``'s
(a maintained implementation of git's wildmatch rules, negations included within one file); a
file that a deeper ``.gitignore`` re-includes with ``!`` after a shallower one excluded it stays
excluded (git's rule across files is not followed).

Example:
    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> _ = (root / ".gitignore").write_text("_build/\\n*.log\\n")
    >>> ignore = GitIgnore.for_folder(root)
    >>> [ignore.ignores(root / p) for p in ("_build/html/index.html", "guide.md", "run.log")]
    [True, False, True]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pathspec


@dataclass
class GitIgnore:
    """The ``.gitignore`` patterns in force under one folder: (the folder a file sits in, its patterns)."""

    specs: list[tuple[Path, pathspec.GitIgnoreSpec]] = field(default_factory=list)

    @classmethod
    def for_folder(cls, folder: Path) -> GitIgnore:
        """The patterns of the repository's ``.gitignore`` files from its root down to ``folder``
        (none above ``folder`` outside a repository); those inside ``folder`` are added by :meth:`add`."""
        folder = folder.resolve()
        chain = [folder, *folder.parents]
        top = next((i for i, f in enumerate(chain) if (f / ".git").exists()), 0)
        ignore = cls()
        for f in reversed(chain[: top + 1]):
            ignore.add(f)
        return ignore

    def add(self, folder: Path) -> None:
        """Read ``folder/.gitignore`` when there is one (an unreadable one is passed over)."""
        path = folder / ".gitignore"
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return
        if any(line.strip() and not line.lstrip().startswith("#") for line in lines):
            self.specs.append((folder.resolve(), pathspec.GitIgnoreSpec.from_lines(lines)))

    def ignores(self, path: Path, is_dir: bool = False) -> bool:
        """Whether a ``.gitignore`` whose folder holds ``path`` leaves it out (``is_dir``: a folder)."""
        path = path.resolve()
        for folder, spec in self.specs:
            if path == folder or not path.is_relative_to(folder):
                continue
            rel = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
            if spec.match_file(rel):
                return True
        return False


__all__ = ["GitIgnore"]
