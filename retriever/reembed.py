"""Re-embed a collection with another model into a new version, then switch its name to it.

The new version is a Chroma collection of its own (:mod:`sieve.retriever.versions`), filled with
the same ids, texts and metadata and the new model's vectors; its BM25 index is built before the
switch, so the first search after it pays nothing. The name is pointed at the new version in one
metadata write, under the store's write lock (held for the whole copy, so no write can land in the
old version and miss the new one; readers never wait on it). A run that fails or is interrupted
before the switch removes what it wrote: the collection is as it was. The old version stays
until :func:`drop_old_versions`.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sieve.core.errors import InvalidInput

if TYPE_CHECKING:
    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.embeddings import Embedder
    from sieve.retriever.handle import StoreHandle
    from sieve.retriever.index import CorpusIndex

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SwitchReport:
    """What :func:`reembed_version` did: the name, the version it left and the one it made."""

    name: str
    old: str
    new: str
    chunks: int
    seconds: float
    switched: bool


def reembed_version(
    index: CorpusIndex,
    embedder: Embedder,
    *,
    run: str | None = None,
    activate: bool = True,
    progress: bool = True,
    page: int = 512,
) -> SwitchReport:
    """Write every chunk of ``index`` with ``embedder``'s vectors into a new version of its collection.

    Args:
        index: the collection as it is served now (its active version).
        embedder: the model of the new version (its identity is stamped on it).
        run: the retrained run to record on the new version (``sieve adopt``): recorded before the
            switch, so no reader sees the new vectors without the run that goes with them.
        activate: point the collection's name at the new version when it is complete.
        progress: draw a bar over the chunks.
        page: chunks embedded and written per step.
    """
    from sieve.retriever.index import CorpusIndex, delete_version
    from sieve.retriever.versions import next_version, point

    t0 = time.perf_counter()
    handle = index.store.handle
    config = index.config
    total = index.count()
    if total == 0:
        raise InvalidInput(f"Expected a collection with chunks to re-embed, got {index.name!r} empty")
    with index.write_lock.hold(), handle.session() as client:
        old = index.store.name
        new = next_version(client, index.name)
        handle.mark_written()
        target = _create(client, new, config, embedder, run)
        try:
            _copy(index, target, embedder, total, page, progress)
            # BM25 of the new version now, while the lock is held (so the rebuild saves its file).
            CorpusIndex.open(config, index.name, version=new, embedder=embedder, client=handle).bm25_index()
            if activate:
                point(client, index.name, new)
            handle.mark_written()
        except BaseException:
            delete_version(client, config, new)
            handle.mark_written()
            raise
    seconds = time.perf_counter() - t0
    logger.info("Collection %r: %d chunks re-embedded into %s in %.1f s", index.name, total, new, seconds)
    return SwitchReport(index.name, old, new, total, round(seconds, 1), activate)


def _create(client: Any, name: str, config: RetrieverConfig, embedder: Embedder, run: str | None) -> Any:
    """The new version's empty Chroma collection, stamped with its embedder (and run) from the start."""
    from sieve.retriever.store import EMBEDDER_KEY, GENERATION_KEY, RUN_KEY, hnsw_configuration

    return client.create_collection(
        name,
        embedding_function=None,
        configuration={"hnsw": hnsw_configuration(config)},
        metadata={
            GENERATION_KEY: uuid.uuid4().hex,
            EMBEDDER_KEY: embedder.identity.to_json(),
            **({RUN_KEY: run} if run else {}),
        },
    )


def _copy(index: CorpusIndex, target: Any, embedder: Embedder, total: int, page: int, progress: bool) -> None:
    """Every record of ``index`` into ``target``, page by page, with ``embedder``'s vectors; checks the count."""
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=f"Re-embedding {index.name}", unit="chunk", disable=not progress)
    rows: list[tuple[str, str | None, dict[str, Any]]] = []
    for row in index.store.scan(include_text=True):
        rows.append(row)
        if len(rows) >= page:
            _write(target, rows, embedder)
            bar.update(len(rows))
            rows = []
    if rows:
        _write(target, rows, embedder)
        bar.update(len(rows))
    bar.close()
    if target.count() != total:
        raise InvalidInput(
            f"Expected {total} chunks in the new version of {index.name!r}, got {target.count()} "
            "(the collection changed during the copy?)"
        )


def _write(target: Any, rows: list[tuple[str, str | None, dict[str, Any]]], embedder: Embedder) -> None:
    """Embed one page of records as indexing does (title and heading path on the first line) and add them."""
    import numpy as np

    from sieve.retriever.store import chunk_from_record
    from sieve.retriever.types import passage_text

    chunks = [chunk_from_record(cid, text, meta) for cid, text, meta in rows]
    vectors = embedder.embed_passages([passage_text(c.title, c.text, c.heading_path) for c in chunks])
    target.add(
        ids=[r[0] for r in rows],
        embeddings=np.ascontiguousarray(vectors, dtype=np.float32),
        documents=[r[1] or "" for r in rows],
        metadatas=[r[2] for r in rows],
    )


def activate_version(config: RetrieverConfig, name: str, version: int, client: StoreHandle | None = None) -> str:
    """Point ``name`` at its version number ``version`` (an existing one); returns its Chroma collection."""
    from sieve.core.errors import UnknownCollection
    from sieve.retriever.handle import open_store, store_write_lock
    from sieve.retriever.versions import point, version_name, versions

    handle = client or open_store(config)
    with store_write_lock(config).hold(), handle.session() as chroma:
        existing = versions(chroma, name)
        target = version_name(name, version)
        if target not in existing:
            raise UnknownCollection(f"Expected a version of {name!r} among {existing}, got {target!r}")
        handle.mark_written()
        point(chroma, name, target)
        handle.mark_written()
    return target


def drop_version(config: RetrieverConfig, name: str, version: str, client: StoreHandle | None = None) -> None:
    """Delete ``version`` of ``name`` (never the active one: that is :func:`~sieve.retriever.index.delete_collection`)."""
    from sieve.retriever.handle import open_store, store_write_lock
    from sieve.retriever.index import delete_version
    from sieve.retriever.versions import active_version, split_version

    handle = client or open_store(config)
    with store_write_lock(config).hold(), handle.session() as chroma:
        if split_version(version)[0] != name or active_version(chroma, name) == version:
            raise InvalidInput(f"Expected an inactive version of {name!r}, got {version!r}")
        handle.mark_written()
        delete_version(chroma, config, version)
        handle.mark_written()


def drop_old_versions(config: RetrieverConfig, name: str, client: StoreHandle | None = None) -> list[str]:
    """Delete every version of ``name`` but the active one; returns the Chroma collections deleted."""
    from sieve.retriever.handle import open_store, store_write_lock
    from sieve.retriever.index import delete_version
    from sieve.retriever.store import ChromaStore
    from sieve.retriever.versions import active_version, versions

    handle = client or open_store(config)
    ChromaStore.open(handle, name, create=False)  # UnknownCollection, with the valid names
    dropped: list[str] = []
    with store_write_lock(config).hold(), handle.session() as chroma:
        active = active_version(chroma, name)
        handle.mark_written()
        for physical in versions(chroma, name):
            if physical != active:
                delete_version(chroma, config, physical)
                dropped.append(physical)
        handle.mark_written()
    return dropped


__all__ = ["SwitchReport", "activate_version", "drop_old_versions", "drop_version", "reembed_version"]
