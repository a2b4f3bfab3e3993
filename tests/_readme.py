"""The README's (and docs/'s) shell commands, parsed once for the tests that check them.

Importable like ``_server_process`` (pytest puts ``tests/`` on ``sys.path``).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))


def bash_commands(path: Path = README) -> list[list[str]]:
    """Every command line in ``path``'s bash blocks, as argv lists, in order.

    Continuations are joined, comments dropped, ``a && b`` and ``a; b`` split, ``VAR=value``
    prefixes dropped; a command ending in ``&`` keeps the ``&`` as its last word.
    """
    text = path.read_text(encoding="utf-8")
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = re.split(r"(?:^|\s)#", line, maxsplit=1)[0].strip()
            for part in re.split(r"&&|;", line):
                words = shlex.split(part.strip())
                while words and "=" in words[0] and not words[0].startswith("-"):
                    words = words[1:]  # VAR=value prefixes
                if words:
                    out.append(words)
    return out


def python_blocks(path: Path = README) -> list[str]:
    """The source of every ``python`` block in ``path``."""
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def sieve_invocations(path: Path = README) -> list[list[str]]:
    """The ``sieve ...`` commands of :func:`bash_commands`, without the leading ``sieve``."""
    return [words[1:] for words in bash_commands(path) if words[0] == "sieve"]


__all__ = ["DOCS", "README", "ROOT", "bash_commands", "python_blocks", "sieve_invocations"]
