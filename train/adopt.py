"""``sieve adopt``: make a retrained run the one a collection serves with, no flag needed afterwards.

A run that adapted the embedder needs the collection's vectors re-embedded with it: that goes into
a new version of the collection, switched to in one step (:mod:`sieve.retriever.reembed`), with the
run recorded on the new version before the switch. A run that kept the shipped embedder is just
recorded. Commands that name no policy path then use the recorded run's policy (and its ranker),
and the recorded embedder folder (:meth:`~sieve.retriever.embedder_check.EmbedderCheck.require`).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sieve.core.runs import RunArtifact

if TYPE_CHECKING:
    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.reembed import SwitchReport

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AdoptReport:
    """What :func:`adopt_run` did to ``collection``."""

    collection: str
    run: str
    switch: SwitchReport | None  # the re-embedding into a new version, when the run adapted the embedder
    previous_run: str | None  # the run the collection served with before, if any

    def describe(self) -> str:
        lines = [f"Collection {self.collection!r} now serves with {self.run}."]
        if self.switch is not None:
            lines.append(
                f"Switched to {self.switch.new}, its {self.switch.chunks} chunks embedded with the run's embedder "
                f"(in {self.switch.seconds:.0f} s); the previous version {self.switch.old} stays until "
                f"`sieve collections --drop-old {self.collection}`."
            )
        return "\n".join(lines)


def adopt_run(
    config: RetrieverConfig,
    collection: str,
    run_path: str | Path,
    *,
    built: SwitchReport | None = None,
    progress: bool = True,
) -> AdoptReport:
    """Record ``run_path`` on ``collection``, re-embedding it into a new version when the run's embedder differs.

    ``built``: a version already embedded with the run's embedder and not yet switched to
    (``sieve train all`` trained on it): the run is recorded on it and the name switched, with no
    second re-embedding.

    Raises:
        InvalidInput: not a run folder (or a part it names is missing).
        UnknownCollection: no such collection.
    """
    from sieve.retriever import CorpusIndex
    from sieve.retriever.embeddings import Embedder
    from sieve.retriever.reembed import reembed_version

    run = RunArtifact.load(run_path)
    index = CorpusIndex.open(config, collection)
    previous = index.recorded_run
    switch = None
    if built is not None:
        from sieve.retriever.reembed import activate_version
        from sieve.retriever.store import ChromaStore
        from sieve.retriever.versions import split_version

        with index.write_lock.hold():
            ChromaStore(index.store.handle, built.new, base=collection).record_run(str(run.folder))
            activate_version(config, collection, split_version(built.new)[1], client=index.store.handle)
        switch = dataclasses.replace(built, switched=True)
    elif run.embedder is not None and not index.embedded_with(run.embedder):
        embedder = Embedder.from_config(dataclasses.replace(config, embedder_path=str(run.embedder)))
        switch = reembed_version(index, embedder, run=str(run.folder), progress=progress)
    else:
        with index.write_lock.hold():
            index.store.record_run(str(run.folder))
    logger.info("Collection %r adopted %s", collection, run.describe())
    return AdoptReport(collection, str(run.folder), switch, previous)


__all__ = ["AdoptReport", "adopt_run"]
