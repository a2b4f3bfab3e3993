"""Retrieval modes by name: one registry (:data:`MODES`), from which every list of mode names derives.

A mode is a name, a builder that returns the mode's :class:`~sieve.retriever.base.Retriever` for a
:class:`~sieve.retriever.index.CorpusIndex`, one line of help, and whether it reads vectors (then
the index's embedder must match the collection's). ``CorpusIndex.search(mode=...)``, the HTTP
schema's ``mode`` values, ``sieve retrieve --mode`` and ``sieve eval``'s baselines all read
:data:`MODES`, so adding a mode is one :func:`register_mode` call.

Example:
    >>> list(MODES)
    ['dense', 'bm25', 'hybrid']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sieve.core.errors import InvalidInput

if TYPE_CHECKING:
    from sieve.retriever.base import Retriever

# The builder receives the CorpusIndex (typed Any: this module sits below index.py, which imports it).
ModeBuilder = Callable[[Any], "Retriever"]


@dataclass(frozen=True)
class RetrievalMode:
    """One registered mode: its retriever for an index, one line of help, and whether it reads vectors."""

    name: str
    build: ModeBuilder
    help: str
    needs_vectors: bool = True


MODES: dict[str, RetrievalMode] = {}


def register_mode(name: str, build: ModeBuilder, help: str, *, needs_vectors: bool = True) -> RetrievalMode:
    """Add a retrieval mode under ``name`` (replacing one of that name) and return it."""
    mode = RetrievalMode(name, build, help, needs_vectors)
    MODES[name] = mode
    return mode


def get_mode(name: str) -> RetrievalMode:
    """The mode registered as ``name``.

    Raises:
        InvalidInput: no mode has that name.
    """
    mode = MODES.get(name)
    if mode is None:
        raise InvalidInput(f"Expected mode in {tuple(MODES)}, got {name!r}")
    return mode


def mode_help() -> str:
    """``"dense | bm25 | hybrid"``: the names for a help text, in registry order."""
    return " | ".join(MODES)


register_mode("dense", lambda index: index.dense, "embedding cosine similarity")
# Keyword search reads no vectors, so any embedder may run it.
register_mode("bm25", lambda index: index.bm25, "BM25 keyword scores", needs_vectors=False)
register_mode("hybrid", lambda index: index.hybrid, "dense and BM25 fused by reciprocal rank")

__all__ = ["MODES", "ModeBuilder", "RetrievalMode", "get_mode", "mode_help", "register_mode"]
