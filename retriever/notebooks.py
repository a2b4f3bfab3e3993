"""Jupyter notebooks (``.ipynb``) as the Markdown a reader sees: prose cells as written, code cells fenced.

Tutorials and how-to guides are often notebooks (a docs site renders them as pages). The file is
JSON (nbformat 4, the format Jupyter has written since 2015): its ``cells`` hold Markdown or code
as lists of lines. Read here with :mod:`json` alone (``nbformat`` would add jsonschema and traitlets
for what one loop does): Markdown cells are kept as written, so their headings open sections; code
cells are fenced with the kernel's language, so a ``# comment`` opens none. Outputs (tables, plots,
logs) and raw cells are left out: they are what running the page printed, not what it says.

Example:
    >>> nb = '{"metadata": {"kernelspec": {"language": "python"}}, "cells": ['
    >>> nb += '{"cell_type": "markdown", "source": ["# Quick start\\\\n", "Load it."]},'
    >>> nb += '{"cell_type": "code", "source": "import sieve", "outputs": [{"text": "ok"}]}]}'
    >>> print(notebook_text(nb))
    # Quick start
    Load it.
    <BLANKLINE>
    ```python
    import sieve
    ```
"""

from __future__ import annotations

import json

from sieve.retriever.sections import fenced


def notebook_text(raw: str) -> str:
    """The notebook ``raw`` (its JSON) as Markdown: Markdown cells, then code cells fenced, in order.

    Raises:
        ValueError: ``raw`` is not a notebook of nbformat 4 (a JSON object with a list of ``cells``).
    """
    nb = json.loads(raw)
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        old = isinstance(nb, dict) and "worksheets" in nb
        raise ValueError(
            "a notebook of nbformat 3 (cells inside 'worksheets'); save it again with Jupyter to read it"
            if old
            else "expected a Jupyter notebook: a JSON object with a list of 'cells'"
        )
    meta = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    language = _language(meta)
    parts: list[str] = []
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        source = cell.get("source", "")
        text = ("".join(source) if isinstance(source, list) else str(source)).strip("\n")
        if not text.strip():
            continue
        if cell.get("cell_type") == "markdown":
            parts.append(text)
        elif cell.get("cell_type") == "code":
            parts.append(fenced(text, language))
    return "\n\n".join(parts)


def _language(meta: dict) -> str:
    """The code cells' language as a fence's info string: the kernel's, else ``language_info``'s."""
    for key in ("kernelspec", "language_info"):
        entry = meta.get(key)
        name = entry.get("language" if key == "kernelspec" else "name") if isinstance(entry, dict) else None
        if isinstance(name, str) and name.strip() and " " not in name.strip():
            return name.strip().lower()
    return ""


__all__ = ["notebook_text"]
