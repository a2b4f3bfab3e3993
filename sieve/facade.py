"""``Sieve``: the one object most users need — index a corpus, retrieve, and run the search agent."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sieve.core.defaults import DEFAULT_K, DEFAULT_MODE, DEFAULT_POLICY, MAX_K

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from sieve.agent import AgentConfig, AgentRequest, Trace
    from sieve.retriever import CorpusIndex, Document, Hit, IndexReport
    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.types import SearchMode, Where


class Sieve:
    """A collection plus the agent that searches it.

    What is not passed comes from ``SIEVE_*`` environment variables, read once through
    :func:`sieve.settings.load_settings`, exactly as the ``sieve`` command reads them.

    Args:
        collection: collection name (created on first write; default ``$SIEVE_COLLECTION`` or "default").
        config: retrieval settings (default: from the environment, with ``data_dir`` if given).
        agent_config: agent settings (policy, budget, caps; default: from the environment).
        data_dir: the data folder, when ``config`` is not given (default ``$SIEVE_DATA_DIR``).

    ``k`` (of :meth:`retrieve`, or an override of :meth:`search`) is checked against
    ``$SIEVE_MAX_REQUEST_K`` when the environment is read, else against its default
    (:data:`~sieve.core.defaults.MAX_K`): the cap the server and the ``sieve`` command check.

    Example:
        >>> s = Sieve("docs")  # doctest: +SKIP
        >>> s.index("my_folder/")  # doctest: +SKIP
        >>> trace = s.search("Which ...?")  # doctest: +SKIP
        >>> [e.chunk_id for e in trace.returned]  # doctest: +SKIP
    """

    def __init__(
        self,
        collection: str | None = None,
        *,
        config: RetrieverConfig | None = None,
        agent_config: AgentConfig | None = None,
        data_dir: str | Path | None = None,
    ) -> None:
        max_k = MAX_K
        if collection is None or config is None or agent_config is None:
            from sieve.settings import load_settings

            settings = load_settings(data_dir=Path(data_dir) if data_dir else None)
            collection = collection or settings.collection
            config = config or settings.retriever_config()
            # Converted models live beside this collection's data, wherever that is.
            agent_config = agent_config or settings.agent_config(models_dir=config.models_dir)
            max_k = settings.max_request_k
        self.collection = collection
        self.config = config
        self._agent_config = agent_config
        self._max_k = max_k
        self._index: CorpusIndex | None = None

    @property
    def corpus(self) -> CorpusIndex:
        """The underlying :class:`CorpusIndex` (opened, and created, on first use)."""
        return self._open(create=True)

    def _open(self, *, create: bool) -> CorpusIndex:
        # Reads open with create=False: a misspelt name is UnknownCollection (naming the valid
        # ones), not a new empty collection left behind.
        if self._index is None:
            from sieve.retriever import CorpusIndex

            self._index = CorpusIndex.open(self.config, self.collection, create=create)
        return self._index

    def index(self, path: str | Path, *, progress: bool = True, delete_missing: bool = False) -> IndexReport:
        """Index a file or folder; a run that fails on a new collection removes it again.

        ``report.gone`` lists the documents of this folder's files that it no longer gives (deleted,
        moved out, or left out by a ``.gitignore``);
        ``delete_missing`` removes them."""
        return self.corpus.writer.index_path(path, progress=progress, delete_missing=delete_missing)

    def add_documents(self, docs: Iterable[Document], *, progress: bool = False) -> IndexReport:
        return self.corpus.writer.index_documents(docs, progress=progress)

    def delete_documents(self, doc_ids: Sequence[str]) -> int:
        return self._open(create=False).writer.delete_documents(doc_ids)

    def retrieve(
        self, query: str, k: int = DEFAULT_K, *, mode: SearchMode = DEFAULT_MODE, where: Where | None = None
    ) -> list[Hit]:
        """Plain single-shot retrieval (no agent).

        Raises:
            InvalidInput: ``k`` is past the cap, or ``where`` past :data:`sieve.retriever.filters.FILTER_LIMITS`
                (both checked before the store opens).
        """
        from sieve.retriever.base import validate_k

        validate_k(k, self._max_k)
        if where is not None:
            from sieve.retriever.filters import validate_where

            validate_where(where)
        return self._open(create=False).search(query, k, mode=mode, where=where)

    def search(self, question: str, *, policy: str | None = None, rollouts: int = 1, **overrides: Any) -> Trace:
        """Agentic search with ``policy`` (a name in :data:`sieve.agent.factory.POLICIES`; default: Sieve's
        default, the learned policy); evidence is ``trace.returned``, a ranked list of chunks (``group_by_doc=True``: each
        document's best chunk only).

        ``overrides`` replace fields of the agent config for this call (e.g. ``budget_tokens=4000``, or
        ``policy_path="runs/rl/model"`` for a retrained learned policy).
        """
        from sieve.agent.loop import run_request

        request = self._request(question, policy=policy, rollouts=rollouts, **overrides)
        return run_request(self._open(create=False), request)

    def _request(
        self, question: str, *, policy: str | None = None, rollouts: int = 1, **overrides: Any
    ) -> AgentRequest:
        """The :class:`~sieve.agent.request.AgentRequest` :meth:`search` runs: this object's agent config with
        ``overrides`` (and ``rollouts``) applied, ``k`` checked against the cap.

        Raises:
            InvalidInput: an override that is no agent setting, a setting out of range, or ``k`` past the cap.
        """
        import dataclasses

        from sieve.agent.request import AgentRequest
        from sieve.core.errors import InvalidInput

        base = self._agent_config
        known = {f.name for f in dataclasses.fields(base)}
        if unknown := sorted(set(overrides) - known):
            raise InvalidInput(f"Expected agent settings among {sorted(known)}, got unknown {unknown}")
        # One rollout is one episode, as SearchAgent.run; more are fused by reciprocal rank.
        config = dataclasses.replace(base, **{**overrides, "rollouts": rollouts})
        return AgentRequest(question, policy or DEFAULT_POLICY, config, self.collection, max_k=self._max_k)


__all__ = ["Sieve"]
