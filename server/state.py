"""What one running app holds: settings, the shared embedder, open indexes, metrics, policies.

One ``AppState`` per ``create_app()`` call, kept on ``app.state.sieve``; there are no module
globals, so two apps in one process (tests) never share an index or a metrics registry. All
methods here block (model loading, Chroma) and are called from the thread pool.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from sieve.server.admission import Gate
from sieve.server.metrics import Metrics

if TYPE_CHECKING:
    from sieve.agent.config import AgentConfig
    from sieve.retriever import CorpusIndex
    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.embeddings import Embedder
    from sieve.retriever.handle import StoreHandle
    from sieve.settings import Settings

logger = logging.getLogger(__name__)


class AppState:
    """Lazily loaded, thread-safe caches of the embedder, one ``CorpusIndex`` per collection and policies.

    Args:
        settings: the server settings.
        embedder: an already-loaded embedder to share (tests pass theirs); loaded on first use otherwise.
    """

    def __init__(self, settings: Settings, embedder: Embedder | None = None) -> None:
        self.settings = settings
        # An HTTP write waits for another writer (e.g. `sieve index`) at most half its time limit,
        # so the caller gets 503 store_locked naming the holder, never a 504 that writes later.
        self.retriever_config: RetrieverConfig = dataclasses.replace(
            settings.retriever_config(),
            write_lock_timeout_s=min(settings.write_lock_timeout_s, settings.request_timeout_s / 2),
        )
        self.metrics = Metrics()
        # Admission: agent episodes are costly (seconds of CPU or a GPU model); plain retrieval
        # is cheap and gets a larger bound of its own, so a queue of episodes never starves it.
        self.episodes = Gate(
            "episodes",
            limit=settings.max_episodes,
            queue=settings.episode_queue,
            wait_s=settings.queue_wait_s,
            metrics=self.metrics,
        )
        self.retrievals = Gate(
            "retrievals",
            limit=settings.max_retrievals,
            queue=settings.retrieval_queue,
            wait_s=settings.queue_wait_s,
            metrics=self.metrics,
        )
        # Document writes take turns on the store's lock anyway: a few run (or wait for the lock) at
        # once, a bounded queue waits without a thread, and reads never wait behind them.
        self.writes = Gate(
            "writes",
            limit=settings.max_writes,
            queue=settings.write_queue,
            wait_s=settings.queue_wait_s,
            metrics=self.metrics,
        )
        self._embedder = embedder
        self._store: StoreHandle | None = None
        self._indexes: dict[str, CorpusIndex] = {}
        self._verified_at: dict[str, float] = {}
        self._policies: dict[str, Any] = {}
        self._agent_defaults: AgentConfig | None = None
        self._lock = threading.RLock()

    # -- shared resources --------------------------------------------------------------------------
    @property
    def embedder_loaded(self) -> bool:
        return self._embedder is not None

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                from sieve.retriever.embeddings import Embedder

                self._embedder = Embedder.from_config(self.retriever_config)
            return self._embedder

    @property
    def store(self) -> StoreHandle:
        """The process's handle on the store: its Chroma client follows what other processes write."""
        with self._lock:
            if self._store is None:
                from sieve.retriever.handle import open_store

                self._store = open_store(self.retriever_config)
            return self._store

    @property
    def client(self) -> Any:
        """The store's current Chroma client, for immediate use (a write by another process replaces it)."""
        return self.store.client

    def collection_name(self, name: str | None) -> str:
        return name or self.settings.collection

    def index(self, name: str | None, *, create: bool = False) -> CorpusIndex:
        """The cached index of collection ``name``; ``UnknownCollection`` (404) if missing and not ``create``."""
        name = self.collection_name(name)
        with self._lock:
            index = self._indexes.get(name)
            if index is not None and self._still_current(name, index):
                return index
            self._indexes.pop(name, None)
            from sieve.retriever import CorpusIndex

            index = CorpusIndex.open(
                self.retriever_config, name, create=create, embedder=self.embedder, client=self.store
            )
            self._indexes[name] = index
            self._verified_at[name] = time.monotonic()
            return index

    def _still_current(self, name: str, index: CorpusIndex) -> bool:
        # A collection deleted (or deleted and re-created) behind the server's back, e.g. by
        # `sieve collections --delete`, must not be served from a stale cache entry; compare the
        # Chroma collection id at most once a second, off the hot path.
        now = time.monotonic()
        if now - self._verified_at.get(name, 0.0) < 1.0:
            return True
        self._verified_at[name] = now
        return index.is_current()

    def invalidate(self) -> None:
        """Make every cached index re-check its collection on next use (no I/O here: safe on the event loop)."""
        with self._lock:
            self._verified_at.clear()

    @property
    def loaded_collections(self) -> list[str]:
        with self._lock:
            return sorted(self._indexes)

    def collections(self, *, include_eval: bool = False) -> dict[str, int]:
        from sieve.retriever.store import list_collections

        return list_collections(self.retriever_config, client=self.store, include_eval=include_eval)

    def delete_collection(self, name: str) -> None:
        from sieve.retriever.index import delete_collection

        with self._lock:
            self._indexes.pop(name, None)
            self._verified_at.pop(name, None)
            delete_collection(self.retriever_config, name, client=self.store)

    @property
    def agent_defaults(self) -> AgentConfig:
        """The ``AgentConfig`` of a request that asks for nothing (the settings' defaults), resolved once:
        what the app's policies are built from (:meth:`policy`)."""
        with self._lock:
            if self._agent_defaults is None:
                from sieve.server.limits import episode_config

                self._agent_defaults = episode_config(self.settings, self.settings.policy)
            return self._agent_defaults

    def policy(self, name: str, config: Any) -> Any:
        """A policy by name and checkpoint, built once per app from ``config`` (an ``AgentConfig``):
        a local model must not load per request, and collections that adopted different runs each
        get their own learned policy."""
        key = f"{name}|{config.policy_path or ''}"
        with self._lock:
            policy = self._policies.get(key)
            if policy is None:
                from sieve.agent import make_policy

                policy = self._policies[key] = make_policy(name, config)
            return policy

    def startup(self) -> None:
        """Load the embedder and the ``preload`` collections (called from the lifespan)."""
        _ = self.embedder
        for name in self.settings.preload:
            self.index(name)
            logger.info("Preloaded collection %s", name)


__all__ = ["AppState"]
