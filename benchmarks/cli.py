"""CLI start-up benchmark: wall time of whole ``sieve`` processes, as a user waits for them.

Run ``python -m sieve.benchmarks.cli`` (after ``sieve demo`` has indexed the ``sample`` collection);
it prints one markdown table with the min / median / max wall seconds of

* ``sieve --help``
* ``sieve collections``
* ``sieve retrieve QUERY --mode bm25 -c sample``
* ``sieve retrieve QUERY --mode dense -c sample``
* ``sieve retrieve QUERY --mode hybrid -c sample``
* ``sieve search QUERY -c sample`` (the default policy, step log on)

Before/after: ``--baseline`` names another ``sieve`` executable (say, one installed from ``main`` in its
own venv) and ``--baseline-data-dir`` its data folder, where that version's ``sieve demo`` ran (both data
folders go to the commands as ``--data-dir``); the two then run in turn, command by command, and the
table gains its medians and the after/before ratio.

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
    data_dir: str = field(
        default="", metadata={"help": "--data-dir for --sieve (default: its SIEVE_DATA_DIR or default folder)."}
    )
    baseline: str = field(default="", metadata={"help": "A second sieve executable to compare with (before)."})
    baseline_data_dir: str = field(default="", metadata={"help": "--data-dir for --baseline."})
    commands: str = field(default="help,collections,bm25,dense,hybrid,search", metadata={"help": "Which rows to run."})


def sieve_executable(given: str = "") -> str:
    if given:
        return given
    beside = os.path.join(os.path.dirname(sys.executable), "sieve")
    return beside if os.path.exists(beside) else (shutil.which("sieve") or "sieve")


def commands(cfg: CliBenchConfig) -> dict[str, list[str]]:
    """Row name -> the arguments after the executable."""
    rows = {
        "help": ["--help"],
        "collections": ["collections"],
        "bm25": ["retrieve", QUERY, "--mode", "bm25", "-c", cfg.collection],
        "dense": ["retrieve", QUERY, "--mode", "dense", "-c", cfg.collection],
        "hybrid": ["retrieve", QUERY, "--mode", "hybrid", "-c", cfg.collection],
        "search": ["search", QUERY, "-c", cfg.collection],
    }
    wanted = [c.strip() for c in cfg.commands.split(",") if c.strip()]
    unknown = sorted(set(wanted) - set(rows))
    if unknown:
        raise SystemExit(f"Expected --commands from {sorted(rows)}, got {unknown}")
    return {name: rows[name] for name in wanted}


def with_data_dir(argv: list[str], data_dir: str) -> list[str]:
    """``argv`` reading ``data_dir`` (``--data-dir``, so the child's environment stays as it is); help reads none."""
    return [*argv, "--data-dir", data_dir] if data_dir and "--help" not in argv else argv


def run_once(argv: list[str]) -> float:
    """Wall seconds of one execution; a failing command stops the benchmark with its stderr."""
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return wall


def time_pair(after: list[str], before: list[str] | None, cfg: CliBenchConfig) -> tuple[list[float], list[float]]:
    """``runs`` walls of ``after`` (and of ``before``, in turn with it, so drift in load hits both alike)."""
    after = with_data_dir(after, cfg.data_dir)
    before = with_data_dir(before, cfg.baseline_data_dir) if before else None
    walls_after: list[float] = []
    walls_before: list[float] = []
    for i in range(cfg.warmup + cfg.runs):
        a = run_once(after)
        b = run_once(before) if before else None
        if i >= cfg.warmup:
            walls_after.append(a)
            if b is not None:
                walls_before.append(b)
    return walls_after, walls_before


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for f in fields(CliBenchConfig):
        parser.add_argument(
            "--" + f.name.replace("_", "-"),
            dest=f.name,
            type=type(f.default),
            default=f.default,
            help=f.metadata["help"],
        )
    cfg = CliBenchConfig(**vars(parser.parse_args(argv)))
    exe, base = sieve_executable(cfg.sieve), cfg.baseline
    load = os.getloadavg()[0]
    if base:
        print("| command | runs | before median s | after min s | after median s | after max s | after/before |")
        print("|---|---|---|---|---|---|---|")
    else:
        print("| command | runs | min s | median s | max s |\n|---|---|---|---|---|")
    for args in commands(cfg).values():
        after, before = time_pair([exe, *args], [base, *args] if base else None, cfg)
        shown = " ".join(a if " " not in a else repr(a) for a in ["sieve", *args])
        row = f"{min(after):.2f} | {statistics.median(after):.2f} | {max(after):.2f}"
        if base:
            ratio = statistics.median(after) / statistics.median(before)
            print(f"| `{shown}` | {len(after)} | {statistics.median(before):.2f} | {row} | {ratio:.2f} |", flush=True)
        else:
            print(f"| `{shown}` | {len(after)} | {row} |", flush=True)
    print(f"\n1-minute load average at start: {load:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
