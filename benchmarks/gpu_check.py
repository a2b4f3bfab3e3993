"""A GPU check of ``sieve index --device cuda``, prepared to run in under 5 minutes on a machine with a GPU.

Here (CPU only), once: a float16 copy of the bundled MiniLM (43 MiB: the 90 MB float32 weights
do not fit a 64 MiB upload), into a folder you name::

    python -m sieve.benchmarks.gpu_check prepare --out gpu-model

There, in the repository, with ``../shared/eval/hotpotqa`` beside it::

    python -m sieve.benchmarks.gpu_check run --embedder gpu-model --device cuda --sizes hotpotqa,100000

First, when the model folder holds the prepare step's reference vectors, one line compares this
device's vectors with the original float32 model's on the CPU (500 HotpotQA passages)::

    {"check": "vs_cpu_float32", "device": "cuda", "passages": 500, "min_cosine": ..., "mean_cosine": ...}

For each corpus, ``sieve index`` runs in a child process and is timed by the wall clock (process
start, model load, read, chunk, embed, write, BM25: the end-to-end figure a user sees); then this
process opens the collection on the same device and times hybrid queries (query embedding,
Chroma, BM25, fusion). One JSON object per corpus on stdout, one per line::

    {"corpus": "hotpotqa", "device": "cuda", "docs": 4858, "chunks": 5012, "index_wall_s": ...,
     "chunks_per_s": ..., "query_p50_ms": ..., "query_p95_ms": ..., "timed_out": false}

Sizes: ``hotpotqa`` (the whole corpus), ``hotpotqa:N`` (its first N passages), an integer N
(N synthetic passages, Zipf pseudo-words as in ``sieve.benchmarks.scale``, ~1-3 chunks each), ``small``
(``hotpotqa:200,300``: the CPU dry run the tests use). ``--budget-s`` bounds the whole run: an
index run still going when it is spent is stopped and reported with ``timed_out`` and the chunks
it had written by then (the figure is still a rate).

``llm``: the gpt-oss check (vLLM with gpt-oss's tool parser, 50 held-apart multi-hop questions through
the ``openai`` and ``learned`` policies, then an SFT + GRPO smoke); what it runs and prints is in
:mod:`sieve.benchmarks.gpu_check_llm`::

    python -m sieve.benchmarks.gpu_check llm --model /path/to/gpt-oss-20b
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sieve.benchmarks import gpu_check_llm
from sieve.core.runtime import prepare_runtime

if TYPE_CHECKING:
    from collections.abc import Sequence

logger = logging.getLogger("gpu_check")

ROOT = Path(__file__).resolve().parents[1]
HOTPOTQA = ROOT.parent / "shared" / "eval" / "hotpotqa"
SMALL = "hotpotqa:200,300"
UPLOAD_LIMIT_MIB = 64
REFERENCE = "sieve_reference.npz"
REFERENCE_PASSAGES = 500


@dataclass(frozen=True)
class Corpus:
    """One corpus to index: a name for the report, a JSONL file, and queries to time."""

    name: str
    path: Path
    docs: int
    queries: list[str]


@dataclass(frozen=True)
class CheckRow:
    """What one corpus measured (the JSON line printed)."""

    corpus: str
    device: str | None
    docs: int
    chunks: int
    index_wall_s: float
    chunks_per_s: float
    query_p50_ms: float | None
    query_p95_ms: float | None
    timed_out: bool


# -- prepare (CPU) -------------------------------------------------------------------------------
def reference_texts(hotpotqa: Path, n: int = REFERENCE_PASSAGES) -> list[str]:
    """The first ``n`` HotpotQA passages as the indexer embeds them (title and text)."""
    from sieve.retriever.types import passage_text

    with (hotpotqa / "corpus.jsonl").open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line, _ in zip(fh, range(n))]
    return [passage_text(str(r.get("title") or ""), r["text"]) for r in rows]


def prepare_fp16(
    out: Path, source: Path | None = None, hotpotqa: Path = HOTPOTQA, reference_passages: int = REFERENCE_PASSAGES
) -> int:
    """Write a float16 copy of the embedder ``source`` (default: the bundled MiniLM) to ``out``; returns its bytes.

    Beside the weights goes ``sieve_reference.npz``: ``reference_passages`` HotpotQA passages and
    their vectors from the original model in float32 on this CPU, which the GPU run compares its
    float16 vectors with (:func:`compare_reference`).

    The copy is a sentence-transformers folder like the original (tokenizer, pooling, normalize),
    with float16 safetensors. Loaded on a GPU it runs in float16 as the original would there
    (``torch_weights_dtype``); loaded on a CPU it is cast back to float32.
    """
    prepare_runtime()
    from sentence_transformers import SentenceTransformer

    from sieve.retriever.config import default_embedder_path

    model = SentenceTransformer(str(source or default_embedder_path()), device="cpu", local_files_only=True)
    texts = reference_texts(hotpotqa, reference_passages)
    reference = model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    model.half()
    out.mkdir(parents=True, exist_ok=True)
    model.save(str(out), safe_serialization=True)
    # What the original float32 model gives on the CPU, for the GPU run to compare its float16 vectors with.
    np.savez_compressed(out / REFERENCE, texts=np.array(texts), vectors=reference.astype(np.float32))
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    if size > UPLOAD_LIMIT_MIB << 20:
        logger.warning("The float16 copy is %.1f MiB, over the %d MiB upload limit", size / 2**20, UPLOAD_LIMIT_MIB)
    return size


# -- corpora -------------------------------------------------------------------------------------
def _hotpotqa(spec: str, hotpotqa: Path, work: Path, n_queries: int) -> Corpus:
    corpus = hotpotqa / "corpus.jsonl"
    lines = corpus.read_text(encoding="utf-8").splitlines()
    n = int(spec.partition(":")[2] or len(lines))
    path = corpus
    if n < len(lines):
        path = work / f"hotpotqa-{n}.jsonl"
        path.write_text("\n".join(lines[:n]) + "\n", encoding="utf-8")
    with (hotpotqa / "tasks.jsonl").open(encoding="utf-8") as fh:
        questions = [json.loads(line)["question"] for line, _ in zip(fh, range(n_queries))]
    return Corpus(spec, path, min(n, len(lines)), questions)


def _synthetic(n: int, work: Path, n_queries: int, seed: int = 0) -> Corpus:
    from sieve.benchmarks.synthetic import Vocabulary

    vocab = Vocabulary(seed, size=50_000)
    path = work / f"synthetic-{n}.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for start in range(0, n, 10_000):
            texts = vocab.passages(min(10_000, n - start))
            fh.writelines(json.dumps({"id": f"s{start + i}", "text": t}) + "\n" for i, t in enumerate(texts))
    queries = Vocabulary(seed, size=50_000, stream=1)
    return Corpus(str(n), path, n, [queries.query() for _ in range(n_queries)])


def corpora(sizes: str, hotpotqa: Path, work: Path, n_queries: int) -> list[Corpus]:
    """The corpora ``sizes`` names (see the module docstring), written under ``work`` where needed.

    Raises:
        ValueError: an item that is neither ``hotpotqa[:N]``, ``small`` nor a positive integer.
    """
    items = [s.strip() for s in sizes.replace("small", SMALL).split(",") if s.strip()]
    out = []
    for item in items:
        if item == "hotpotqa" or item.startswith("hotpotqa:"):
            out.append(_hotpotqa(item, hotpotqa, work, n_queries))
        elif item.isdigit() and int(item) > 0:
            out.append(_synthetic(int(item), work, n_queries))
        else:
            raise ValueError(f"Expected sizes like hotpotqa, hotpotqa:N, small or a positive integer, got {item!r}")
    return out


# -- measuring -----------------------------------------------------------------------------------
def sieve_command() -> list[str]:
    """The ``sieve`` console script of this Python, else ``python -m sieve.cli.main``."""
    script = Path(sys.executable).with_name("sieve")
    return [str(script)] if script.exists() else [sys.executable, "-m", "sieve.cli.main"]


def _index_args(corpus: Corpus, data_dir: Path, embedder: Path | None, device: str) -> list[str]:
    args = [
        *sieve_command(),
        "index",
        str(corpus.path),
        "--data-dir",
        str(data_dir),
        "--collection",
        _collection(corpus),
        "--device",
        device,
        "--embed-backend",
        "torch",
        "--json",
    ]
    return args + (["--embedder", str(embedder)] if embedder else [])


def _collection(corpus: Corpus) -> str:
    return "gpu-check-" + corpus.name.replace(":", "-")


def _config(data_dir: Path, embedder: Path | None, device: str) -> object:
    from sieve.retriever import RetrieverConfig

    config = RetrieverConfig(data_dir=data_dir, embed_backend="torch", device=device)  # type: ignore[arg-type]
    if embedder:  # validated like any other field: the path must hold a model
        config = RetrieverConfig(
            data_dir=data_dir,
            embed_backend="torch",
            device=device,  # type: ignore[arg-type]
            embedder_path=str(embedder),
        )
    return config


def _written(data_dir: Path, corpus: Corpus, embedder: Path | None, device: str) -> int:
    """Chunks a stopped index run had written (0 when it had not created the collection yet)."""
    from sieve.core.errors import UnknownCollection
    from sieve.retriever import CorpusIndex

    try:
        return CorpusIndex.open(_config(data_dir, embedder, device), _collection(corpus)).count()  # type: ignore[arg-type]
    except UnknownCollection:
        return 0


def _pct(values: Sequence[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values), q)), 2)


def time_queries(data_dir: Path, corpus: Corpus, embedder: Path | None, device: str) -> tuple[float, float]:
    """p50 and p95 (ms) of hybrid top-10 queries, each query string new to the query cache."""
    from sieve.retriever import CorpusIndex

    index = CorpusIndex.open(_config(data_dir, embedder, device), _collection(corpus))  # type: ignore[arg-type]
    index.search("warm up the model and BM25", 10, mode="hybrid")
    times = []
    for q in corpus.queries:
        t0 = time.perf_counter()
        index.search(q, 10, mode="hybrid")
        times.append((time.perf_counter() - t0) * 1000)
    return _pct(times, 50), _pct(times, 95)


def check(corpus: Corpus, data_dir: Path, embedder: Path | None, device: str, timeout_s: float) -> CheckRow:
    """Index ``corpus`` end to end in a child ``sieve index``, then time queries (see the module docstring)."""
    t0 = time.perf_counter()
    timed_out, out = False, {}
    try:
        res = subprocess.run(
            _index_args(corpus, data_dir, embedder, device), capture_output=True, text=True, timeout=max(timeout_s, 1)
        )
    except subprocess.TimeoutExpired:
        timed_out = True
    else:
        if res.returncode != 0:
            raise RuntimeError(f"sieve index failed ({res.returncode}): {res.stdout[-2000:]}{res.stderr[-2000:]}")
        out = json.loads(res.stdout)
    wall = time.perf_counter() - t0
    chunks = int(out["chunks_written"]) if out else _written(data_dir, corpus, embedder, device)
    p50 = p95 = None
    if not timed_out and chunks:
        p50, p95 = time_queries(data_dir, corpus, embedder, device)
    return CheckRow(
        corpus.name,
        out.get("device") if out else device,
        corpus.docs,
        chunks,
        round(wall, 2),
        round(chunks / wall, 1) if wall else 0.0,
        p50,
        p95,
        timed_out,
    )


def compare_reference(folder: Path, device: str) -> dict[str, object]:
    """Cosine between this device's vectors of the copy in ``folder`` and the CPU float32 reference vectors.

    Issue 26: CUDA float16 and CPU float32 vectors count as one embedder only if they are this close.
    """
    from sieve.retriever.embeddings import Embedder

    ref = np.load(folder / REFERENCE)
    texts, want = [str(t) for t in ref["texts"]], ref["vectors"]
    embedder = Embedder.load(str(folder), backend="torch", device=device)
    got = embedder.embed_passages(texts)
    cos = np.sum(got * want, axis=1)
    return {
        "check": "vs_cpu_float32",
        "device": embedder.device_choice.device,
        "passages": len(texts),
        "min_cosine": round(float(cos.min()), 7),
        "mean_cosine": round(float(cos.mean()), 7),
    }


# -- command line --------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sieve.benchmarks.gpu_check", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    prep = sub.add_parser("prepare", help="write a float16 copy of the bundled MiniLM (runs on a CPU)")
    prep.add_argument("--out", type=Path, required=True, help="folder to write the copy into")
    prep.add_argument("--hotpotqa", type=Path, default=HOTPOTQA, help="folder with corpus.jsonl (reference passages)")
    prep.add_argument(
        "--reference-passages",
        type=int,
        default=REFERENCE_PASSAGES,
        help="HotpotQA passages whose CPU float32 vectors the GPU run compares with",
    )
    run = sub.add_parser("run", help="index and query each corpus, one JSON line per corpus")
    run.add_argument("--sizes", default="hotpotqa,100000", help="hotpotqa | hotpotqa:N | N (synthetic) | small")
    run.add_argument("--device", default="cuda", choices=("auto", "cpu", "cuda"))
    run.add_argument("--embedder", type=Path, default=None, help="model folder (e.g. the prepared float16 copy)")
    run.add_argument("--hotpotqa", type=Path, default=HOTPOTQA, help="folder with corpus.jsonl and tasks.jsonl")
    run.add_argument("--queries", type=int, default=50, help="hybrid queries timed per corpus")
    run.add_argument("--budget-s", type=float, default=280.0, help="wall-clock limit of the whole run")
    run.add_argument("--data-dir", type=Path, default=None, help="where to index (default: a temporary folder)")
    llm = sub.add_parser("llm", help="gpt-oss: serve with vLLM, score held-apart questions, SFT + GRPO smoke")
    gpu_check_llm.add_arguments(llm)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    prepare_runtime()
    if args.cmd == "llm":
        return _run_llm(args)
    if args.cmd == "prepare":
        size = prepare_fp16(args.out, hotpotqa=args.hotpotqa, reference_passages=args.reference_passages)
        logger.info("Wrote a float16 copy of the embedder to %s (%.1f MiB)", args.out, size / 2**20)
        return 0
    start = time.perf_counter()
    if args.embedder is not None and (args.embedder / REFERENCE).exists():
        print(json.dumps(compare_reference(args.embedder, args.device)), flush=True)
    with tempfile.TemporaryDirectory(prefix="sieve-gpu-check-") as tmp:
        work = Path(tmp)
        data_dir = args.data_dir or work / "data"
        for corpus in corpora(args.sizes, args.hotpotqa, work, args.queries):
            left = args.budget_s - (time.perf_counter() - start)
            if left <= 5:
                logger.warning("Budget spent; %s not run", corpus.name)
                continue
            row = check(corpus, data_dir, args.embedder, args.device, left)
            print(json.dumps(asdict(row)), flush=True)
    return 0


def _run_llm(args: argparse.Namespace) -> int:
    """The ``llm`` subcommand (:mod:`sieve.benchmarks.gpu_check_llm`), in ``--work`` or a temporary folder."""
    check = gpu_check_llm.check_from_args(args)
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
        return gpu_check_llm.run_llm_check(check, args.work)
    with tempfile.TemporaryDirectory(prefix="sieve-gpu-check-llm-") as tmp:
        return gpu_check_llm.run_llm_check(check, Path(tmp))


if __name__ == "__main__":
    sys.exit(main())
