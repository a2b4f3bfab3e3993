"""A real embedded Chroma at scale: write rate, BM25 add latency, hybrid latency, RSS and disk per size.

    python -m sieve.benchmarks.scale --sizes 100000,1000000 --json

prints one JSON object per size, one per line, with exactly the keys ``chunks``,
``write_chunks_per_s``, ``bm25_add_1k_s``, ``hybrid_p50_ms``, ``hybrid_p95_ms``, ``serving_rss_mib``
and ``disk_mib`` (without ``--json``: a table of them; progress and extra figures go to the log).
Each size runs in three child processes, so each figure belongs to one stage:

1. **write**: N synthetic chunks into a fresh embedded Chroma collection through the public write
   path (:meth:`~sieve.retriever.writer.IndexWriter.add_chunk_batches`: Chroma writes at its maximum
   batch size, one BM25 segment). Texts are Zipf(1.07) pseudo-words over a 500k-word vocabulary
   (so the vocabulary keeps growing with the corpus, as Heaps' law says real text does), 80-160
   words per chunk (~200 MiniLM tokens). Vectors are random unit vectors (dim 384): embedding 1M
   chunks on 2 CPU cores would take more than a day, so this measures the store, not the embedder.
   ``write_chunks_per_s`` leaves out the time spent making the synthetic text.
2. **add 1k**: a new process opens the collection, then adds 1,000 new chunks (vectors given) and
   searches BM25 for a word only they hold; ``bm25_add_1k_s`` is the time from the start of the
   write until that search returns them.
3. **serve**: a new process opens the collection as the server does and times hybrid queries
   (fresh strings, embedded by the real model each time); ``serving_rss_mib`` is its peak RSS.

``disk_mib`` is the size folder (Chroma and BM25) after the three stages. A watchdog kills a child
whose RSS passes ``--max-rss-gib`` or when the machine's available memory falls under
``--min-free-gib``, so a run cannot take a shared machine down.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sieve.benchmarks.synthetic import Vocabulary, synthetic_chunks, unit_vectors
from sieve.core.runtime import prepare_runtime

if TYPE_CHECKING:
    from collections.abc import Iterator

logger = logging.getLogger("bench_scale")

DIM = 384
BATCH = 5000  # chunks generated per batch (the store splits at Chroma's maximum itself)
KEYS = (
    "chunks",
    "write_chunks_per_s",
    "bm25_add_1k_s",
    "hybrid_p50_ms",
    "hybrid_p95_ms",
    "serving_rss_mib",
    "disk_mib",
)
MARKER = "zqxjvbenchmarker"  # a word no synthetic text holds: the added chunks carry it


# -- measurement ----------------------------------------------------------------------------------
def peak_rss_mib() -> float:
    """Peak RSS since the last :func:`reset_peak` (VmHWM), so benchmark set-up stays out of it."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak() -> None:
    """Start the peak-RSS count afresh (Linux: ``echo 5 > /proc/self/clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        logger.warning("Could not reset the peak RSS; peaks include the synthetic-text set-up")


def rss_mib(pid: int | str = "self") -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def available_gib() -> float:
    with open("/proc/meminfo", encoding="ascii") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 2**20
    return float("nan")


def du_mib(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files) / 2**20


# -- stages (run in child processes) ----------------------------------------------------------------
def _open(data_dir: Path, name: str, create: bool) -> Any:
    from sieve.retriever import CorpusIndex

    from sieve.settings import load_settings

    # The models folder stays the environment's: the size folder (and disk_mib) holds the store alone.
    models = load_settings().retriever_config().models_dir
    cfg = load_settings(data_dir=data_dir, model_dir=models).retriever_config()
    return CorpusIndex.open(cfg, name, create=create)


def _batches(
    vocab: Vocabulary, rng: np.random.Generator, start: int, size: int, timer: list[float], marker: str = ""
) -> Iterator[tuple[list[Any], np.ndarray]]:
    """Synthetic (chunks, unit vectors) batches; the seconds spent making them accumulate in ``timer[0]``."""
    for at in range(start, start + size, BATCH):
        t0 = time.perf_counter()
        n = min(BATCH, start + size - at)
        chunks, vecs = synthetic_chunks(vocab, at, n, marker=marker), unit_vectors(rng, n, DIM)
        timer[0] += time.perf_counter() - t0
        if (at - start) % (20 * BATCH) == 0:
            logger.info("%d/%d chunks generated, RSS %.0f MiB", at - start + n, size, rss_mib())
        yield chunks, vecs


def stage_write(data_dir: Path, size: int, seed: int) -> dict[str, Any]:
    index = _open(data_dir, f"scale-{size}", create=True)
    reset_peak()
    timer = [0.0]
    t0, c0 = time.perf_counter(), time.process_time()
    written = index.writer.add_chunk_batches(_batches(Vocabulary(seed), np.random.default_rng(seed), 0, size, timer))
    write_s = time.perf_counter() - t0 - timer[0]
    # CPU of every thread of this process (Chroma's included), text making too: what a loaded machine cannot inflate.
    cpu_s = time.process_time() - c0
    if not written == size == index.count() == len(index.bm25_index()):
        raise RuntimeError(
            f"Expected {size} chunks in Chroma and BM25, got {index.count()} and {len(index.bm25_index())}"
        )
    return {
        "write_chunks_per_s": size / write_s,
        "write_s": write_s,
        "text_s": timer[0],
        "write_cpu_s": cpu_s,
        "write_chunks_per_cpu_s": size / cpu_s,
        "write_peak_rss_mib": peak_rss_mib(),
    }


def stage_add(data_dir: Path, size: int, seed: int) -> dict[str, Any]:
    from sieve.retriever.bm25 import tokenize

    index = _open(data_dir, f"scale-{size}", create=False)
    index.bm25_index()  # a running server has its index loaded: opening is not part of adding
    batch = next(_batches(Vocabulary(seed, stream=2), np.random.default_rng([seed, 2]), size, 1000, [0.0], MARKER))
    t0 = time.perf_counter()
    index.writer.add_chunks(*batch)
    written_s = time.perf_counter() - t0
    hits = index.bm25_index().top_k(tokenize(MARKER), 2000)
    add_s = time.perf_counter() - t0
    logger.info("1,000 chunks added in %.2f s, searchable after %.2f s", written_s, add_s)
    if len(hits) != 1000:
        raise RuntimeError(f"Expected the 1,000 added chunks searchable, got {len(hits)}")
    return {"bm25_add_1k_s": add_s, "bm25_segments": len(index.bm25_index().segments)}


def stage_serve(data_dir: Path, size: int, seed: int, queries: int) -> dict[str, Any]:
    from sieve.eval.metrics import percentile

    vocab = Vocabulary(seed, stream=1)
    reset_peak()
    t0 = time.perf_counter()
    index = _open(data_dir, f"scale-{size}", create=False)
    index.bm25_index()
    open_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    index.search(vocab.query(), 10, mode="hybrid")  # first query: Chroma loads the HNSW segment
    first_ms = (time.perf_counter() - t0) * 1000
    for _ in range(3):
        index.search(vocab.query(), 10, mode="hybrid")
    ms, cpu = [], []
    for _ in range(queries):
        q = vocab.query()
        c0, t0 = time.process_time(), time.perf_counter()
        index.search(q, 10, mode="hybrid")
        ms.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)  # this process's CPU (Chroma's threads included)
    return {
        "open_s": open_s,
        "first_query_ms": first_ms,
        "hybrid_p50_ms": percentile(ms, 50),
        "hybrid_p95_ms": percentile(ms, 95),
        "hybrid_cpu_p50_ms": percentile(cpu, 50),
        "serving_rss_mib": peak_rss_mib(),
    }


# -- driver -----------------------------------------------------------------------------------------
def run_child(args: list[str], max_rss_gib: float, min_free_gib: float) -> dict[str, Any]:
    """Run one stage in a child process under a memory watchdog; returns its JSON result."""
    proc = subprocess.Popen([sys.executable, "-m", "sieve.benchmarks.scale", *args], stdout=subprocess.PIPE)
    killed: list[str] = []

    def watch() -> None:
        while proc.poll() is None:
            rss, free = rss_mib(proc.pid) / 1024, available_gib()
            if rss > max_rss_gib or free < min_free_gib:
                killed.append(f"RSS {rss:.1f} GiB, {free:.1f} GiB available")
                proc.kill()
                return
            time.sleep(1.0)

    threading.Thread(target=watch, daemon=True).start()
    out, _ = proc.communicate()
    if killed:
        raise RuntimeError(f"stage {args[1]} killed by the memory watchdog: {killed[0]}")
    if proc.returncode:
        raise RuntimeError(f"stage {args[1]} exited with {proc.returncode}")
    return json.loads(out.decode().strip().splitlines()[-1])


def run_size(size: int, args: argparse.Namespace) -> dict[str, Any]:
    """The three stages of one size in a fresh folder; every figure, the seven keys among them."""
    import shutil

    folder = args.data_dir / f"n{size}"
    shutil.rmtree(folder, ignore_errors=True)  # a fresh store: the write rate is into an empty collection
    common = ["--sizes", str(size), "--data-dir", str(args.data_dir), "--seed", str(args.seed)]
    row: dict[str, Any] = {"chunks": size, "load_start": os.getloadavg()[0]}
    for stage in ("write", "add", "serve"):
        row.update(
            run_child(["--stage", stage, *common, "--queries", str(args.queries)], args.max_rss_gib, args.min_free_gib)
        )
        logger.info("%d chunks, after %s: %s (load %.1f)", size, stage, row, os.getloadavg()[0])
    row["disk_mib"] = du_mib(folder)
    row["load_end"] = os.getloadavg()[0]
    return row


def main(argv: list[str] | None = None) -> int:
    from sieve.settings import load_settings

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000", help="Comma-separated chunk counts.")
    ap.add_argument(
        "--data-dir",
        type=Path,
        help="Scratch folder, one sub-folder per size (removed and made afresh); default <SIEVE_DATA_DIR>/bench-scale.",
    )
    ap.add_argument("--queries", type=int, default=100, help="Timed hybrid queries per size.")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="One JSON object per size per line (the seven keys).")
    ap.add_argument("--max-rss-gib", type=float, default=10.0, help="Kill a stage whose RSS passes this.")
    ap.add_argument("--min-free-gib", type=float, default=2.0, help="Kill a stage when less memory is available.")
    ap.add_argument("--stage", choices=["write", "add", "serve"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    prepare_runtime()
    if args.data_dir is None:
        args.data_dir = load_settings().data_dir / "bench-scale"
    if args.stage:  # a child: one stage of one size, its result as the last stdout line
        size = int(args.sizes)
        folder = args.data_dir / f"n{size}"
        if args.stage == "write":
            res = stage_write(folder, size, args.seed)
        elif args.stage == "add":
            res = stage_add(folder, size, args.seed)
        else:
            res = stage_serve(folder, size, args.seed, args.queries)
        print(json.dumps(res))
        return 0
    rows = []
    for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
        row = run_size(size, args)
        rows.append(row)
        if args.json:
            print(json.dumps({k: _rounded(row[k]) for k in KEYS}), flush=True)  # the script's output
    if not args.json:
        print_table(rows)
    return 0


def _rounded(value: Any) -> Any:
    return round(value, 2) if isinstance(value, float) else value


def print_table(rows: list[dict[str, Any]]) -> None:
    lines = ["| " + " | ".join(KEYS) + " |", "|" + "---|" * len(KEYS)]
    lines += ["| " + " | ".join(str(_rounded(r[k])) for k in KEYS) + " |" for r in rows]
    print("\n".join(lines))  # the table is this script's output


if __name__ == "__main__":
    raise SystemExit(main())
