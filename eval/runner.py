"""One evaluation run: data dirs -> cached index -> every system on every task -> report folder.

Writes ``results.jsonl`` (resumable), ``summary.json``, ``summary.md`` with plots, and the
BrowseComp-Plus / TREC exports. ``sieve eval`` (``cli/commands/evaluate.py``) is a thin CLI
over :func:`run_eval`.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sieve.core.errors import InvalidInput
from sieve.eval.data import load_sets, open_eval_index
from sieve.eval.evaluator import RESULTS_FILE, RetrievalEvaluator, SequentialEvaluator, load_results
from sieve.eval.exports import write_bcp, write_trec
from sieve.eval.report import write_summary_md
from sieve.eval.systems import make_system, parse_systems
from sieve.eval.tuning import tuning_overlap

if TYPE_CHECKING:
    from collections.abc import Callable

    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.embeddings import Embedder
    from sieve.retriever.index import CorpusIndex

    from sieve.eval.data import EvalSet
    from sieve.eval.systems import System

logger = logging.getLogger(__name__)


@dataclass
class EvalConfig:
    data: list[Path] = field(metadata={"help": "Data dirs (corpus.jsonl + tasks.jsonl); several = pooled corpus."})
    systems: list[str] = field(
        default_factory=lambda: ["dense", "bm25", "hybrid", "agent:heuristic"],
        metadata={"help": "Systems: retrieval modes and agent[:<policy>[:nofloor]] (sieve.eval.systems.systems_help)."},
    )
    ks: list[int] = field(default_factory=lambda: [5, 10, 20], metadata={"help": "Cut-offs k scored."})
    limit: int | None = field(default=None, metadata={"help": "Only the first N tasks of each data dir."})
    out: Path = field(default=Path("report"), metadata={"help": "Report folder (results.jsonl is resumed from)."})
    exports: bool = field(default=True, metadata={"help": "Write BrowseComp-Plus and TREC run files."})
    plots: bool = field(default=True, metadata={"help": "Draw the PNG plots embedded in summary.md."})
    progress: bool = field(default=True, metadata={"help": "Show progress bars."})
    command: str = field(default="", metadata={"help": "The command line, recorded in the summary."})
    policy_path: Path | None = field(
        default=None,
        metadata={"help": "Checkpoint folder of agent:learned (default: the checkpoint shipped with Sieve)."},
    )
    agent: dict[str, Any] = field(
        default_factory=dict,
        metadata={"help": "AgentConfig overrides for every agent system (model endpoint, floor, max_turns, ...)."},
    )

    def __post_init__(self) -> None:
        self.data = [Path(d) for d in self.data]
        self.out = Path(self.out)
        self.policy_path = Path(self.policy_path) if self.policy_path is not None else None
        self.systems = parse_systems(",".join(self.systems))
        if not self.data:
            raise InvalidInput("Expected at least one data dir, got none")
        if not self.ks or any(k < 1 for k in self.ks):
            raise InvalidInput(f"Expected positive cut-offs k, got {self.ks}")
        self.ks = sorted(set(self.ks))
        if self.limit is not None and self.limit < 1:
            raise InvalidInput(f"Expected limit >= 1 or None, got {self.limit}")


@dataclass
class EvalReport:
    """What :func:`run_eval` produced: metrics per source and system, and where the files are."""

    metrics: dict[str, dict[str, dict[str, float]]]  # source -> system -> metric -> value
    flat: dict[str, dict[str, float]]  # system -> evaluator keys ({source}_recall@10 ...)
    primary_metric: str
    out_dir: Path
    calls: dict[str, int]  # system -> system calls made by this run (0 = fully resumed)
    meta: dict[str, Any]


def run_eval(
    config: EvalConfig,
    retriever_config: RetrieverConfig,
    *,
    embedder: Embedder | None = None,
    index: CorpusIndex | None = None,
    system_factory: Callable[..., System] | None = None,
) -> EvalReport:
    """Run every system of ``config`` on every task and write the report folder.

    Args:
        config: what to run.
        retriever_config: where the cached index lives and how it is embedded (``--bf16``).
        embedder: a loaded embedder to share (loaded from ``retriever_config`` if omitted).
        index: an already indexed collection holding the corpus (skips the cached-index step;
            tests pass the shared sample index).
        system_factory: builds a system from (spec, index, depth); tests wrap it to count calls
            (default: :func:`make_system` with ``config.agent`` as the agents' overrides).

    Raises:
        NotFound / InvalidInput: a data dir lacks its files or holds malformed lines.
    """
    t_start = time.perf_counter()
    factory = system_factory or _default_factory(config)
    sets, maps, tuning = _task_sets(config)
    t0 = time.perf_counter()
    if index is None:
        index = open_eval_index(sets, maps, retriever_config, embedder, progress=config.progress)
    index_seconds = time.perf_counter() - t0
    depth = max(config.ks)
    out_dir = config.out
    out_dir.mkdir(parents=True, exist_ok=True)
    evaluator = SequentialEvaluator(
        [RetrievalEvaluator(s.tasks, config.ks, s.name, progress=config.progress) for s in sets]
    )
    metrics, flat, calls = _run_systems(config, sets, index, factory, evaluator)
    # Exports and summaries cover exactly this run's (system, task) pairs, fresh or resumed.
    wanted = {(name, t.source, t.task_id) for name in flat for s in sets for t in s.tasks}
    rows = [r for key, r in load_results(out_dir / RESULTS_FILE).items() if key in wanted]
    if config.exports:
        write_bcp(rows, out_dir)
        write_trec(rows, out_dir, depth)
    meta = _meta(config, sets, maps, index, list(flat))
    meta["index_seconds"], meta["run_seconds"] = index_seconds, time.perf_counter() - t_start
    meta["calls"], meta["tuning_overlap"] = calls, tuning
    meta["config"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items() if k != "data"}
    summary = {"meta": meta, "primary_metric": evaluator.primary_metric, "metrics": metrics, "flat": flat}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    write_summary_md(out_dir, metrics, config.ks, meta, plots=config.plots)
    return EvalReport(
        metrics=metrics, flat=flat, primary_metric=evaluator.primary_metric, out_dir=out_dir, calls=calls, meta=meta
    )


def _default_factory(config: EvalConfig) -> Callable[..., System]:
    """:func:`make_system` with ``config.agent`` as every agent's overrides."""

    def system_factory(spec: str, index: CorpusIndex, depth: int, **extra: Any) -> System:
        return make_system(spec, index, depth, **{**config.agent, **extra})

    return system_factory


def _task_sets(config: EvalConfig) -> tuple[list[EvalSet], dict[str, dict[str, str]], dict[str, dict[str, Any]]]:
    """The data dirs' task sets (the first ``limit`` tasks of each, those with gold ids), their id renames,
    and which tasks are declared tuning data."""
    sets, maps = load_sets(config.data)
    if config.limit is not None:
        for s in sets:
            s.tasks = s.tasks[: config.limit]
    tuning = tuning_overlap(sets)
    for s in sets:
        no_gold = [t.task_id for t in s.tasks if not t.gold_ids]
        if no_gold:
            logger.warning("Skipping %d tasks of %s without gold ids (e.g. %s)", len(no_gold), s.name, no_gold[0])
            s.tasks = [t for t in s.tasks if t.gold_ids]
    return sets, maps, tuning


def _run_systems(
    config: EvalConfig,
    sets: list[EvalSet],
    index: CorpusIndex,
    factory: Callable[..., System],
    evaluator: SequentialEvaluator,
) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, dict[str, float]], dict[str, int]]:
    """Every system on every set: (source -> system -> metrics, system -> evaluator keys, system -> calls made)."""
    depth = max(config.ks)
    metrics: dict[str, dict[str, dict[str, float]]] = {s.name: {} for s in sets}
    flat: dict[str, dict[str, float]] = {}
    calls: dict[str, int] = {}
    for spec in config.systems:
        # The embedder caches query vectors: without this, every system after the first would
        # find the questions pre-embedded and report a flattering latency.
        index.embedder.clear_cache()
        system = (
            factory(spec, index, depth, policy_path=config.policy_path)
            if config.policy_path is not None and spec == "agent:learned"
            else factory(spec, index, depth)
        )
        logger.info("Evaluating %s on %s", system.name, ", ".join(s.name for s in sets))
        flat[system.name] = evaluator(system, config.out)
        calls[system.name] = evaluator.calls
        for s in sets:
            prefix = f"{s.name}_"
            metrics[s.name][system.name] = {
                k[len(prefix) :]: v for k, v in flat[system.name].items() if k.startswith(prefix)
            }
    return metrics, flat, calls


def _meta(
    config: EvalConfig,
    sets: list[EvalSet],
    maps: dict[str, dict[str, str]],
    index: CorpusIndex,
    systems: list[str],
) -> dict[str, Any]:
    """What ran on what: the command, data, systems, cut-offs and the index they searched."""
    return {
        "command": config.command,
        "data": [str(p) for p in config.data],
        "systems": systems,
        "ks": config.ks,
        "limit": config.limit,
        "collection": index.name,
        "n_chunks": index.count(),
        "embed_dtype": index.config.embed_dtype,
        "embed_backend": index.config.embed_backend,
        "pooled": len(sets) > 1,
        "n_tasks": {s.name: len(s.tasks) for s in sets},
        "id_renames": {k: len(v) for k, v in maps.items()},
        "policy_path": str(config.policy_path) if config.policy_path else None,
    }


def agent_recall_per_task(
    data: Path, retriever_config: RetrieverConfig, embedder: Embedder, out: Path, *, progress: bool = True
) -> dict[str, float]:
    """Per task of the data dir ``data``, the default agent's span recall@10 (recall@10 on a set without
    spans), with ``embedder``: how ``sieve train embedder --eval-data`` scores labelled questions."""
    report = run_eval(
        EvalConfig(
            data=[data], systems=["agent"], ks=[5, 10, 20], out=out, exports=False, plots=False, progress=progress
        ),
        retriever_config,
        embedder=embedder,
    )
    rows = [json.loads(line) for line in (report.out_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    key = "span_recall@10" if any("span_recall@10" in r["metrics"] for r in rows) else "recall@10"
    return {r["task_id"]: float(r["metrics"][key]) for r in rows}


__all__ = ["EvalConfig", "EvalReport", "agent_recall_per_task", "run_eval"]
