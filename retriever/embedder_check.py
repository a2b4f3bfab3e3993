"""Whether an index's embedder may read and write its collection's vectors.

A collection records the identity of the embedder that wrote its vectors (its *stamp*,
:class:`~sieve.retriever.embeddings.EmbedderIdentity` as JSON). Vectors of another model, or of
the same model at another precision, are not comparable, so before vectors are read or written the
index's embedder is checked against the stamp, once per stamp: a BM25 query never computes our
identity. A collection indexed with another model than the shipped one (``sieve train embedder``'s,
a user's own) is read with that model when the caller chose none (:meth:`EmbedderCheck.require`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from sieve.core.errors import EmbedderMismatch
from sieve.retriever.embeddings import EmbedderIdentity

if TYPE_CHECKING:
    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.embeddings import Embedder

logger = logging.getLogger(__name__)


class EmbedderCheck:
    """The check of one collection's stamp against the embedder its index reads and writes with.

    Args:
        config: the retriever's settings (where models are cached).
        collection: the collection's name, for messages.
    """

    def __init__(self, config: RetrieverConfig, collection: str) -> None:
        self.config = config
        self.collection = collection
        self._recorded: str | None = None  # the collection's stamp, as last read
        self._checked: str | None = None  # the stamp _error was computed for
        self._error: EmbedderMismatch | None = None

    def note(self, recorded: str | None) -> None:
        """Remember the stamp just read from the collection; a new one is checked at the next :meth:`require`."""
        if recorded is not None and recorded != self._recorded:
            self._recorded = recorded
            self._checked = None
            self._error = None

    def adopt(self, stamp: str) -> None:
        """The collection was just stamped with ``stamp``, our own embedder's identity: nothing to check."""
        self._recorded = self._checked = stamp

    def require(self, embedder: Embedder) -> Embedder:
        """The embedder to read and write vectors with: ``embedder``, or the recorded model it gives way to.

        Raises:
            EmbedderMismatch: the collection's vectors were written by another embedder (or precision).
        """
        recorded = self._recorded
        if recorded is not None and recorded != self._checked:
            self._error = None
            stamp = EmbedderIdentity.from_json(recorded)
            try:
                embedder.identity.check_compatible(stamp, self.collection)
            except EmbedderMismatch as exc:
                followed = self._recorded_model(stamp, embedder)
                if followed is None:
                    self._error = exc
                else:
                    embedder = followed
            self._checked = recorded
        if self._error is not None:
            raise self._error
        return embedder

    def _recorded_model(self, stamp: EmbedderIdentity, ours: Embedder) -> Embedder | None:
        """The model the collection was indexed with, when the caller named none; else None.

        A collection indexed with another model than the shipped one records that model's folder; a
        command that did not choose an embedder (the configured one is the default) then uses the
        recorded model, if the folder still holds the same weights. An explicit other model, or
        another precision (int8, bf16), is never overridden: it stays a mismatch."""
        from sieve.retriever.config import default_embedder_path
        from sieve.retriever.embeddings import Embedder, cached_model_fingerprint

        if (
            not stamp.path
            or Path(ours.path).resolve() != Path(default_embedder_path()).resolve()
            or stamp.fingerprint == ours.identity.fingerprint  # the same model: a precision mismatch
            or stamp.dtype != ours.dtype
        ):
            return None
        folder = Path(stamp.path)
        cache = self.config.models_dir
        if not folder.is_dir() or cached_model_fingerprint(folder, cache) != stamp.fingerprint:
            return None
        followed = Embedder.load(
            str(folder),
            backend=ours.backend,
            dtype=ours.dtype,
            batch_size=ours.batch_size,
            cache_dir=ours.cache_dir,
            device=ours.device,
            lazy=True,
        )
        logger.info("Collection %r: using the embedder it was indexed with, %s", self.collection, folder)
        return followed


__all__ = ["EmbedderCheck"]
