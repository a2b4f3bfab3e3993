"""One Chroma collection by name, reached through a client current with the store.

A process's :class:`~sieve.retriever.handle.StoreHandle` replaces its Chroma client when another
process writes the store; a collection object fetched from the old client must not be used after
that (its vector index is the stale one). :class:`CollectionRef` holds the collection object with
the handle *epoch* it was fetched in and fetches it again once the epoch moves, and turns Chroma's
"not found" into :class:`~sieve.core.errors.CollectionGone`. It is the connection part of
:class:`~sieve.retriever.store.ChromaStore`, which holds one.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from sieve.core.errors import CollectionGone

if TYPE_CHECKING:
    from collections.abc import Iterator

    from sieve.retriever.handle import StoreHandle


class CollectionRef:
    """The Chroma collection ``name`` of the store behind ``handle``, for short uses."""

    def __init__(self, handle: StoreHandle, name: str) -> None:
        self.handle = handle
        self.name = name
        self._collection: Any | None = None
        self._epoch = -1  # the handle's epoch _collection was fetched in
        self._max_batch: int | None = None

    @contextlib.contextmanager
    def use(self) -> Iterator[Any]:
        """The collection, through a client current with the store, for one short use.

        Raises:
            CollectionGone: the collection was deleted (by another process or worker) under us.
        """
        with self.handle.session() as client, self.gone_as_ours():
            if self._collection is None or self._epoch != self.handle.epoch:
                self._collection = client.get_collection(self.name, embedding_function=None)
                self._epoch = self.handle.epoch
            yield self._collection

    def fetch(self) -> Any:
        """The collection as Chroma has it now (one round-trip: its metadata fresh), followed if re-created.

        Raises:
            CollectionGone: the collection was deleted under us.
        """
        # A collection deleted under us raises CollectionGone: the server maps it to a 404 and
        # drops its cached index, as for every other call on a vanished collection.
        with self.handle.session() as client, self.gone_as_ours():
            col = client.get_collection(self.name, embedding_function=None)
            if self._epoch == self.handle.epoch:
                self._collection = col  # re-created under the same name: follow it
        return col

    @contextlib.contextmanager
    def gone_as_ours(self) -> Iterator[None]:
        """Chroma's ``NotFoundError`` becomes :class:`CollectionGone`: nothing outside ``retriever/`` knows Chroma."""
        from chromadb.errors import NotFoundError  # loaded: a client exists

        try:
            yield
        except NotFoundError as exc:
            raise CollectionGone(
                f"Expected collection {self.name!r} to exist, got it deleted while in use ({exc})"
            ) from exc

    @property
    def max_batch_size(self) -> int:
        """The most records Chroma takes in one write (its SQLite variable limit; ~5,461 embedded)."""
        if self._max_batch is None:
            with self.handle.session() as client:
                self._max_batch = int(client.get_max_batch_size())
        return self._max_batch


__all__ = ["CollectionRef"]
