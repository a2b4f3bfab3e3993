"""Versions of a collection: the name users type points at one Chroma collection at a time.

Re-embedding a collection with another model (``sieve adopt`` of a run whose embedder was adapted
to the corpus) cannot rewrite vectors in place: a search in between would compare a query with a
mix of two models' vectors. It writes a new *version* instead, a Chroma collection of its own
(``docs--v2``), and then points the name at it in one metadata write. A reader resolves the name
when it opens the collection and checks the pointer again before it trusts a cached index
(:meth:`~sieve.retriever.store.ChromaStore.is_current`), so each search reads one version whole.
The old version stays until the user drops it (``sieve collections --drop-old``).

The pointers live in the metadata of one hidden collection (:data:`REGISTRY`), changed only under
the store's write lock; a name with no pointer is its own first version.
"""

from __future__ import annotations

import re
from typing import Any

REGISTRY = "sieve-versions"
_VERSION_RE = re.compile(r"^(?P<base>.+)--v(?P<n>[0-9]+)$")


def version_name(name: str, n: int) -> str:
    """The Chroma collection that holds version ``n`` of ``name`` (version 1 is ``name`` itself).

    Example:
        >>> version_name("docs", 1), version_name("docs", 3)
        ('docs', 'docs--v3')
    """
    return name if n == 1 else f"{name}--v{n}"


def split_version(physical: str) -> tuple[str, int]:
    """(name, version number) of a Chroma collection.

    Example:
        >>> split_version("docs--v2"), split_version("docs")
        (('docs', 2), ('docs', 1))
    """
    m = _VERSION_RE.match(physical)
    return (m["base"], int(m["n"])) if m else (physical, 1)


def is_hidden(physical: str) -> bool:
    """Whether a Chroma collection is not a name users type: the registry, or a later version."""
    return physical == REGISTRY or split_version(physical)[1] > 1


def _pointers(client: Any) -> dict[str, str]:
    from chromadb.errors import NotFoundError

    try:
        meta = client.get_collection(REGISTRY, embedding_function=None).metadata or {}
    except NotFoundError:
        return {}
    return {str(k): str(v) for k, v in meta.items() if not str(k).startswith("_")}


def active_version(client: Any, name: str) -> str:
    """The Chroma collection ``name`` points at now (``name`` itself when it was never switched)."""
    return _pointers(client).get(name, name)


def versions(client: Any, name: str) -> list[str]:
    """Every existing Chroma collection that is a version of ``name``, oldest first."""
    names = [c.name if hasattr(c, "name") else str(c) for c in client.list_collections()]
    found = [(split_version(p)[1], p) for p in names if split_version(p)[0] == name]
    return [p for _, p in sorted(found)]


def next_version(client: Any, name: str) -> str:
    """The name of a new version of ``name``: one past the highest that exists or is pointed at."""
    taken = [split_version(p)[1] for p in (*versions(client, name), active_version(client, name))]
    return version_name(name, max(taken, default=1) + 1)


def point(client: Any, name: str, physical: str | None) -> None:
    """Point ``name`` at ``physical`` (``None`` or ``name`` itself: forget the pointer).

    The caller holds the store's write lock: the registry's metadata is replaced whole."""
    from chromadb.errors import NotFoundError

    pointers = _pointers(client)
    if physical is None or physical == name:
        pointers.pop(name, None)
    else:
        pointers[name] = physical
    try:
        registry = client.get_collection(REGISTRY, embedding_function=None)
    except NotFoundError:
        if not pointers:
            return
        registry = client.create_collection(REGISTRY, embedding_function=None, metadata=pointers)
        return
    # modify() replaces the metadata whole but refuses an empty one: an emptied registry keeps a key
    # that no collection name can be (names start with a letter or digit).
    registry.modify(metadata=pointers or {"_empty": "yes"})


__all__ = [
    "REGISTRY",
    "active_version",
    "is_hidden",
    "next_version",
    "point",
    "split_version",
    "version_name",
    "versions",
]
