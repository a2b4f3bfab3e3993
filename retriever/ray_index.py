"""``sieve index PATH --ray [ADDRESS]``: the indexing pipeline on Ray Data, beyond one process or machine.

read (here) -> chunk (actor pool, CPUs) -> embed (actor pool, one actor per GPU or per share of
CPUs) -> batched writes (here, to the store ``config`` names: a Chroma server when many machines
should read it) -> BM25 built once from the written chunks.

Why read and write where ``sieve index`` runs, and only chunk and embed on the cluster:

- Reading is Sieve's own :class:`~sieve.retriever.ingest.DocumentStream` (its ids, duplicate and
  skip rules, its report), so a Ray run indexes exactly what a single-process run indexes, and
  worker machines need no access to PATH: documents travel through Ray's object store.
- Writes keep the single-process guarantees: one writer under the store's write lock, whole
  documents per batch, the generation bumped before and after (a killed run resumes), the
  embedder stamp. Ray Data streams, so batches are written while later ones are still embedding.
- Embedding is ~100x the cost of everything else (issue 26: 0.09 CPU-s per chunk), so that is what
  the cluster must spread.

The documents to (re)index are held in the driver's memory and the object store (about the
corpus's size on disk); unchanged documents are skipped before anything is sent.

Ray is an optional dependency (``pip install -e .[ray]``), imported only when a run starts.
"""

from __future__ import annotations

import logging
import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from sieve.core.errors import InvalidInput, StoreLocked
from sieve.retriever.embeddings import EmbedderIdentity
from sieve.retriever.ingest import IngestReport, content_hash, iter_documents, review_against_store
from sieve.retriever.ray_stages import ChunkStage, EmbedStage, documents_batch, embedded_chunks
from sieve.retriever.turns import with_turn_context
from sieve.retriever.chunking import validate_doc_id
from sieve.retriever.write_run import IndexReport

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from pathlib import Path

    from sieve.retriever.index import CorpusIndex
    from sieve.retriever.ray_stages import EmbeddedChunk
    from sieve.retriever.types import Chunk, Document
    from sieve.retriever.write_run import WriteRun

logger = logging.getLogger(__name__)

LOCAL = "local"
"""``--ray`` without an address: start a Ray cluster on this machine for the run, and stop it after."""

INSTALL_HINT = 'Ray is not installed; install the extra: pip install -e ".[ray]" (or pip install "ray[data]==2.60.0")'


@dataclass(frozen=True)
class RayOptions:
    """How ``sieve index --ray`` uses the cluster.

    Args:
        address: ``local`` (a cluster started for this run), ``auto`` (the cluster this machine
            belongs to), ``HOST:PORT`` of a head node, or ``ray://HOST:10001`` (Ray Client).
        embed_actors: embedding actors; default one per GPU when the cluster has GPUs and the
            device allows CUDA, else one per ``embed_cpus`` CPUs left after the chunking actors.
        embed_cpus: CPUs (and threads) per CPU embedding actor, at least; by default the CPUs the
            chunking actors leave are shared out among the embedding actors.
        chunk_actors: chunking actors (each loads only the tokenizer).
        chunk_cpus: CPUs reserved per chunking actor (chunking costs ~1% of embedding).
        docs_per_block: documents per block sent to the chunking actors.
        embed_batch: chunks per call of an embedding actor.
        num_cpus: CPUs of a ``local`` cluster (default: every core this process may use).
        object_store_mib: object store of a ``local`` cluster (small: blocks are streamed).
    """

    address: str = LOCAL
    embed_actors: int | None = None
    embed_cpus: int = 1
    chunk_actors: int = 1
    chunk_cpus: float = 0.5
    docs_per_block: int = 64
    embed_batch: int = 256
    num_cpus: int | None = None
    object_store_mib: int = 256
    extra_init: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.address:
            raise InvalidInput(
                f"Expected a Ray address (local | auto | HOST:PORT | ray://HOST:PORT), got {self.address!r}"
            )
        for name in ("embed_cpus", "chunk_actors", "docs_per_block", "embed_batch", "object_store_mib"):
            if getattr(self, name) < 1:
                raise InvalidInput(f"Expected {name} >= 1, got {getattr(self, name)}")
        if self.embed_actors is not None and self.embed_actors < 1:
            raise InvalidInput(f"Expected embed_actors >= 1 (or None for the default), got {self.embed_actors}")
        if not 0 < self.chunk_cpus:
            raise InvalidInput(f"Expected chunk_cpus > 0, got {self.chunk_cpus}")


def import_ray() -> Any:
    """The ``ray`` module with Ray Data, or :class:`ImportError` with the install command."""
    try:
        import ray
        import ray.data  # noqa: F401  (Ray Data needs pyarrow and pandas: the [data] extra)
    except ImportError as exc:
        raise ImportError(f"{INSTALL_HINT} ({exc})") from exc
    return ray


@contextmanager
def ray_cluster(options: RayOptions) -> Iterator[Any]:
    """Ray, initialised for ``options.address``; a ``local`` cluster started here is shut down on exit."""
    ray = import_ray()
    if ray.is_initialized():  # a caller (a notebook, a test) already chose the cluster
        yield ray
        return
    if options.address == LOCAL:
        from sieve.retriever.embeddings import cpu_threads

        ray.init(
            num_cpus=options.num_cpus or cpu_threads(),
            object_store_memory=options.object_store_mib << 20,
            include_dashboard=False,
            log_to_driver=False,
            **options.extra_init,
        )
    else:
        ray.init(address=options.address, log_to_driver=False, **options.extra_init)
    try:
        yield ray
    finally:
        ray.shutdown()


@dataclass(frozen=True)
class ActorPlan:
    """How many actors of each stage, and what each holds of the cluster."""

    chunk_actors: int
    chunk_cpus: float
    embed_actors: int
    embed_cpus: float
    embed_gpus: float

    def describe(self) -> str:
        unit = f"{self.embed_gpus:g} GPU" if self.embed_gpus else f"{self.embed_cpus:g} CPU"
        return (
            f"{self.chunk_actors} chunking actor(s) x {self.chunk_cpus:g} CPU, "
            f"{self.embed_actors} embedding actor(s) x {unit}"
        )


def plan_actors(options: RayOptions, device: str, cpus: float, gpus: float) -> ActorPlan:
    """The actor pools for a cluster of ``cpus`` CPUs and ``gpus`` GPUs, embedding on ``device``.

    Raises:
        InvalidInput: ``device`` is ``cuda`` and the cluster has no GPU.

    Example:
        >>> plan_actors(RayOptions(), "auto", cpus=2, gpus=0).describe()
        '1 chunking actor(s) x 0.5 CPU, 1 embedding actor(s) x 1.5 CPU'
        >>> plan_actors(RayOptions(), "auto", cpus=32, gpus=4).embed_actors
        4
    """
    use_gpu = gpus >= 1 and device in ("auto", "cuda")
    if device == "cuda" and not use_gpu:
        raise InvalidInput(
            f"Expected a GPU in the Ray cluster for --device cuda, got {gpus:g} GPUs; valid: "
            "--device cpu, or --device auto to embed on GPUs only where the cluster has them"
        )
    if use_gpu:
        actors = options.embed_actors or int(gpus)
        return ActorPlan(options.chunk_actors, options.chunk_cpus, actors, 1, 1)
    left = cpus - options.chunk_actors * options.chunk_cpus
    if options.embed_actors:
        return ActorPlan(options.chunk_actors, options.chunk_cpus, options.embed_actors, options.embed_cpus, 0)
    # The CPUs the chunkers leave are shared out whole: 2 CPUs give one actor of 1.5 (2 threads), not
    # one of 1 thread beside half a CPU nobody uses (chunking is ~1% of the work).
    actors = max(1, int(left // options.embed_cpus))
    return ActorPlan(options.chunk_actors, options.chunk_cpus, actors, max(left / actors, 1.0), 0)


@dataclass
class _Assembler:
    """Chunks arrive per batch, in any order: a document is written once all its chunks are back."""

    partial: dict[str, list[EmbeddedChunk]] = field(default_factory=dict)

    def add(self, rows: Iterable[EmbeddedChunk]) -> list[list[EmbeddedChunk]]:
        done = []
        for row in rows:
            got = self.partial.setdefault(row.chunk.doc_id, [])
            got.append(row)
            if len(got) == row.n_chunks:
                done.append(sorted(self.partial.pop(row.chunk.doc_id), key=lambda r: r.chunk.position))
        return done


def _pending(
    index: CorpusIndex, path: str | Path, report: IngestReport, ix: IndexReport, states: dict
) -> dict[str, tuple[Document, str, str]]:
    """The documents to (re)write: doc_id -> (document, content hash, kind: added | updated | resumed)."""
    todo: dict[str, tuple[Document, str, str]] = {}
    stream = iter_documents(path, report, gitignore=index.config.gitignore)
    ix.gone = review_against_store(stream, states, index.name)
    for doc in with_turn_context(stream):  # as the single-process path reads a chat log
        validate_doc_id(doc.doc_id)
        h = content_hash(doc, index.config.chunking_key)
        state = states.get(doc.doc_id)
        if state is not None and state.doc_hash == h and state.complete:
            ix.unchanged += 1
            continue
        kind = "added" if state is None else "resumed" if state.doc_hash == h else "updated"
        todo[doc.doc_id] = (doc, h, kind)
    return todo


def _check_embedder(index: CorpusIndex) -> None:
    recorded = index.refresh().embedder
    if recorded is not None:
        index.embedder.identity.check_compatible(EmbedderIdentity.from_json(recorded), index.name)


def _dataset(
    ray: Any, todo: dict[str, tuple[Document, str, str]], index: CorpusIndex, options: RayOptions, plan: ActorPlan
) -> Any:
    from sieve.retriever.config import default_embedder_path

    docs = [d for d, _, _ in todo.values()]
    hashes = [h for _, h, _ in todo.values()]
    blocks = max(1, math.ceil(len(docs) / options.docs_per_block))
    ds = ray.data.from_items(
        [{k: v[i] for k, v in documents_batch(docs, hashes).items()} for i in range(len(docs))],
        override_num_blocks=blocks,
    )
    init = {"config": index.config, "default_embedder": default_embedder_path()}
    ds = ds.map_batches(
        ChunkStage,
        fn_constructor_kwargs=init,
        batch_size=options.docs_per_block,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=plan.chunk_actors),
        num_cpus=plan.chunk_cpus,
    )
    threads = None if plan.embed_gpus else max(1, math.ceil(plan.embed_cpus))
    return ds.map_batches(
        EmbedStage,
        fn_constructor_kwargs={**init, "threads": threads},
        batch_size=options.embed_batch,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=plan.embed_actors),
        num_cpus=plan.embed_cpus,
        num_gpus=plan.embed_gpus,
    )


def _write(index: CorpusIndex, run: WriteRun, todo: dict, docs: list[list[EmbeddedChunk]], states: dict) -> int:
    batch: list[tuple[Document, str, list[Chunk]]] = [
        (todo[rows[0].chunk.doc_id][0], rows[0].doc_hash, [r.chunk for r in rows]) for rows in docs
    ]
    vectors = np.stack([r.vector for rows in docs for r in rows]).astype(np.float32, copy=False)
    return index.writer.write(run, batch, states, vectors)


def index_path_ray(
    index: CorpusIndex,
    path: str | Path,
    options: RayOptions | None = None,
    *,
    progress: bool = True,
    delete_missing: bool = False,
) -> IndexReport:
    """Index a file or folder on Ray (see the module docstring): the same chunks, ids and BM25 as
    :meth:`~sieve.retriever.writer.IndexWriter.index_path`, and vectors of the same embedder.

    Raises:
        ImportError: Ray is not installed (the message says how to install it).
        NotFound, InvalidInput: as :meth:`~sieve.retriever.writer.IndexWriter.index_path`.
    """
    options = options or RayOptions()
    report = IngestReport()
    created = index.store.created
    try:
        import_ray()  # before the lock and the read: a missing extra fails fast (and leaves no new collection)
        result = _run(index, path, options, report, progress)
    except KeyboardInterrupt:
        # Ctrl-C keeps what was written (the next run resumes it), but not an empty new collection.
        if created and index.count() == 0:
            index.writer.drop()
        raise
    except BaseException as exc:
        if created:
            index.writer.drop(lock_timeout_s=0 if isinstance(exc, StoreLocked) else None)
        raise
    result.ingest = report
    if report.documents == 0 or (created and result.chunks_written == 0):
        from sieve.retriever.write_run import nothing_to_index

        if created:
            index.writer.drop()
        raise InvalidInput(nothing_to_index(path, report))
    index.store.created = False
    if delete_missing and result.gone:
        result.deleted = index.writer.delete_documents(result.gone)
    return result


def _run(
    index: CorpusIndex, path: str | Path, options: RayOptions, report: IngestReport, progress: bool
) -> IndexReport:
    t0 = time.perf_counter()
    ix = IndexReport()
    with index.write_lock.hold():
        _check_embedder(index)  # before any work: a mismatching run writes nothing
        states = index.doc_states()
        todo = _pending(index, path, report, ix, states)
        if todo:
            # One write run: the generation bumped before the first write and after the last, and BM25
            # published once, from the written chunks (as a single-process run does).
            with ray_cluster(options) as ray, index.writer.run() as run:
                ray.data.DataContext.get_current().enable_progress_bars = progress  # Ray Data's bars, on stderr
                res = ray.cluster_resources()
                plan = plan_actors(options, index.config.device, res.get("CPU", 0), res.get("GPU", 0))
                logger.info(
                    "Ray cluster of %g CPUs, %g GPUs: %s", res.get("CPU", 0), res.get("GPU", 0), plan.describe()
                )
                written: set[str] = set()
                ix.chunks_written = _stream(
                    index, run, _dataset(ray, todo, index, options, plan), todo, states, written
                )
            _count_kinds(todo, written, ix, report)
    ix.seconds = time.perf_counter() - t0
    return ix


def _stream(index: CorpusIndex, run: WriteRun, ds: Any, todo: dict, states: dict, written_ids: set[str]) -> int:
    """Write documents as their chunks come back, in batches of ``index_batch_size`` chunks; returns chunks written."""
    assembler = _Assembler()
    ready: list[list[EmbeddedChunk]] = []
    written = 0
    for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
        done = assembler.add(embedded_chunks(batch))
        written_ids.update(rows[0].chunk.doc_id for rows in done)
        ready.extend(done)
        if sum(len(rows) for rows in ready) >= index.config.index_batch_size:
            written += _write(index, run, todo, ready, states)
            ready = []
    if ready:
        written += _write(index, run, todo, ready, states)
    if assembler.partial:  # a lost row would leave a document incomplete: say which, never hide it
        raise RuntimeError(
            f"Expected every chunk back from the Ray pipeline, got documents with chunks missing: "
            f"{sorted(assembler.partial)[:5]}"
        )
    return written


def _count_kinds(
    todo: dict[str, tuple[Document, str, str]], written: set[str], ix: IndexReport, report: IngestReport
) -> None:
    """added/updated/resumed as the single-process path counts them; a document that chunked to nothing is a skip."""
    for doc_id, (_, _, kind) in todo.items():
        if doc_id in written:
            setattr(ix, kind, getattr(ix, kind) + 1)
        else:
            report.skip(doc_id, "no tokens after chunking")


__all__ = [
    "INSTALL_HINT",
    "LOCAL",
    "ActorPlan",
    "RayOptions",
    "import_ray",
    "index_path_ray",
    "plan_actors",
    "ray_cluster",
]
