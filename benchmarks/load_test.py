"""Load test of the HTTP server: latency, status codes and server memory under concurrent clients.

    python -m sieve.benchmarks.load_test                       # starts `sieve serve` on a free loopback port
    python -m sieve.benchmarks.load_test --workers 1,2         # a `chroma run` server + `sieve serve --workers N`
    python -m sieve.benchmarks.load_test --url http://127.0.0.1:8000 --collection sample --server-pid 1234

Bounded and loopback only: a fixed number of requests per (endpoint, concurrency) cell, at 1, 8,
32 and 64 concurrent clients (httpx async), queries drawn in turn from the sample tasks. Each cell
reports p50/p95 latency of the *accepted* requests (HTTP 200) and, separately, of the refused
ones (429/503: admission control), every status code (or transport error) seen, and the server's
resident memory sampled through the cell. Without ``--url`` it indexes the shipped sample corpus
into a throw-away data folder and starts the server as a subprocess, so the load generator and the
server do not share one interpreter (and the server's RSS is its own: with ``--workers N``, the
supervisor's plus its workers').
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sieve.core.net import free_port, wait_until_healthy
from sieve.data import SAMPLE_DIR
from sieve.eval.data import read_tasks
from sieve.eval.metrics import percentile

logger = logging.getLogger(__name__)
_CLI = [sys.executable, "-c", "from sieve.cli.main import main; main()"]


@dataclass
class Cell:
    endpoint: str
    clients: int
    requests: int
    seconds: float
    codes: dict[str, int]  # HTTP status (or transport error name) -> count
    p50_ms: float  # accepted (200) requests
    p95_ms: float
    refused_p95_ms: float  # 429/503 answers: how fast admission control says no
    rss_mb: list[tuple[float, float]] = field(default_factory=list)  # (seconds into the cell, server RSS MiB)

    @property
    def ok(self) -> int:
        return self.codes.get("200", 0)

    @property
    def errors(self) -> int:
        return self.requests - self.ok

    @property
    def rps(self) -> float:
        return self.ok / self.seconds if self.seconds else 0.0

    @property
    def rss_max_mb(self) -> float:
        return max((m for _, m in self.rss_mb), default=float("nan"))


def _pct(values: list[float], q: float) -> float:
    """``percentile`` (0-100) of ``values``; NaN when a cell had none (e.g. no refused requests)."""
    return percentile(values, q) if values else float("nan")


def rss_mib(pid: int | None) -> float | None:
    """Resident set size of process ``pid`` and its children (``--workers N``) in MiB (None when unknown or gone)."""
    if pid is None:
        return None
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return None
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:  # a child that exited meanwhile
            continue
    return total / 2**20


async def _sample_rss(pid: int | None, t0: float, out: list[tuple[float, float]], every_s: float = 0.5) -> None:
    while True:
        m = rss_mib(pid)
        if m is not None:
            out.append((round(time.perf_counter() - t0, 2), round(m, 1)))
        await asyncio.sleep(every_s)


async def run_cell(
    url: str, endpoint: str, clients: int, n: int, queries: list[str], body: dict, server_pid: int | None = None
) -> Cell:
    import httpx

    accepted: list[float] = []
    refused: list[float] = []
    codes: Counter[str] = Counter()
    counter = iter(range(n))

    async def worker(client: httpx.AsyncClient) -> None:
        for i in counter:  # shared iterator: the n requests are split among the clients
            t0 = time.perf_counter()
            try:
                r = await client.post(endpoint, json={**body, "query": queries[i % len(queries)]})
                code = str(r.status_code)
            except httpx.HTTPError as exc:
                code = type(exc).__name__
            ms = (time.perf_counter() - t0) * 1000
            codes[code] += 1
            if code == "200":
                accepted.append(ms)
            elif code in ("429", "503"):
                refused.append(ms)

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    rss: list[tuple[float, float]] = []
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:
        t0 = time.perf_counter()
        sampler = asyncio.ensure_future(_sample_rss(server_pid, t0, rss))
        await asyncio.gather(*(worker(client) for _ in range(clients)))
        seconds = time.perf_counter() - t0
        sampler.cancel()
    m = rss_mib(server_pid)
    if m is not None:
        rss.append((round(seconds, 2), round(m, 1)))
    return Cell(
        endpoint,
        clients,
        n,
        seconds,
        dict(sorted(codes.items())),
        _pct(accepted, 50),
        _pct(accepted, 95),
        _pct(refused, 95),
        rss,
    )


def _env(data_dir: Path, chroma_url: str | None) -> dict[str, str]:
    from sieve.core.runtime import RUNTIME_ENV
    from sieve.settings import load_settings

    # The throw-away data folder must not cost an ONNX export per run: reuse this user's models folder.
    models = load_settings().retriever_config().models_dir
    # The child inherits this environment (PATH, the venv...), plus offline switches and its data folder.
    env = {**os.environ, **RUNTIME_ENV, "SIEVE_DATA_DIR": str(data_dir), "SIEVE_MODEL_DIR": str(models)}
    if chroma_url:
        env["SIEVE_CHROMA_URL"] = chroma_url
    return env


def wait_healthy(proc: subprocess.Popen, url: str, what: str, timeout_s: float = 300) -> None:
    try:
        wait_until_healthy(url, proc=proc, name=what, timeout_s=timeout_s, request_timeout_s=2)
    except RuntimeError:
        proc.terminate()
        raise


def start_chroma(path: Path) -> tuple[subprocess.Popen, str]:
    """``chroma run`` on a free loopback port (the shared store of several Sieve workers)."""
    import shutil

    exe = shutil.which("chroma")
    if exe is None:
        raise RuntimeError("the `chroma` CLI (shipped with chromadb) is not on PATH")
    port = free_port()
    proc = subprocess.Popen(
        [exe, "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, f"{url}/api/v2/heartbeat", "chroma run", 60)
    return proc, url


def index_sample(data_dir: Path, collection: str, chroma_url: str | None, extra: list[str]) -> None:
    """Index the sample corpus (idempotent: a second call writes nothing)."""
    logger.info("Indexing the sample corpus into %s", chroma_url or data_dir)
    subprocess.run(
        [*_CLI, "index", str(SAMPLE_DIR / "corpus.jsonl"), "-c", collection, "--json", *extra],
        env=_env(data_dir, chroma_url),
        check=True,
        stdout=subprocess.DEVNULL,
    )


def start_server(
    data_dir: Path, collection: str, chroma_url: str | None = None, workers: int = 1, extra: list[str] | None = None
) -> tuple[subprocess.Popen, str]:
    """Index the sample corpus (once per store) and start ``sieve serve --workers N`` on a free port."""
    embed = [a for a in extra or [] if a == "--bf16" or a.startswith("--embed-")]  # `index` takes these too
    index_sample(data_dir, collection, chroma_url, embed)
    port = free_port()
    proc = subprocess.Popen(
        [
            *_CLI,
            "serve",
            "--port",
            str(port),
            "-c",
            collection,
            "--preload",
            collection,
            "--workers",
            str(workers),
            "--log-level",
            "warning",
            *(extra or []),
        ],
        env=_env(data_dir, chroma_url),
    )
    url = f"http://127.0.0.1:{port}"
    wait_healthy(proc, url + "/healthz", f"sieve serve --workers {workers}")
    return proc, url


def _codes(codes: dict[str, int]) -> str:
    return " ".join(f"{k}:{v}" for k, v in codes.items())


def markdown_table(cells: list[Cell]) -> str:
    """The cells as a Markdown table (for reports)."""
    rows = [
        "| endpoint | clients | requests | codes | ok req/s | p50 ms (200) | p95 ms (200) | p95 ms (429/503) "
        "| RSS MiB start→max→end |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for c in cells:
        rss = f"{c.rss_mb[0][1]:.0f}→{c.rss_max_mb:.0f}→{c.rss_mb[-1][1]:.0f}" if c.rss_mb else "-"
        rows.append(
            f"| {c.endpoint} | {c.clients} | {c.requests} | {_codes(c.codes)} | {c.rps:.1f} | {c.p50_ms:.0f} "
            f"| {c.p95_ms:.0f} | {c.refused_p95_ms:.0f} | {rss} |"
        )
    return "\n".join(rows)


def print_table(cells: list[Cell], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    cols = (
        "endpoint",
        "clients",
        "requests",
        "codes",
        "ok req/s",
        "p50 ms (200)",
        "p95 ms (200)",
        "p95 ms (429/503)",
        "RSS MiB start→max→end",
    )
    for col in cols:
        table.add_column(col, justify="left" if col in ("endpoint", "codes") else "right")
    for c in cells:
        rss = f"{c.rss_mb[0][1]:.0f}→{c.rss_max_mb:.0f}→{c.rss_mb[-1][1]:.0f}" if c.rss_mb else "-"
        table.add_row(
            c.endpoint,
            str(c.clients),
            str(c.requests),
            _codes(c.codes),
            f"{c.rps:.1f}",
            f"{c.p50_ms:.0f}",
            f"{c.p95_ms:.0f}",
            f"{c.refused_p95_ms:.0f}",
            rss,
        )
    Console(width=160).print(table)


def measure(url: str, args: argparse.Namespace, queries: list[str], pid: int | None) -> list[Cell]:
    """Every (endpoint, concurrency) cell against ``url``, after a warm-up that reaches every worker."""
    plans = [
        ("/v1/retrieve", args.retrieve_requests, {"collection": args.collection, "k": args.k}),
        ("/v1/search", args.search_requests, {"collection": args.collection, "k": args.k}),
    ]
    for endpoint, _, body in plans:  # first-query costs (BM25 load, caches) of every worker stay out of the table
        asyncio.run(run_cell(url, endpoint, 8, 16, queries, body))
    cells = []
    for endpoint, n, body in plans:
        for c in [int(x) for x in args.clients.split(",")]:
            cell = asyncio.run(run_cell(url, endpoint, c, max(n, 2 * c), queries, body, pid))
            logger.info(
                "%s x%d: %s; p50 %.0f ms, p95 %.0f ms (200); refused p95 %.0f ms; RSS max %.0f MiB",
                endpoint,
                c,
                _codes(cell.codes),
                cell.p50_ms,
                cell.p95_ms,
                cell.refused_p95_ms,
                cell.rss_max_mb,
            )
            cells.append(cell)
    return cells


def measure_started(args: argparse.Namespace, queries: list[str]) -> dict[int, list[Cell]]:
    """Start a server per worker count (all over one ``chroma run`` store when any count is > 1) and measure it."""
    counts = [int(x) for x in args.workers.split(",")]
    results: dict[int, list[Cell]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = args.data_dir or Path(tmp)
        chroma = start_chroma(Path(tmp) / "chroma") if max(counts) > 1 else None
        try:
            for workers in counts:
                proc, url = start_server(
                    data_dir, args.collection, chroma[1] if chroma else None, workers, args.serve_arg
                )
                try:
                    results[workers] = measure(url, args, queries, proc.pid)
                finally:
                    proc.terminate()
                    proc.wait(timeout=60)
        finally:
            if chroma is not None:
                chroma[0].terminate()
                chroma[0].wait(timeout=30)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Latency, status codes and server RSS of /v1/retrieve and /v1/search.")
    parser.add_argument("--url", help="A running server (default: start one on a free loopback port).")
    parser.add_argument("--server-pid", type=int, help="With --url: the server's pid, to sample its RSS.")
    parser.add_argument(
        "--workers",
        default="1",
        help="Comma-separated `sieve serve --workers` counts to start "
        "and compare, e.g. 1,2 (any > 1 adds a `chroma run` store "
        "that every count then uses).",
    )
    parser.add_argument("--collection", default="sample")
    parser.add_argument("--data-dir", type=Path, help="Data folder for the started server (default: a temp dir).")
    parser.add_argument("--clients", default="1,8,32,64", help="Comma-separated concurrency levels.")
    parser.add_argument(
        "--retrieve-requests", type=int, default=96, help="Requests per /v1/retrieve cell (at least 2 per client)."
    )
    parser.add_argument(
        "--search-requests", type=int, default=64, help="Requests per /v1/search cell (at least 2 per client)."
    )
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument(
        "--serve-arg",
        action="append",
        default=[],
        help="Extra `sieve serve` argument for the started server (repeatable); the embedder's "
        "(--embed-backend=..., --embed-dtype=..., --bf16) also reach `sieve index`.",
    )
    parser.add_argument("--json", type=Path, help="Also write the cells (with the RSS series) as JSON here.")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request would drown the table
    queries = [t["question"] for t in read_tasks(SAMPLE_DIR / "tasks.jsonl")]
    load0 = os.getloadavg()[0]
    if args.url:
        results = {0: measure(args.url, args, queries, args.server_pid)}
    else:
        results = measure_started(args, queries)
    for workers, cells in results.items():
        where = args.url or f"{workers} worker(s)"
        print_table(
            cells,
            f"Sieve HTTP load ({os.cpu_count()} CPUs, {where}, heuristic policy, k={args.k}; "
            f"load average {load0:.1f} -> {os.getloadavg()[0]:.1f})",
        )
        print(markdown_table(cells))
    if args.json:
        args.json.write_text(
            json.dumps({w: [{**asdict(c), "rps": c.rps} for c in cells] for w, cells in results.items()}, indent=2)
        )
    # Refusals (429/503) are the server working as designed; anything else is a failure.
    return 1 if any(set(c.codes) - {"200", "429", "503"} for cells in results.values() for c in cells) else 0


if __name__ == "__main__":
    raise SystemExit(main())
