"""CLI start-up benchmark: wall time of whole ``sieve`` processes, as a user waits for them.

Run ``python -m sieve.eval.bench_cli`` (after ``sieve demo`` has indexed the ``sample`` collection);
it prints one markdown table with the min / median / max wall seconds of

* ``sieve --help``
* ``sieve collections``
* ``sieve retrieve QUERY --mode bm25 -c sample``
* ``sieve retrieve QUERY --mode hybrid -c sample``

Each command runs ``--warmup`` times unmeasured (file-system caches), then ``--runs`` times. Whole
processes are timed from outside (``subprocess``), interpreter start-up and imports included: that is
what a user pays on every call. Timings on a shared machine are noisy: quote the median, with the load.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field, fields

QUERY = "Charles Lindbergh aircraft"


@dataclass
class CliBenchConfig:
    runs: int = field(default=5, metadata={"help": "Measured runs per command."})
    warmup: int = field(default=1, metadata={"help": "Unmeasured runs per command first."})
    collection: str = field(default="sample", metadata={"help": "Collection the retrieve commands query."})
    sieve: str = field(default="", metadata={"help": "The sieve executable (default: the one beside this Python)."})
    commands: str = field(default="help,collections,bm25,hybrid", metadata={"help": "Which rows to run."})


def sieve_executable(given: str = "") -> str:
    if given:
        return given
    beside = os.path.join(os.path.dirname(sys.executable), "sieve")
    return beside if os.path.exists(beside) else (shutil.which("sieve") or "sieve")


def commands(cfg: CliBenchConfig) -> dict[str, list[str]]:
    exe = sieve_executable(cfg.sieve)
    rows = {
        "help": [exe, "--help"],
        "collections": [exe, "collections"],
        "bm25": [exe, "retrieve", QUERY, "--mode", "bm25", "-c", cfg.collection],
        "hybrid": [exe, "retrieve", QUERY, "--mode", "hybrid", "-c", cfg.collection],
    }
    wanted = [c.strip() for c in cfg.commands.split(",") if c.strip()]
    unknown = sorted(set(wanted) - set(rows))
    if unknown:
        raise SystemExit(f"Expected --commands from {sorted(rows)}, got {unknown}")
    return {name: rows[name] for name in wanted}


def time_command(argv: list[str], runs: int, warmup: int) -> list[float]:
    """Wall seconds of ``runs`` executions; a failing command stops the benchmark with its stderr."""
    out = []
    for i in range(warmup + runs):
        t0 = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
        if i >= warmup:
            out.append(wall)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for f in fields(CliBenchConfig):
        parser.add_argument("--" + f.name, type=type(f.default), default=f.default, help=f.metadata["help"])
    cfg = CliBenchConfig(**vars(parser.parse_args(argv)))
    load = os.getloadavg()[0]
    print(f"| command | runs | min s | median s | max s |\n|---|---|---|---|---|")
    for name, argv_ in commands(cfg).items():
        walls = time_command(argv_, cfg.runs, cfg.warmup)
        shown = " ".join(a if " " not in a else repr(a) for a in ["sieve", *argv_[1:]])
        print(f"| `{shown}` | {len(walls)} | {min(walls):.2f} | {statistics.median(walls):.2f} | {max(walls):.2f} |",
              flush=True)
    print(f"\n1-minute load average at start: {load:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
