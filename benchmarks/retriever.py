"""Retriever benchmark: embedding backends, indexing throughput, query latency at scale, peak memory.

Run ``python -m sieve.benchmarks.retriever``; it prints one markdown table per part (``--parts``):

0. **Embedding backends** (``backends``, default): torch float32, torch bfloat16, ONNX float32
   and ONNX int8, each indexing the whole of ``../shared/eval/2wikimultihopqa`` and ``hotpotqa``
   (chunks/s, CPU s/chunk) and answering their tasks (doc-level dense and hybrid recall@10),
   all in one run so the speed ratios share the machine's load. The default backend is the
   fastest one whose hybrid recall@10 stays within 0.01 of torch float32 on both sets.
1. **Indexing throughput** (``throughput``, chunks/s) of real passages (the first ``--passages`` of HotpotQA's
   corpus) through the whole pipeline (chunking, embedding, Chroma writes, BM25 segment), in
   float32 and bfloat16.
2. **Query latency** (``latency``, default, with ``--sizes``) p50/p95 of dense, BM25 and hybrid search (and grep) at each size. Embedding
   100k passages at ~40/s would take most of an hour, so the large collections are *synthetic*:
   Zipf-distributed pseudo-words as text and random unit vectors (dim 384, the MiniLM size) as
   embeddings, written through the public write path (``index.writer.add_chunk_batches``: Chroma and
   one BM25 segment). Random vectors are the hard case for HNSW (no cluster structure), so dense
   figures are, if anything, pessimistic. Queries are fresh strings embedded by the real model on
   every call (each mode gets its own query set, so the query-embedding cache never hits).
3. **Recall cost of bf16** (``recall``): doc-level dense recall@10 on 2WikiMultihopQA (1,294 passages,
   164 tasks), corpus and queries embedded in float32 vs bfloat16.

Peak memory is the process's peak RSS (``resource.getrusage``) after each stage.
The target (issue 2) is hybrid p50 < 50 ms at 100k chunks on the 2-core CPU machine.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import resource
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sieve.core.defaults import DEFAULT_K
from sieve.benchmarks.synthetic import Vocabulary, synthetic_chunks, unit_vectors

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from sieve.retriever import CorpusIndex, Document
    from sieve.retriever.types import Chunk
    from sieve.retriever.embeddings import Embedder

logger = logging.getLogger("bench_retriever")

SHARED_EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval"


@dataclass
class BenchConfig:
    sizes: str = field(
        default="10000,100000", metadata={"help": "Comma-separated synthetic collection sizes (chunks)."}
    )
    queries: int = field(default=100, metadata={"help": "Timed queries per mode and size."})
    grep_queries: int = field(default=20, metadata={"help": "Timed grep calls per size (regex scans are slower)."})
    k: int = field(default=10, metadata={"help": "Results per query."})
    passages: int = field(default=300, metadata={"help": "Real HotpotQA passages indexed for the throughput rows."})
    hotpotqa: str = field(default=str(SHARED_EVAL / "hotpotqa"), metadata={"help": "HotpotQA folder (corpus.jsonl)."})
    recall_data: str = field(
        default=str(SHARED_EVAL / "2wikimultihopqa"),
        metadata={"help": "Folder with corpus.jsonl + tasks.jsonl for the bf16 recall rows."},
    )
    parts: str = field(
        default="backends,latency", metadata={"help": "Which parts to run: backends, latency, throughput, recall."}
    )
    backends: str = field(
        default="torch/float32,torch/bfloat16,onnx/float32,onnx/int8",
        metadata={"help": "backend/dtype pairs of the backend table (the first is the baseline)."},
    )
    backend_data: str = field(
        default=f"{SHARED_EVAL / '2wikimultihopqa'},{SHARED_EVAL / 'hotpotqa'}",
        metadata={
            "help": "Comma-separated folders (corpus.jsonl + tasks.jsonl) of the backend "
            "table; each is indexed whole by every backend."
        },
    )
    limit_passages: int = field(
        default=0,
        metadata={
            "help": "Backend table on the first N passages of each corpus "
            "and the tasks whose gold passages all lie in them "
            "(0 = whole corpora)."
        },
    )
    model_dir: str = field(
        default="",
        metadata={
            "help": "Where ONNX exports are cached (default: $SIEVE_MODEL_DIR, "
            "else the user's data dir's models folder)."
        },
    )
    data_dir: str = field(default="", metadata={"help": "Scratch folder (default: a temporary one, removed after)."})
    out: str = field(default="", metadata={"help": "Also write the results as JSON to this file."})
    seed: int = field(default=0, metadata={"help": "Seed of the synthetic corpus and queries."})


# -- measurement helpers ------------------------------------------------------------------------
def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def current_rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def time_calls(fn: Callable[[str], Any], queries: Sequence[str], warmup: int = 3) -> dict[str, float]:
    """Wall-clock p50/p95/mean in milliseconds of ``fn(q)`` over ``queries`` (the first ``warmup`` untimed).

    Also the median CPU time of the process per call (all threads: torch's, Chroma's), which a
    machine shared with other jobs inflates much less than wall-clock time.
    """
    from sieve.eval.metrics import percentile

    for q in queries[:warmup]:
        fn(q)
    ms, cpu = [], []
    for q in queries[warmup:]:
        c0, t0 = time.process_time(), time.perf_counter()
        fn(q)
        ms.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return {
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
        "mean_ms": float(np.mean(ms)),
        "cpu_p50_ms": percentile(cpu, 50),
        "n": len(ms),
    }


TOPICS = ("alpha", "beta", "gamma", "delta")  # metadata of the synthetic chunks, for the filtered search


# -- synthetic corpus ---------------------------------------------------------------------------
def fill_synthetic(index: CorpusIndex, n_chunks: int, vocab: Vocabulary, dim: int, seed: int) -> dict[str, float]:
    """Write ``n_chunks`` synthetic chunks with random unit vectors through the public write path
    (:meth:`~sieve.retriever.writer.IndexWriter.add_chunk_batches`: Chroma and one BM25 segment); returns timings."""
    rng = np.random.default_rng(seed)

    def batches() -> Iterator[tuple[list[Chunk], np.ndarray]]:
        for start in range(0, n_chunks, 5000):
            n = min(5000, n_chunks - start)
            yield synthetic_chunks(vocab, start, n, topics=TOPICS), unit_vectors(rng, n, dim)

    t0 = time.perf_counter()
    index.writer.add_chunk_batches(batches())
    write_s = time.perf_counter() - t0
    bm25 = index.bm25_index()
    if not len(bm25) == n_chunks == index.count():
        raise RuntimeError(f"Expected {n_chunks} chunks in Chroma and BM25, got {index.count()} and {len(bm25)}")
    return {"write_s": write_s, "bm25_terms": float(len(bm25.vocab)), "bm25_nnz": float(bm25.nnz)}


def bench_latency(cfg: BenchConfig, data_dir: Path, embedder: Embedder) -> list[dict[str, Any]]:
    from sieve.retriever import CorpusIndex, RetrieverConfig
    from sieve.retriever.index import delete_collection
    from sieve.retriever.modes import MODES

    rows = []
    for size in [int(s) for s in cfg.sizes.split(",") if s.strip()]:
        rcfg = RetrieverConfig(
            data_dir=data_dir,
            embed_backend=embedder.backend,  # type: ignore[arg-type]
            embed_dtype=embedder.dtype,  # type: ignore[arg-type]
        )
        name = f"bench-{size}"
        index = CorpusIndex.open(rcfg, name, create=True, embedder=embedder)
        text = Vocabulary(cfg.seed + size, size=30_000)
        logger.info("Filling %s with %d synthetic chunks", name, size)
        build = fill_synthetic(index, size, text, embedder.dim, cfg.seed)
        rss_after_build = current_rss_mib()
        n = cfg.queries + 3
        for mode in MODES:  # every registered retrieval mode
            queries = [text.query() for _ in range(n)]
            stats = time_calls(lambda q, m=mode: index.search(q, cfg.k, mode=m), queries)  # type: ignore[misc]
            rows.append({"size": size, "mode": mode, **stats})
        filtered = [text.query() for _ in range(n)]
        stats = time_calls(lambda q: index.search(q, cfg.k, mode="hybrid", where={"topic": "beta"}), filtered)
        rows.append({"size": size, "mode": "hybrid + where", **stats})
        seen = {h.chunk_id for q in [text.query() for _ in range(5)] for h in index.search(q, 50, mode="hybrid")}
        excl = [text.query() for _ in range(n)]
        stats = time_calls(lambda q: index.search(q, cfg.k, mode="hybrid", exclude=seen), excl)
        rows.append({"size": size, "mode": f"hybrid + exclude {len(seen)}", **stats})
        emb_q = [text.query() for _ in range(n)]
        stats = time_calls(lambda q: embedder.embed_passages([q]), emb_q)
        rows.append({"size": size, "mode": "(query embedding alone)", **stats})
        patterns = [text.words[random.Random(i).randint(50, 5000)] for i in range(cfg.grep_queries + 1)]
        stats = time_calls(lambda p: index.grep(p, 5), patterns, warmup=1)
        rows.append({"size": size, "mode": "grep (1 word)", **stats})
        for r in rows:
            if r["size"] == size:
                r.update(build, rss_after_build_mib=rss_after_build, peak_rss_mib=peak_rss_mib())
        delete_collection(rcfg, name)
    return rows


# -- real passages --------------------------------------------------------------------------------
def read_corpus(folder: Path, limit: int | None = None) -> list[Document]:
    from sieve.retriever import Document

    docs: list[Document] = []
    with (folder / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            if limit is not None and len(docs) >= limit:
                break
            r = json.loads(line)
            docs.append(Document(doc_id=r["id"], text=r["text"], title=r.get("title") or "", source=folder.name))
    return docs


def index_fresh(data_dir: Path, name: str, embedder: Embedder, docs: Sequence[Document]) -> CorpusIndex:
    from sieve.retriever import CorpusIndex, RetrieverConfig

    rcfg = RetrieverConfig(data_dir=data_dir, embed_backend=embedder.backend, embed_dtype=embedder.dtype)  # type: ignore[arg-type]
    index = CorpusIndex.open(rcfg, name, create=True, embedder=embedder)
    if index.count():
        raise RuntimeError(f"Expected a fresh collection {name!r}, got {index.count()} chunks")
    return index


def bench_throughput(cfg: BenchConfig, data_dir: Path, embedders: dict[str, Embedder]) -> list[dict[str, Any]]:
    from sieve.retriever.types import passage_text

    docs = read_corpus(Path(cfg.hotpotqa), cfg.passages)
    rows = []
    for dtype, emb in embedders.items():
        index = index_fresh(data_dir, f"tput-{dtype}", emb, docs)
        report = index.writer.index_documents(docs, progress=False)
        texts = [passage_text(c.title, c.text) for c in index.writer.chunker.chunk_all(docs)]
        t0 = time.perf_counter()
        emb.embed_passages(texts)
        embed_s = time.perf_counter() - t0
        rows.append(
            {
                "dtype": dtype,
                "passages": len(docs),
                "chunks": report.chunks_written,
                "seconds": report.seconds,
                "chunks_per_s": report.chunks_per_second,
                "embed_only_chunks_per_s": len(texts) / embed_s,
                "peak_rss_mib": peak_rss_mib(),
            }
        )
    return rows


def bench_recall(cfg: BenchConfig, data_dir: Path, embedders: dict[str, Embedder]) -> list[dict[str, Any]]:
    from sieve.eval.metrics import recall_at_k

    folder = Path(cfg.recall_data)
    docs = read_corpus(folder)
    with (folder / "tasks.jsonl").open(encoding="utf-8") as f:
        tasks = [json.loads(line) for line in f if line.strip()]
    from sieve.eval.metrics import top_k

    rows = []
    first: list[list[str]] = []  # top-10 doc lists of the first dtype, to see how much bf16 moves them
    for dtype, emb in embedders.items():
        index = index_fresh(data_dir, f"recall-{dtype}", emb, docs)
        report = index.writer.index_documents(docs, progress=True)
        recalls: dict[int, list[float]] = {10: [], 5: []}
        tops = []
        for t in tasks:
            returned = [h.doc_id for h in index.search(t["question"], 30, mode="dense")]
            tops.append(top_k(returned, 10))
            for k in recalls:
                recalls[k].append(recall_at_k(returned, t["gold_ids"], k))
        first = first or tops
        rows.append(
            {
                "dtype": dtype,
                "passages": len(docs),
                "chunks": report.chunks_written,
                "tasks": len(tasks),
                "recall@10": float(np.mean(recalls[10])),
                "recall@5": float(np.mean(recalls[5])),
                "same_top10": float(np.mean([a == b for a, b in zip(tops, first)])),
                "top10_overlap": float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(tops, first)])),
                "index_chunks_per_s": report.chunks_per_second,
            }
        )
    return rows


def load_tasks(folder: Path) -> list[dict[str, Any]]:
    with (folder / "tasks.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def doc_recall(index: CorpusIndex, tasks: Sequence[dict[str, Any]], mode: str, k: int = DEFAULT_K) -> float:
    """Mean doc-level recall@k of ``mode`` search (chunks count for their document, deduplicated)."""
    from sieve.eval.metrics import recall_at_k

    return float(
        np.mean(
            [
                recall_at_k(
                    [h.doc_id for h in index.search(t["question"], 3 * k, mode=mode)],  # type: ignore[arg-type]
                    t["gold_ids"],
                    k,
                )
                for t in tasks
            ]
        )
    )


def bench_backends(cfg: BenchConfig, data_dir: Path, models: Path) -> list[dict[str, Any]]:
    """One row per (backend, data set): index the whole corpus, then dense and hybrid recall@10 of its tasks.

    chunks/s is the whole indexing pipeline (chunk, embed, Chroma writes, BM25 segment) as a
    user's ``sieve index`` runs it; CPU s/chunk is the process's CPU time, which other jobs on
    a shared machine inflate much less than wall time.
    """
    from sieve.retriever import RetrieverConfig
    from sieve.retriever.embeddings import Embedder

    rows = []
    for pair in [p.strip() for p in cfg.backends.split(",") if p.strip()]:
        backend, _, dtype = pair.partition("/")
        emb = Embedder.from_config(
            RetrieverConfig(
                data_dir=data_dir,
                model_dir=models,
                embed_backend=backend,  # type: ignore[arg-type]
                embed_dtype=dtype or "auto",  # type: ignore[arg-type]
            )
        )
        for folder in [Path(p) for p in cfg.backend_data.split(",") if p.strip()]:
            docs, tasks = read_corpus(folder, cfg.limit_passages or None), load_tasks(folder)
            have = {d.doc_id for d in docs}
            tasks = [t for t in tasks if set(t["gold_ids"]) <= have]
            index = index_fresh(data_dir, f"be-{backend}-{emb.dtype}-{folder.name}", emb, docs)
            c0 = time.process_time()
            report = index.writer.index_documents(docs, progress=True)
            cpu = time.process_time() - c0
            emb.clear_cache()
            t0 = time.perf_counter()
            dense, hybrid = doc_recall(index, tasks, "dense"), doc_recall(index, tasks, "hybrid")
            rows.append(
                {
                    "backend": backend,
                    "dtype": emb.dtype,
                    "data": folder.name,
                    "chunks": report.chunks_written,
                    "seconds": report.seconds,
                    "chunks_per_s": report.chunks_per_second,
                    "cpu_s_per_chunk": cpu / max(report.chunks_written, 1),
                    "tasks": len(tasks),
                    "dense_recall@10": dense,
                    "hybrid_recall@10": hybrid,
                    "query_ms": (time.perf_counter() - t0) * 1000 / (2 * len(tasks)),
                    "loadavg": os.getloadavg()[0],
                }
            )
            logger.info("%s", rows[-1])
        del emb
    base = {r["data"]: r for r in rows if (r["backend"], r["dtype"]) == (rows[0]["backend"], rows[0]["dtype"])}
    for r in rows:
        b = base[r["data"]]
        r["speedup"] = float(r["chunks_per_s"]) / float(b["chunks_per_s"])  # type: ignore[arg-type]
        r["hybrid_delta"] = float(r["hybrid_recall@10"]) - float(b["hybrid_recall@10"])  # type: ignore[arg-type]
    return rows


# -- output -------------------------------------------------------------------------------------
def markdown_table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str, str]]) -> str:
    """``columns`` = (key, header, format spec)."""
    head = "| " + " | ".join(h for _, h, _ in columns) + " |"
    sep = "|" + "|".join("---" for _ in columns) + "|"
    body = [
        "| "
        + " | ".join(format(r[k], f) if isinstance(r[k], (int, float)) else str(r[k]) for k, _, f in columns)
        + " |"
        for r in rows
    ]
    return "\n".join([head, sep, *body])


def parse_args(argv: Sequence[str] | None = None) -> BenchConfig:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in fields(BenchConfig):
        parser.add_argument(
            f"--{f.name.replace('_', '-')}", type=type(f.default), default=f.default, help=f.metadata["help"]
        )
    return BenchConfig(**vars(parser.parse_args(argv)))


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from sieve.core.runtime import prepare_runtime

    prepare_runtime()
    cfg = parse_args(argv)
    from sieve.settings import load_settings

    parts = {p.strip() for p in cfg.parts.split(",")}
    scratch = Path(cfg.data_dir) if cfg.data_dir else Path(tempfile.mkdtemp(prefix="sieve-bench-"))
    # Exports are reused from $SIEVE_MODEL_DIR / the user's data dir: each would cost a minute per run.
    models = Path(cfg.model_dir) if cfg.model_dir else load_settings().retriever_config().models_dir
    results: dict[str, Any] = {"config": asdict(cfg), "cpus": os.cpu_count(), "loadavg_start": os.getloadavg()}
    try:
        results.update(_run_parts(cfg, parts, scratch, models))
    finally:
        if not cfg.data_dir:
            shutil.rmtree(scratch, ignore_errors=True)
    results["loadavg_end"] = os.getloadavg()
    results["peak_rss_mib"] = peak_rss_mib()
    print(report(results, cfg))  # the table is this script's output
    if cfg.out:
        Path(cfg.out).write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
    return results


def _run_parts(cfg: BenchConfig, parts: set[str], scratch: Path, models: Path) -> dict[str, Any]:
    """The rows of each part asked for (backends, latency, throughput, recall), in that order."""
    from sieve.retriever import RetrieverConfig
    from sieve.retriever.embeddings import Embedder

    results: dict[str, Any] = {}
    if "backends" in parts:
        results["backends"] = bench_backends(cfg, scratch, models)
    default = Embedder.from_config(RetrieverConfig(data_dir=scratch, model_dir=models))
    embedders = {"default": default}
    if parts & {"throughput", "recall"}:
        embedders = {
            "float32": Embedder.from_config(RetrieverConfig(data_dir=scratch, embed_backend="torch")),
            "bfloat16": Embedder.from_config(
                RetrieverConfig(data_dir=scratch, embed_backend="torch", embed_dtype="bfloat16")
            ),
        }
    if "latency" in parts:
        results["latency"] = bench_latency(cfg, scratch, default)
    if "throughput" in parts:
        results["throughput"] = bench_throughput(cfg, scratch, embedders)
    if "recall" in parts:
        results["recall"] = bench_recall(cfg, scratch, embedders)
    return results


# The report's tables: (key, header, format spec) per column.
BACKEND_COLUMNS = [
    ("backend", "backend", ""),
    ("dtype", "dtype", ""),
    ("data", "data", ""),
    ("chunks", "chunks", "d"),
    ("chunks_per_s", "chunks/s", ".1f"),
    ("speedup", "x baseline", ".2f"),
    ("cpu_s_per_chunk", "CPU s/chunk", ".3f"),
    ("dense_recall@10", "dense R@10", ".4f"),
    ("hybrid_recall@10", "hybrid R@10", ".4f"),
    ("hybrid_delta", "hybrid delta", "+.4f"),
    ("query_ms", "query ms", ".1f"),
    ("loadavg", "load", ".1f"),
]
THROUGHPUT_COLUMNS = [
    ("dtype", "dtype", ""),
    ("passages", "passages", "d"),
    ("chunks", "chunks", "d"),
    ("seconds", "s", ".1f"),
    ("chunks_per_s", "chunks/s", ".1f"),
    ("embed_only_chunks_per_s", "embed-only chunks/s", ".1f"),
    ("peak_rss_mib", "peak RSS MiB", ".0f"),
]
LATENCY_COLUMNS = [
    ("size", "chunks", "d"),
    ("mode", "mode", ""),
    ("p50_ms", "p50 ms", ".1f"),
    ("p95_ms", "p95 ms", ".1f"),
    ("mean_ms", "mean ms", ".1f"),
    ("cpu_p50_ms", "CPU p50 ms", ".1f"),
    ("n", "n", "d"),
]
BUILD_COLUMNS = [
    ("size", "chunks", "d"),
    ("write_s", "Chroma + BM25 write s", ".1f"),
    ("bm25_nnz", "BM25 nnz", ".0f"),
    ("rss_after_build_mib", "RSS after build MiB", ".0f"),
    ("peak_rss_mib", "peak RSS MiB", ".0f"),
]
RECALL_COLUMNS = [
    ("dtype", "dtype", ""),
    ("passages", "passages", "d"),
    ("tasks", "tasks", "d"),
    ("recall@5", "recall@5", ".4f"),
    ("recall@10", "recall@10", ".4f"),
    ("same_top10", "top-10 identical to fp32", ".3f"),
    ("top10_overlap", "top-10 overlap", ".3f"),
    ("index_chunks_per_s", "index chunks/s", ".1f"),
]


def report(results: dict[str, Any], cfg: BenchConfig) -> str:
    """The run as text: the machine's CPUs and load, then a table per part that ran."""
    out = [
        f"CPUs: {results['cpus']}; load average at start {results['loadavg_start'][0]:.1f}, "
        f"at end {results['loadavg_end'][0]:.1f}; process peak RSS {results['peak_rss_mib']:.0f} MiB"
    ]
    if "backends" in results:
        caption = (
            "Embedding backends (whole corpus indexed per backend: chunk + embed + Chroma + BM25; doc-level "
            "recall@10 of its tasks; speed-up and hybrid delta against the first row of the same data set):"
        )
        out += ["", caption, markdown_table(results["backends"], BACKEND_COLUMNS)]
    if "throughput" in results:
        caption = "Indexing throughput (HotpotQA passages; chunk + embed + Chroma + BM25):"
        out += ["", caption, markdown_table(results["throughput"], THROUGHPUT_COLUMNS)]
    if "latency" in results:
        caption = f"Query latency (k={cfg.k}; synthetic chunks, random unit vectors, real query embedding):"
        out += ["", caption, markdown_table(results["latency"], LATENCY_COLUMNS)]
        builds = {r["size"]: r for r in results["latency"]}.values()
        out += ["", "Build and memory per size:", markdown_table(list(builds), BUILD_COLUMNS)]
    if "recall" in results:
        caption = f"bf16 recall cost (dense, doc-level, {Path(cfg.recall_data).name}):"
        out += ["", caption, markdown_table(results["recall"], RECALL_COLUMNS)]
    return "\n".join(out)


if __name__ == "__main__":
    main()
