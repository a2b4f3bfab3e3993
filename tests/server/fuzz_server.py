"""Fuzz a fresh server with many more schemathesis cases than the test suite runs, and print the count.

    python tests/server/fuzz_server.py [--examples 150] [--seed 0]

Starts the real app under uvicorn on a loopback port with a throw-away data folder holding 60
passages of the sample corpus, fuzzes every OpenAPI operation with valid and invalid inputs,
prints the number of cases, the status mix and any 5xx (exit status 1 if there are any).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=150, help="Cases per operation and mode (positive/negative).")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    logging.basicConfig(level=logging.ERROR)
    sys.path.insert(0, str(HERE))
    from fuzzing import fuzz
    from live_server import start_server

    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.embeddings import Embedder
    from sieve.retriever.types import Document

    embedder = Embedder.from_config(RetrieverConfig(data_dir=Path(tempfile.mkdtemp())))
    with tempfile.TemporaryDirectory() as data:
        srv = start_server(embedder, Path(data), collection="fuzz")
        rows = [json.loads(line) for line in (ROOT / "data" / "sample" / "corpus.jsonl").open()][:60]
        srv.state.index("fuzz", create=True).writer.index_documents(
            [Document(doc_id=r["id"], text=r["text"], title=r["title"], source=r.get("source", "")) for r in rows],
            progress=False,
        )
        t0 = time.perf_counter()
        try:
            report = fuzz(srv.url, max_examples=args.examples, seed=args.seed)
        finally:
            srv.stop()
    print(f"schemathesis: {report.summary()} in {time.perf_counter() - t0:.0f} s")
    for label, n in sorted(report.by_operation.items()):
        print(f"  {n:6d}  {label}")
    for failure in report.failures:
        print("FAIL", failure)
    return 1 if report.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
