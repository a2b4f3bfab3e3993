"""Memory and time as the corpus grows: build, BM25, disk, peak RSS and hybrid latency at 10k/100k/1M chunks.

    python -m sieve.benchmarks.scale --sizes 10000,100000,1000000 --data-dir /scratch/scale --out scale.json

Each size runs in two child processes, so each peak RSS belongs to one stage:

1. **index**: write N synthetic chunks into a fresh embedded Chroma collection in batches of
   5,000, then build and save BM25, as ``sieve index`` does after its writes. Texts are
   Zipf(1.07) pseudo-words over a 500k-word vocabulary (so the vocabulary keeps growing with the
   corpus, as Heaps' law says real text does), 80-160 words per chunk (~200 MiniLM tokens).
   Vectors are random unit vectors (dim 384): embedding 1M chunks on 2 cores would take days, so
   the table reports the embedding time the measured default backend would add instead.
2. **serve**: open the collection as the server does (default embedder, BM25 loaded from its
   file), then time hybrid queries (fresh strings, embedded by the real model each time).

Peak RSS counts from after the synthetic-text set-up (``/proc/self/clear_refs``). A watchdog kills
a child whose RSS passes ``--max-rss-gib`` or when the machine's available
memory falls under ``--min-free-gib``, and a size is skipped when too little memory is free to
start it, so a run cannot take a shared machine down.
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
from typing import Any

import numpy as np

from sieve.runtime import prepare_runtime

logger = logging.getLogger("bench_scale")

VOCAB = 500_000
DIM = 384
BATCH = 5000


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


# -- synthetic corpus -------------------------------------------------------------------------------
class Vocabulary:
    """Pseudo-words with Zipf(1.07) frequencies, sampled in bulk with numpy."""

    def __init__(self, seed: int, size: int = VOCAB, stream: int = 0) -> None:
        """``seed`` fixes the words and their ranks; ``stream`` picks an independent sampling sequence
        (the serving stage draws queries from the same words as the indexed texts)."""
        rng = np.random.default_rng(seed)
        syllables = np.array("ka lo mi ren tus va por ji sel dan qua bri zo ne fi gu har mel ost pa ri sun "
                             "te vol cam ber lin dor e ax".split(), dtype="<U15")
        n = 2 * size  # 2-5 syllables from 32: far more combinations than needed; duplicates dropped
        picks = syllables[rng.integers(0, len(syllables), size=(n, 5))]
        lengths = rng.integers(2, 6, size=n)
        words = np.char.add(picks[:, 0], picks[:, 1])
        for j in range(2, 5):
            words = np.where(lengths > j, np.char.add(words, picks[:, j]), words)
        unique = np.unique(words)[:size]  # sorted, so the seed alone fixes the list
        self.words = unique[rng.permutation(len(unique))].astype(object)  # str objects join fast
        weights = 1.0 / np.arange(1, len(self.words) + 1) ** 1.07
        self.cum = np.cumsum(weights / weights.sum())
        self.rng = np.random.default_rng([seed, stream])

    def passages(self, n: int) -> list[str]:
        lengths = self.rng.integers(80, 161, size=n)
        ranks = np.minimum(np.searchsorted(self.cum, self.rng.random(int(lengths.sum()))), len(self.words) - 1)
        words = self.words[ranks]
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        return [" ".join(words[bounds[i] : bounds[i + 1]]) for i in range(n)]

    def query(self) -> str:
        # Content words of middling frequency, sometimes one very common word.
        picks = [self.words[self.rng.integers(50, 5000)] for _ in range(self.rng.integers(3, 8))]
        if self.rng.random() < 0.5:
            picks.append(self.words[self.rng.integers(0, 50)])
        return " ".join(picks)


# -- stages (run in child processes) ----------------------------------------------------------------
def _open(data_dir: Path, name: str, create: bool) -> Any:
    """The collection with the default embedder, or, when opening an indexed one, the embedder it records."""
    from sieve.retriever import CorpusIndex
    from sieve.retriever.embeddings import EmbedderIdentity
    from sieve.retriever.store import EMBEDDER_KEY, make_client
    from sieve.settings import load_settings

    cfg = load_settings(data_dir=data_dir).retriever_config()  # SIEVE_MODEL_DIR and the embedder variables apply
    client = make_client(cfg)
    if not create:
        recorded = (client.get_collection(name).metadata or {}).get(EMBEDDER_KEY)
        if recorded:
            ident = EmbedderIdentity.from_json(recorded)
            cfg = load_settings(data_dir=data_dir, embed_backend=ident.backend,
                                embed_dtype=ident.dtype).retriever_config()
    return CorpusIndex.open(cfg, name, create=create, client=client)


def stage_index(data_dir: Path, size: int, seed: int) -> dict[str, Any]:
    from sieve.retriever.types import Chunk

    vocab = Vocabulary(seed)
    rng = np.random.default_rng(seed)
    reset_peak()  # what follows is what `sieve index` itself would hold
    index = _open(data_dir, f"scale-{size}", create=True)
    rss_model = rss_mib()
    t0 = time.perf_counter()
    index.store.embedder = index.embedder.identity.to_json()  # what _write stamps on a first write
    index.store.bump_generation()
    for start in range(0, size, BATCH):
        n = min(BATCH, size - start)
        chunks = [Chunk(chunk_id=f"syn-{i}#0", doc_id=f"syn-{i}", position=0, text=t, title=f"Doc {i}",
                        source="synthetic", char_end=len(t)) for i, t in zip(range(start, start + n), vocab.passages(n))]
        vecs = rng.standard_normal((n, DIM)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        index.store.upsert(chunks, vecs, {c.doc_id: "synthetic" for c in chunks}, {c.doc_id: 1 for c in chunks})
        if start % (20 * BATCH) == 0:
            logger.info("%d/%d chunks written, RSS %.0f MiB", start + n, size, rss_mib())
    write_s = time.perf_counter() - t0
    rss_before_bm25, peak_before_bm25 = rss_mib(), peak_rss_mib()
    index.store.bump_generation()  # the finished write's own generation, as index_documents does
    t0 = time.perf_counter()
    bm25 = index.bm25_index()
    bm25_s = time.perf_counter() - t0
    if not len(bm25) == size == index.count():
        raise RuntimeError(f"Expected {size} chunks in Chroma and BM25, got {index.count()} and {len(bm25)}")
    return {"write_s": write_s, "bm25_s": bm25_s, "bm25_terms": len(bm25.vocab), "bm25_nnz": int(bm25.tf.nnz),
            "rss_model_mib": rss_model, "rss_before_bm25_mib": rss_before_bm25,
            "peak_before_bm25_mib": peak_before_bm25, "index_peak_rss_mib": peak_rss_mib()}


def stage_index_bm25_only(data_dir: Path, size: int, seed: int) -> dict[str, Any]:
    """The Sieve side of indexing without Chroma: BM25 built from the same texts, as the rebuild streams them."""
    from sieve.retriever.bm25 import BM25Builder, tokenize

    vocab = Vocabulary(seed)
    reset_peak()
    t0 = time.perf_counter()
    builder = BM25Builder()
    for start in range(0, size, BATCH):
        n = min(BATCH, size - start)
        for i, text in zip(range(start, start + n), vocab.passages(n)):
            builder.add(f"syn-{i}#0", tokenize(f"Doc {i}\n{text}"))
    bm25 = builder.build()
    bm25.save(data_dir / "bm25-only", fingerprint="synthetic")
    return {"bm25_s": time.perf_counter() - t0, "bm25_terms": len(bm25.vocab), "bm25_nnz": int(bm25.tf.nnz),
            "index_peak_rss_mib": peak_rss_mib()}


def stage_serve_bm25_only(data_dir: Path, size: int, seed: int, queries: int) -> dict[str, Any]:
    """A serving process without Chroma's vectors: the embedder plus BM25, timed as hybrid minus the HNSW query."""
    from sieve.eval.metrics import percentile
    from sieve.retriever.bm25 import SparseBM25, tokenize
    from sieve.retriever.embeddings import Embedder
    from sieve.settings import load_settings

    vocab = Vocabulary(seed, stream=1)
    reset_peak()
    t0 = time.perf_counter()
    embedder = Embedder.from_config(load_settings(data_dir=data_dir).retriever_config())
    loaded = SparseBM25.load(data_dir / "bm25-only")
    if loaded is None:
        raise RuntimeError(f"Expected a BM25 file in {data_dir / 'bm25-only'}")
    bm25 = loaded[0]
    open_s = time.perf_counter() - t0
    rss_loaded = rss_mib()
    ms, cpu = [], []
    for i in range(queries + 3):
        q = vocab.query()
        c0, t0 = time.process_time(), time.perf_counter()
        embedder.embed_query(q)
        bm25.top_k(tokenize(q), 50)
        if i >= 3:
            ms.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
    return {"open_s": open_s, "hybrid_p50_ms": percentile(ms, 50), "hybrid_p95_ms": percentile(ms, 95),
            "hybrid_cpu_p50_ms": percentile(cpu, 50),
            "serve_rss_mib": rss_loaded, "serve_peak_rss_mib": peak_rss_mib()}


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
    rss_loaded = rss_mib()
    for _ in range(3):
        index.search(vocab.query(), 10, mode="hybrid")
    ms, cpu = [], []
    for _ in range(queries):
        q = vocab.query()
        c0, t0 = time.process_time(), time.perf_counter()
        index.search(q, 10, mode="hybrid")
        ms.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)  # this process's CPU (Chroma's threads included)
    return {"open_s": open_s, "first_query_ms": first_ms, "hybrid_p50_ms": percentile(ms, 50),
            "hybrid_cpu_p50_ms": percentile(cpu, 50),
            "hybrid_p95_ms": percentile(ms, 95), "serve_rss_mib": rss_loaded, "serve_peak_rss_mib": peak_rss_mib()}


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
        raise RuntimeError(f"stage {args[0]} killed by the memory watchdog: {killed[0]}")
    if proc.returncode:
        raise RuntimeError(f"stage {args[0]} exited with {proc.returncode}")
    return json.loads(out.decode().strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000", help="Comma-separated chunk counts.")
    ap.add_argument("--data-dir", type=Path, required=True, help="Scratch folder (one sub-folder per size).")
    ap.add_argument("--queries", type=int, default=100, help="Timed hybrid queries per size.")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--embed-chunks-per-s", type=float, default=0.0,
                    help="Measured indexing chunks/s of the default backend (benchmarks/retriever.py), for the "
                         "embedding-time column.")
    ap.add_argument("--max-rss-gib", type=float, default=12.0, help="Kill a stage whose RSS passes this.")
    ap.add_argument("--min-free-gib", type=float, default=2.0, help="Kill a stage when less memory is available.")
    ap.add_argument("--out", type=Path, help="Also write the rows as JSON here.")
    ap.add_argument("--bm25-only", action="store_true",
                    help="Leave Chroma out (its 1M-chunk write takes hours on 2 cores): time and weigh the Sieve "
                         "side alone, i.e. a worker of the Chroma-server topology (embedder + BM25).")
    ap.add_argument("--stage", choices=["index", "serve"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    prepare_runtime()
    if args.stage:  # a child: one stage of one size, its result as the last stdout line
        size = int(args.sizes)
        folder = args.data_dir / f"n{size}"
        if args.stage == "index":
            res = (stage_index_bm25_only if args.bm25_only else stage_index)(folder, size, args.seed)
        else:
            res = (stage_serve_bm25_only if args.bm25_only else stage_serve)(folder, size, args.seed, args.queries)
        print(json.dumps(res))
        return 0
    rows = []
    for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
        need = 3.0 + size * 6e-6  # GiB: a rough bound from the smaller sizes (~5 KiB per chunk)
        if available_gib() < need + args.min_free_gib:
            logger.warning("Skipping %d chunks: %.1f GiB available, want %.1f", size, available_gib(), need)
            continue
        common = ["--sizes", str(size), "--data-dir", str(args.data_dir), "--seed", str(args.seed),
                  *(["--bm25-only"] if args.bm25_only else [])]
        row: dict[str, Any] = {"chunks": size, "chroma": not args.bm25_only, "loadavg": os.getloadavg()[0]}
        row.update(run_child(["--stage", "index", *common], args.max_rss_gib, args.min_free_gib))
        folder = args.data_dir / f"n{size}"
        if not args.bm25_only:
            row["chroma_disk_mib"] = du_mib(folder / "chroma")
        row["bm25_disk_mib"] = sum(du_mib(p) for p in folder.rglob("bm25.npz"))
        row.update(run_child(["--stage", "serve", *common, "--queries", str(args.queries)], args.max_rss_gib,
                             args.min_free_gib))
        if args.embed_chunks_per_s:
            row["embed_h_at_measured_rate"] = size / args.embed_chunks_per_s / 3600
        rows.append(row)
        logger.info("%s", row)
    print_table(rows)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2))
    return 0


def print_table(rows: list[dict[str, Any]]) -> None:
    cols = [("chunks", "chunks", "d"), ("chroma", "Chroma", ""), ("write_s", "Chroma write s", ".0f"), ("bm25_s", "BM25 build s", ".1f"),
            ("bm25_disk_mib", "BM25 MiB", ".0f"), ("chroma_disk_mib", "Chroma MiB", ".0f"),
            ("index_peak_rss_mib", "index peak RSS MiB", ".0f"), ("serve_rss_mib", "serve RSS MiB", ".0f"),
            ("serve_peak_rss_mib", "serve peak MiB", ".0f"), ("hybrid_p50_ms", "hybrid p50 ms", ".1f"),
            ("hybrid_p95_ms", "hybrid p95 ms", ".1f"), ("hybrid_cpu_p50_ms", "hybrid CPU p50 ms", ".1f"), ("embed_h_at_measured_rate", "embed h (est.)", ".1f"),
            ("loadavg", "load", ".1f")]
    cols = [c for c in cols if any(c[0] in r for r in rows)]
    lines = ["| " + " | ".join(h for _, h, _ in cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(format(r[k], f) if k in r and f else str(r.get(k, "")) for k, _, f in cols) + " |"
              for r in rows]
    print("\n".join(lines))  # the table is this script's output


if __name__ == "__main__":
    raise SystemExit(main())
