"""``summary.md`` tables and the PNG plots embedded in it.

Plots are drawn on an explicit Agg canvas (``matplotlib.figure.Figure``), so nothing changes
matplotlib's global backend and no display is needed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sieve.eval.exports import slug

if TYPE_CHECKING:
    from collections.abc import Sequence

Metrics = dict[str, float]


def _fmt(v: float | None, digits: int = 3) -> str:
    if v is None:
        return "—"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.{digits}f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|",
    ]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def mid_k(ks: Sequence[int]) -> int:
    """The cut-off the single-k columns use: 10 when scored, else the largest."""
    return 10 if 10 in ks else max(ks)


def source_tables(metrics: dict[str, Metrics], ks: Sequence[int]) -> list[str]:
    """Markdown tables (quality, then cost) of one source; ``metrics`` maps system -> aggregated metrics."""
    tables = [*quality_table(metrics, ks), "", *cost_table(metrics, ks)]
    if any(f"span_recall@{mid_k(ks)}" in m for m in metrics.values()):
        tables += ["", *span_table(metrics, ks)]
    return tables


def quality_table(metrics: dict[str, Metrics], ks: Sequence[int]) -> list[str]:
    """Recall and all-gold at every cut-off, precision and F1 at :func:`mid_k`, MRR and nDCG: one row per system."""
    k = mid_k(ks)
    header = [
        "system",
        *[f"R@{x}" for x in ks],
        *[f"All@{x}" for x in ks],
        f"P@{k}",
        f"F1@{k}",
        "MRR@10",
        "nDCG@10",
    ]
    rows = [
        [
            f"`{s}`",
            *[_fmt(m.get(f"recall@{x}")) for x in ks],
            *[_fmt(m.get(f"all_found@{x}")) for x in ks],
            _fmt(m.get(f"precision@{k}")),
            _fmt(m.get(f"f1@{k}")),
            _fmt(m.get("mrr@10")),
            _fmt(m.get("ndcg@10")),
        ]
        for s, m in metrics.items()
    ]
    return _table(header, rows)


def cost_table(metrics: dict[str, Metrics], ks: Sequence[int]) -> list[str]:
    """What each system spent: searches, turns, pruning, tokens and time."""
    kmax = max(ks)
    header = [
        "system",
        "traj. recall",
        "searches",
        "turns",
        "prune calls",
        "pruned chunks",
        "prune acc.",
        "episode tokens",
        f"returned tokens@{kmax}",
        "p50 ms",
        "p95 ms",
        "total s",
    ]
    rows = [
        [
            f"`{s}`",
            _fmt(m.get("trajectory_recall")),
            _fmt(m.get("searches"), 2),
            _fmt(m.get("turns"), 2),
            _fmt(m.get("prune_calls"), 2),
            _fmt(m.get("pruned_chunks"), 1),
            _fmt(m.get("prune_accuracy")),
            _fmt(m.get("tokens"), 0),
            _fmt(m.get(f"returned_tokens@{kmax}"), 0),
            _fmt(m.get("wall_ms_p50"), 1),
            _fmt(m.get("wall_ms_p95"), 1),
            _fmt(m.get("wall_s_total"), 1),
        ]
        for s, m in metrics.items()
    ]
    return _table(header, rows)


def span_table(metrics: dict[str, Metrics], ks: Sequence[int]) -> list[str]:
    """Chunk-level scores of a set with ``gold_spans``: span recall, all spans found, returned characters, char precision."""
    header = [
        "system",
        *[f"SR@{x}" for x in ks],
        *[f"AllSpans@{x}" for x in ks],
        *[f"chars@{x}" for x in ks],
        *[f"charP@{x}" for x in ks],
    ]
    rows = []
    for s, m in metrics.items():
        rows.append(
            [
                f"`{s}`",
                *[_fmt(m.get(f"span_recall@{x}")) for x in ks],
                *[_fmt(m.get(f"all_spans@{x}")) for x in ks],
                *[_fmt(m.get(f"returned_chars@{x}"), 0) for x in ks],
                *[_fmt(m.get(f"char_precision@{x}")) for x in ks],
            ]
        )
    return _table(header, rows)


def plot_recall_at_k(metrics: dict[str, Metrics], ks: Sequence[int], path: Path, title: str) -> Path:
    """Recall@k against k, one line per system."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for system, m in metrics.items():
        ax.plot(list(ks), [m.get(f"recall@{k}", 0.0) for k in ks], marker="o", label=system)
    ax.set_xlabel("k (distinct documents returned)")
    ax.set_ylabel("recall@k of gold documents")
    ax.set_xticks(list(ks))
    return _finish_plot(fig, ax, title, path)


def _finish_plot(fig: Any, ax: Any, title: str, path: Path) -> Path:
    """The styling both recall plots share, then the PNG written to ``path``."""
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    return path


def plot_recall_vs_tokens(metrics: dict[str, Metrics], ks: Sequence[int], path: Path, title: str) -> Path:
    """Recall@k against the tokens an LLM pipeline processes for it (log x), one line per system.

    x = the returned chunks' tokens at k (what a reader model pays) + the tokens the system's own
    LLM processed (agents; 0 for baselines and the no-LLM policy).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for system, m in metrics.items():
        xs = [m.get(f"returned_tokens@{k}", 0.0) + m.get("tokens", 0.0) for k in ks]
        ys = [m.get(f"recall@{k}", 0.0) for k in ks]
        ax.plot(xs, ys, marker="o", label=system)
        for x, y, k in zip(xs, ys, ks):
            ax.annotate(f"k={k}", (x, y), fontsize=6, xytext=(3, -8), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("tokens per task (returned chunks + agent episode)")
    ax.set_ylabel("recall@k of gold documents")
    return _finish_plot(fig, ax, title, path)


def write_summary_md(
    out_dir: Path,
    per_source: dict[str, dict[str, Metrics]],
    ks: Sequence[int],
    meta: dict[str, Any],
    *,
    plots: bool = True,
) -> Path:
    """Write ``summary.md`` (and ``plots/*.png`` it embeds); returns its path."""
    lines = [f"# Sieve evaluation: {', '.join(per_source)}", ""]
    lines += [
        f"- command: `{meta.get('command', '')}`",
        f"- collection: `{meta.get('collection')}` ({meta.get('n_chunks')} chunks, "
        f"embeddings {meta.get('embed_backend', 'torch')} {meta.get('embed_dtype')}{', pooled corpus' if meta.get('pooled') else ''})",
        f"- tasks: {', '.join(f'{s} {n}' for s, n in meta.get('n_tasks', {}).items())}",
        f"- every system is asked for {max(ks)} distinct documents; chunks count for their document, "
        "lists are de-duplicated by document before the cut at k; on sets with `gold_spans` every system is "
        f"asked for {max(ks)} chunks instead, R@k counts the documents of the first k chunks, and SR@k "
        "(`span_recall@k`) is the share of gold spans that a returned chunk of their document overlaps by at "
        "least half of the shorter of the two (chunk or span); charP@k = returned characters inside gold spans "
        "/ returned characters",
        f"- index build/check: {meta.get('index_seconds', 0):.1f}s; run wall time: {meta.get('run_seconds', 0):.1f}s "
        "(per-system totals below sum per-task times, so they survive resumes)",
        "- P@k / F1@k are over the returned set (hits / documents returned within k); "
        "All@k = share of tasks with every gold document in the top k",
        "- agents: traj. recall = share of gold documents shown at any point (pruned or not); searches count "
        "search + grep calls; prune acc. = share of pruned chunks not from a gold document; episode tokens = "
        "the trace's tokens_total (prompt + completion tokens over all turns; a no-LLM policy reports the "
        "context its view held each turn, i.e. what an LLM policy would have read)",
        f"- returned tokens@{max(ks)} = tokens of the chunks behind the top-{max(ks)} documents (what a "
        "reader model is handed); latencies are per task, on a shared 2-core CPU",
        "",
    ]
    plot_dir = out_dir / "plots"
    for source, metrics in per_source.items():
        lines += [f"## {source}", "", *source_tables(metrics, ks), ""]
        if plots and metrics:
            plot_dir.mkdir(parents=True, exist_ok=True)
            a = plot_recall_at_k(metrics, ks, plot_dir / f"recall_at_k_{slug(source)}.png", f"{source}: recall@k")
            b = plot_recall_vs_tokens(
                metrics, ks, plot_dir / f"recall_vs_tokens_{slug(source)}.png", f"{source}: recall vs tokens"
            )
            lines += [
                f"![recall@k on {source}](plots/{a.name})",
                f"![recall vs tokens on {source}](plots/{b.name})",
                "",
            ]
    path = out_dir / "summary.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


__all__ = [
    "cost_table",
    "mid_k",
    "plot_recall_at_k",
    "plot_recall_vs_tokens",
    "quality_table",
    "source_tables",
    "span_table",
    "write_summary_md",
]
