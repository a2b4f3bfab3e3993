"""Learning curves of learned-policy runs: a table every N updates and a PNG.

Each table row averages the N updates that end there (one batch is a few dozen episodes: noisy).
The PNG has three panels: the reward and its main components, returned recall and all-gold at
k, and searches per episode. :func:`seed_spread` combines the curves of several seeds, and
:func:`side_by_side` compares runs (e.g. an ablation) window by window. As a script it writes
all of these for a set of run folders:

    python -m sieve.train.learned.report --run seed0=runs/s0 --run seed1=runs/s1 --out report/ [--every 20]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

_TABLE = (
    ("reward", "reward"),
    ("f_beta", "F-beta"),
    ("traj_recall", "traj recall"),
    ("answer", "answer"),
    ("aux_penalty", "aux penalty"),
    ("recall", "recall@k"),
    ("all_gold", "all-gold@k"),
    ("searches", "searches/ep"),
    ("turns", "turns/ep"),
    ("pruned", "pruned/ep"),
)


def _value(row: dict[str, Any], key: str) -> float:
    if key in row and not isinstance(row[key], dict):
        return float(row[key])
    return float(row.get("components", {}).get(key, 0.0))


def window_means(rows: list[dict[str, Any]], every: int) -> list[dict[str, float]]:
    """One dict per window of ``every`` updates (the last window may be shorter)."""
    out = []
    for start in range(0, len(rows), every):
        win = rows[start : start + every]
        d = {key: sum(_value(r, key) for r in win) / len(win) for key, _ in _TABLE}
        d["update"] = win[-1]["update"]
        d["seconds"] = sum(r.get("rollout_s", 0.0) + r.get("update_s", 0.0) for r in win)
        d["cpu_seconds"] = sum(r.get("cpu_s", 0.0) for r in win)
        d["load"] = sum(r.get("load", 0.0) for r in win) / len(win)
        held = [r["extra"] for r in win if r.get("extra")]
        if held:
            d["heldout_recall"] = held[-1].get("heldout_recall", float("nan"))
        out.append(d)
    return out


def curve_table(rows: list[dict[str, Any]], every: int) -> str:
    """Markdown: one row per ``every`` updates."""
    cols = ["updates", *(label for _, label in _TABLE), "wall s", "CPU s", "load"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---:|" * len(cols)]
    for w in window_means(rows, every):
        lines.append(
            "| "
            + " | ".join(
                [
                    str(int(w["update"])),
                    *(f"{w[k]:.3f}" for k, _ in _TABLE),
                    f"{w['seconds']:.0f}",
                    f"{w['cpu_seconds']:.0f}",
                    f"{w['load']:.1f}",
                ]
            )
            + " |"
        )
    return "\n".join(lines)


def _smooth(values: list[float], n: int) -> list[float]:
    out = []
    for i in range(len(values)):
        win = values[max(0, i - n + 1) : i + 1]
        out.append(sum(win) / len(win))
    return out


def plot_curves(runs: dict[str, list[dict[str, Any]]], path: Path, smooth: int = 10, title: str = "") -> Path:
    """Reward (+ components), recall / all-gold and searches per episode against updates, one line per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    styles = ["-", "--", ":", "-."]
    for i, (name, rows) in enumerate(runs.items()):
        x = [r["update"] for r in rows]
        ls = styles[i % len(styles)]
        for key, color in (
            ("reward", "C0"),
            ("f_beta", "C1"),
            ("traj_recall", "C2"),
            ("answer", "C3"),
            ("aux_penalty", "C4"),
        ):
            axes[0].plot(
                x,
                _smooth([_value(r, key) for r in rows], smooth),
                ls,
                color=color,
                label=f"{key} ({name})" if len(runs) > 1 else key,
            )
        axes[1].plot(
            x,
            _smooth([_value(r, "recall") for r in rows], smooth),
            ls,
            color="C0",
            label=f"recall@k ({name})" if len(runs) > 1 else "recall@k",
        )
        axes[1].plot(
            x,
            _smooth([_value(r, "all_gold") for r in rows], smooth),
            ls,
            color="C1",
            label=f"all-gold@k ({name})" if len(runs) > 1 else "all-gold@k",
        )
        axes[2].plot(x, _smooth([_value(r, "searches") for r in rows], smooth), ls, color="C2", label=name)
    axes[0].set_title("episode reward and components")
    axes[1].set_title("returned recall (training batches)")
    axes[2].set_title("searches per episode")
    for ax in axes:
        ax.set_xlabel("RL update")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(f"{title} (moving average of {smooth} updates)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_curve_outputs(out: Path, rows: list[dict[str, Any]], every: int, title: str = "") -> dict[str, Any]:
    """``curve.md`` and ``curve.png`` in ``out``; returns first/last window means for the summary."""
    if not rows:
        return {}
    (out / "curve.md").write_text(curve_table(rows, every) + "\n", encoding="utf-8")
    plot_curves({"run": rows}, out / "curve.png", title=title)
    wins = window_means(rows, every)
    return {
        "curve_first_window": wins[0],
        "curve_last_window": wins[-1],
        "curve_table": str(out / "curve.md"),
        "curve_png": str(out / "curve.png"),
    }


def seed_spread(
    runs: dict[str, list[dict[str, Any]]],
    every: int,
    keys: tuple[str, ...] = ("reward", "recall", "all_gold", "searches"),
) -> str:
    """Markdown: per window, the mean ± standard deviation across runs (seeds) of ``keys``."""
    wins = {name: window_means(rows, every) for name, rows in runs.items()}
    n = min(len(w) for w in wins.values())
    cols = ["updates", *keys]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---:|" * len(cols)]
    for i in range(n):
        cells = [str(int(next(iter(wins.values()))[i]["update"]))]
        for key in keys:
            vals = [w[i][key] for w in wins.values()]
            mu = sum(vals) / len(vals)
            sd = math.sqrt(sum((v - mu) ** 2 for v in vals) / len(vals))
            cells.append(f"{mu:.3f} ± {sd:.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def side_by_side(
    runs: dict[str, list[dict[str, Any]]],
    every: int,
    keys: tuple[str, ...] = ("searches", "recall", "all_gold", "reward"),
) -> str:
    """Markdown: per window, ``keys`` of every run next to each other."""
    wins = {name: window_means(rows, every) for name, rows in runs.items()}
    n = min(len(w) for w in wins.values())
    cols = ["updates", *(f"{k} ({name})" for k in keys for name in runs)]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---:|" * len(cols)]
    for i in range(n):
        cells = [str(int(next(iter(wins.values()))[i]["update"]))]
        cells += [f"{wins[name][i][k]:.3f}" for k in keys for name in runs]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def load_curve(run_dir: Path) -> list[dict[str, Any]]:
    """The ``curve.jsonl`` rows of a run folder."""
    path = Path(run_dir) / "curve.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Tables and plots of learned-policy RL runs.")
    ap.add_argument("--run", action="append", required=True, help="NAME=RUN_DIR (repeat).")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--every", type=int, default=20)
    ap.add_argument("--title", default="")
    args = ap.parse_args(argv)
    runs = {}
    for spec in args.run:
        name, _, path = spec.partition("=")
        runs[name] = load_curve(Path(path))
    args.out.mkdir(parents=True, exist_ok=True)
    parts = [f"# {args.title or 'Learned-policy RL runs'}", ""]
    for name, rows in runs.items():
        parts += [f"## {name}", "", curve_table(rows, args.every), ""]
    if len(runs) > 1:
        parts += [
            "## Mean ± standard deviation across runs",
            "",
            seed_spread(runs, args.every),
            "",
            "## Side by side",
            "",
            side_by_side(runs, args.every),
            "",
        ]
    (args.out / "curves.md").write_text("\n".join(parts), encoding="utf-8")
    plot_curves(runs, args.out / "curves.png", title=args.title)


if __name__ == "__main__":
    main()


__all__ = [
    "curve_table",
    "load_curve",
    "plot_curves",
    "seed_spread",
    "side_by_side",
    "window_means",
    "write_curve_outputs",
]
