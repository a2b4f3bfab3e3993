"""Load test of the HTTP server: throughput and p50/p95 latency of ``/v1/retrieve`` and ``/v1/search``.

    python -m sieve.eval.load_test                       # starts `sieve serve` on a free loopback port
    python -m sieve.eval.load_test --url http://127.0.0.1:8000 --collection sample

Bounded and loopback only: a fixed number of requests per (endpoint, concurrency) cell, at 1, 8
and 32 concurrent clients (httpx async), queries drawn in turn from the sample tasks. Without
``--url`` it indexes the shipped sample corpus into a throw-away data folder and starts the
server as a subprocess, so the load generator and the server do not share one interpreter.
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
from dataclasses import dataclass
from pathlib import Path

from sieve._net import free_port, wait_until_healthy
from sieve.data import SAMPLE_DIR
from sieve.eval.data import read_tasks
from sieve.eval.metrics import percentile

logger = logging.getLogger(__name__)


@dataclass
class Cell:
    endpoint: str
    clients: int
    requests: int
    errors: int
    seconds: float
    p50_ms: float
    p95_ms: float

    @property
    def rps(self) -> float:
        return (self.requests - self.errors) / self.seconds if self.seconds else 0.0


async def run_cell(url: str, endpoint: str, clients: int, n: int, queries: list[str], body: dict) -> Cell:
    import httpx

    latencies: list[float] = []
    errors = 0
    counter = iter(range(n))

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal errors
        for i in counter:  # shared iterator: the n requests are split among the clients
            t0 = time.perf_counter()
            try:
                r = await client.post(endpoint, json={**body, "query": queries[i % len(queries)]})
                ok = r.status_code == 200
            except httpx.HTTPError:
                ok = False
            latencies.append((time.perf_counter() - t0) * 1000)
            errors += 0 if ok else 1

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as client:
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(client) for _ in range(clients)))
        seconds = time.perf_counter() - t0
    return Cell(endpoint, clients, n, errors, seconds, percentile(latencies, 50), percentile(latencies, 95))


def start_server(data_dir: Path, collection: str, bf16: bool) -> tuple[subprocess.Popen, str]:
    """Index the sample corpus (once per data folder) and start ``sieve serve`` on a free port."""
    from sieve.runtime import RUNTIME_ENV

    # The child inherits this environment (PATH, the venv...), plus offline switches and its data folder.
    env = {**os.environ, **RUNTIME_ENV, "SIEVE_DATA_DIR": str(data_dir)}
    cli = [sys.executable, "-c", "from sieve.server.cli import main; main()"]
    logger.info("Indexing the sample corpus into %s", data_dir)
    subprocess.run([*cli, "index", str(SAMPLE_DIR / "corpus.jsonl"), "-c", collection, "--json",
                    *(["--bf16"] if bf16 else [])], env=env, check=True, stdout=subprocess.DEVNULL)
    port = free_port()
    proc = subprocess.Popen([*cli, "serve", "--port", str(port), "-c", collection, "--preload", collection,
                             "--log-level", "warning", *(["--bf16"] if bf16 else [])], env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url + "/healthz", proc=proc, name="sieve serve", timeout_s=300, request_timeout_s=2)
    except RuntimeError:
        proc.terminate()
        raise
    return proc, url


def print_table(cells: list[Cell], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for col in ("endpoint", "clients", "requests", "errors", "req/s", "p50 ms", "p95 ms"):
        table.add_column(col, justify="left" if col == "endpoint" else "right")
    for c in cells:
        table.add_row(c.endpoint, str(c.clients), str(c.requests), str(c.errors), f"{c.rps:.1f}", f"{c.p50_ms:.0f}",
                      f"{c.p95_ms:.0f}")
    Console().print(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Throughput and latency of /v1/retrieve and /v1/search.")
    parser.add_argument("--url", help="A running server (default: start one on a free loopback port).")
    parser.add_argument("--collection", default="sample")
    parser.add_argument("--data-dir", type=Path, help="Data folder for the started server (default: a temp dir).")
    parser.add_argument("--clients", default="1,8,32", help="Comma-separated concurrency levels.")
    parser.add_argument("--retrieve-requests", type=int, default=96, help="Requests per /v1/retrieve cell.")
    parser.add_argument("--search-requests", type=int, default=64, help="Requests per /v1/search cell.")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--bf16", action="store_true", help="bf16 embeddings in the started server.")
    parser.add_argument("--json", type=Path, help="Also write the cells as JSON here.")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request would drown the table
    levels = [int(x) for x in args.clients.split(",")]
    queries = [t["question"] for t in read_tasks(SAMPLE_DIR / "tasks.jsonl")]

    proc = None
    tmp = None
    url = args.url
    if url is None:
        tmp = tempfile.TemporaryDirectory()
        proc, url = start_server(args.data_dir or Path(tmp.name), args.collection, args.bf16)
    try:
        plans = [("/v1/retrieve", args.retrieve_requests, {"collection": args.collection, "k": args.k}),
                 ("/v1/search", args.search_requests, {"collection": args.collection, "k": args.k})]
        for endpoint, _, body in plans:  # warm-up: first-query costs (BM25 load, caches) stay out of the table
            asyncio.run(run_cell(url, endpoint, 1, 3, queries, body))
        cells = []
        for endpoint, n, body in plans:
            for c in levels:
                cell = asyncio.run(run_cell(url, endpoint, c, max(n, c), queries, body))
                logger.info("%s x%d: %.1f req/s, p50 %.0f ms, p95 %.0f ms, %d errors", endpoint, c, cell.rps,
                            cell.p50_ms, cell.p95_ms, cell.errors)
                cells.append(cell)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
        if tmp is not None:
            tmp.cleanup()
    print_table(cells, f"Sieve HTTP load ({os.cpu_count()} CPUs, {url}, heuristic policy, k={args.k})")
    if args.json:
        args.json.write_text(json.dumps([{**c.__dict__, "rps": c.rps} for c in cells], indent=2))
    return 1 if any(c.errors for c in cells) else 0


if __name__ == "__main__":
    raise SystemExit(main())
