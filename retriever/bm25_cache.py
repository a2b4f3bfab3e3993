"""The BM25 index of one collection: a cache of Chroma, in segments tagged with the generation they match.

Chroma is the source of truth. The BM25 segments (:mod:`~sieve.retriever.bm25_segments`) are saved
beside the Chroma data under a manifest tagged with the collection's *generation*, a token every
write changes before it touches Chroma and again when it is done; a manifest whose tag differs is
stale and the index is rebuilt from Chroma. Readers ask for :meth:`BM25Cache.current` on every
search; a write run starts from :meth:`BM25Cache.at` (the index exactly at the generation it
found) and ends with :meth:`BM25Cache.publish` (one new segment). A reader never waits for a
writer: while one holds the store it serves the last complete set of segments.
"""

from __future__ import annotations

import logging
import shutil
from threading import RLock
from typing import TYPE_CHECKING

from sieve.retriever.bm25 import BM25Builder, passage_terms
from sieve.retriever.bm25_segments import SegmentedBM25, read_fingerprint, segment_from_builder

if TYPE_CHECKING:
    from pathlib import Path

    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.store_api import Store
    from sieve.retriever.write_run import WriteRun
    from sieve.retriever.writelock import WriteLock

logger = logging.getLogger(__name__)


class BM25Cache:
    """The BM25 segments of ``store``'s collection, held in memory and saved in ``folder``.

    ``lock`` orders this process's threads around the held index (re-entrant: a caller may hold it
    while it asks); the store's ``write_lock`` orders writers across processes.
    """

    def __init__(self, config: RetrieverConfig, store: Store, write_lock: WriteLock, folder: Path) -> None:
        self.config = config
        self.store = store
        self.write_lock = write_lock
        self.folder = folder
        self.lock = RLock()
        self._index: SegmentedBM25 | None = None
        self._generation = ""  # the store generation self._index matches ("" while serving an older one)
        self._saved = ""  # the fingerprint of the manifest self._index was loaded from or saved as

    def current(self, generation: str) -> SegmentedBM25:
        """The index of ``generation`` (the store's current one) or, while another process writes, the
        last complete one; loaded from the saved manifest, or rebuilt from Chroma when that is stale."""
        with self.lock:
            if self._index is not None and generation == self._generation:
                return self._index
            saved = self._load()
            if saved is not None and saved == generation:
                self._generation = generation
                segments = len(self._index.segments)  # type: ignore[union-attr]
                logger.info(
                    "Loaded BM25 for %s (generation %s, %d segments)", self.store.base, generation[:8], segments
                )
                return self._index  # type: ignore[return-value]
            if self._index is not None and self._writer_busy():
                # A run in progress: serve the last complete set of segments, check again next time.
                self._generation = ""
                return self._index
            self._index = None  # let the old index go before the new one is built
            self._index = self._rebuild(generation)
            self._generation = generation
            return self._index

    def at(self, generation: str) -> SegmentedBM25 | None:
        """BM25 exactly at ``generation`` (held, saved, or empty for an empty collection), else None.

        Called by a write run as it starts (lock held): the run appends to it instead of rebuilding.
        """
        with self.lock:
            if self._index is not None and self._generation == generation:
                return self._index
            if self._load() == generation:
                self._generation = generation
                return self._index
        if self.store.count() == 0:
            return SegmentedBM25.from_segments(
                [], k1=self.config.bm25_k1, b=self.config.bm25_b, epsilon=self.config.bm25_epsilon
            )
        return None

    def publish(self, run: WriteRun, generation: str) -> None:
        """Save the run's BM25 (its base plus one segment, replaced rows dead) under ``generation``."""
        if run.base is None:  # stale when the run began (a killed run before it): rebuild from Chroma
            with self.lock:
                self._index = None
                self._index = self._rebuild(generation)
                self._generation = generation
            return
        dead = run.base.rows_of_docs(run.replaced_docs) if run.replaced_docs else []
        if run.replaced_ids:
            dead += run.base.rows_of_ids(run.replaced_ids)
        self.save(run.base.changed(run.added, dead), generation)

    def save(self, index: SegmentedBM25, generation: str) -> None:
        """Save ``index`` as the manifest of ``generation`` and hold it (the caller holds the write lock)."""
        index.save(self.folder, fingerprint=generation)
        with self.lock:
            self._index, self._generation, self._saved = index, generation, generation
        logger.info(
            "Saved BM25 for %s: %d chunks in %d segments (generation %s)",
            self.store.base,
            len(index),
            len(index.segments),
            generation[:8],
        )

    def clear(self) -> None:
        """Forget the held index and delete the saved one (the collection is gone)."""
        shutil.rmtree(self.folder, ignore_errors=True)
        with self.lock:
            self._index = None

    def _load(self) -> str | None:
        """Load the saved manifest into ``self._index`` (reusing held segments); its fingerprint, or None."""
        fingerprint = read_fingerprint(self.folder)
        if fingerprint is None:
            return None
        if self._index is not None and fingerprint == self._saved:
            return fingerprint
        loaded = SegmentedBM25.load(self.folder, reuse=self._index)
        if loaded is None:  # a writer's merge removed a segment between our two reads: read the new manifest
            loaded = SegmentedBM25.load(self.folder, reuse=self._index)
        if loaded is None or (loaded[0].k1, loaded[0].b, loaded[0].epsilon) != (
            self.config.bm25_k1,
            self.config.bm25_b,
            self.config.bm25_epsilon,
        ):
            return None
        self._index, self._saved = loaded
        return self._saved

    def _writer_busy(self) -> bool:
        """Whether another writer (not this thread) holds the store's lock right now."""
        with self.write_lock.try_hold() as held:
            return not held

    def _rebuild(self, generation: str) -> SegmentedBM25:
        # Streamed page by page: only term-frequency arrays accumulate, never the texts or token lists.
        builder = BM25Builder()
        for cid, text, meta in self.store.scan(include_text=True):
            builder.add(
                cid, passage_terms(str(meta.get("title") or ""), text or "", str(meta.get("heading_path") or ""))
            )
        index = SegmentedBM25.from_segments(
            [segment_from_builder(builder, {})],
            k1=self.config.bm25_k1,
            b=self.config.bm25_b,
            epsilon=self.config.bm25_epsilon,
        )
        # A reader must not wait for a writer, nor write the file while one runs: it keeps its
        # rebuilt index in memory and the writer saves the file when it finishes. A write that
        # finished meanwhile (another worker's) has its own, newer file.
        with self.write_lock.try_hold() as held:
            saved = held and self.store.generation == generation
            if saved:
                index.save(self.folder, fingerprint=generation)
            self._saved = generation if saved else ""
        logger.info(
            "Rebuilt BM25 for %s: %d chunks, %d terms%s",
            self.store.base,
            len(index.ids),
            len(index.vocab),
            "" if saved else " (not saved: a writer holds or changed the store)",
        )
        return index


__all__ = ["BM25Cache"]
