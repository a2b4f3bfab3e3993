"""``sieve train all``: index → synthesize → RL → held-out report, in one command.

Two routes. The default, ``learned`` (CPU, minutes): GRPO of the small learned-policy network,
starting from the checkpoint shipped with Sieve, then a report comparing the heuristic, the
shipped checkpoint and the retrained one on synthesized tasks held out from training (and on
labelled questions of the corpus, if given). ``llm`` (GPU machines): SFT warm start of a
language model on heuristic trajectories, then GRPO, then the same kind of report.

Every stage writes into ``OUT`` (tasks, ``rl/`` or ``sft/`` + ``rl/``, ``report.md``); indexing,
synthesis and the learned RL stage resume where an interrupted run stopped.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from sieve.errors import InvalidInput
from sieve.train.config import EpisodeConfig, split_tasks

if TYPE_CHECKING:
    from sieve.retriever.config import RetrieverConfig

logger = logging.getLogger(__name__)


@dataclass
class PipelineConfig:
    corpus: Path = field(default=Path("corpus.jsonl"), metadata={"help": "File or folder to index."})
    collection: str = field(default="default", metadata={"help": "Collection name."})
    out: Path = field(default=Path("runs/train"), metadata={"help": "Run folder."})
    route: Literal["learned", "llm"] = field(default="learned", metadata={
        "help": "learned: the small policy network by GRPO (CPU); llm: SFT + GRPO of a language model (GPU)."})
    n_tasks: int = field(default=60, metadata={"help": "Tasks to synthesize."})
    generator: Literal["auto", "heuristic", "claims"] = field(default="auto", metadata={
        "help": "Task writer: heuristic (multi-hop templates), claims (single-hop claims from finding sentences) "
                "or auto (templates first; claims fill up what they leave, e.g. on scientific abstracts)."})
    rl_minutes: float | None = field(default=None, metadata={"help": "learned: wall-clock budget of the RL stage."})
    eval_tasks: Path | None = field(default=None, metadata={
        "help": "Labelled questions of this corpus to report on as well (never trained on)."})
    holdout: float = field(default=0.25, metadata={"help": "Share of tasks held out for the report."})
    rl_steps: int | None = field(default=None, metadata={"help": "GRPO updates (learned: 200; llm: 10)."})
    sft_epochs: float = field(default=1.0, metadata={"help": "SFT epochs."})
    model_path: str | None = field(default=None, metadata={"help": "Student (default SmolLM2-135M)."})
    seed: int = field(default=0, metadata={"help": "Synthesis and split seed."})
    episode: EpisodeConfig = field(default_factory=lambda: EpisodeConfig(
        budget_tokens=1536, max_turns=3, search_k=3, search_tokens=512, max_new_tokens=96, heuristic_queries=2))

    def __post_init__(self) -> None:
        self.corpus, self.out = Path(self.corpus), Path(self.out)
        if not self.corpus.exists():
            raise InvalidInput(f"Expected --corpus to be an existing file or folder, got {str(self.corpus)!r}")
        if self.n_tasks < 4:
            raise InvalidInput(f"Expected n_tasks >= 4 (train and held-out both need tasks), got {self.n_tasks}")
        if self.generator not in ("auto", "heuristic", "claims"):
            raise InvalidInput(f"Expected generator in ('auto', 'heuristic', 'claims'), got {self.generator!r}")
        if self.route not in ("learned", "llm"):
            raise InvalidInput(f"Expected route in ('learned', 'llm'), got {self.route!r}")
        if self.eval_tasks is not None and not Path(self.eval_tasks).is_file():
            raise InvalidInput(f"Expected --eval-tasks to be an existing JSONL file, got {str(self.eval_tasks)!r}")


def _write(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tasks), encoding="utf-8")
    return path


def run_pipeline(cfg: PipelineConfig, retriever_config: RetrieverConfig, *, progress: bool = True) -> dict[str, Any]:
    from sieve.retriever import CorpusIndex
    from sieve.eval.data import read_tasks
    from sieve.train.synth import SynthConfig, no_tasks_message, synthesize

    t0 = time.perf_counter()
    cfg.out.mkdir(parents=True, exist_ok=True)
    index = CorpusIndex.open(retriever_config, cfg.collection, create=True)
    indexed = index.index_path(cfg.corpus, progress=progress)
    logger.info("Indexed %s: %d chunks written, %d unchanged documents", cfg.corpus, indexed.chunks_written,
                indexed.unchanged)
    t_synth = time.perf_counter()
    writers = ("heuristic", "claims") if cfg.generator == "auto" else (cfg.generator,)
    for generator in writers:
        synth = synthesize(index, cfg.out / "tasks.jsonl", SynthConfig(n=cfg.n_tasks, seed=cfg.seed,
                                                                       generator=generator), progress=progress)
        if synth.written + synth.existing >= cfg.n_tasks:
            break
        if generator != writers[-1]:
            logger.info("The template writer wrote %d of %d tasks; claims fill up the rest",
                        synth.written + synth.existing, cfg.n_tasks)
    synth_s = time.perf_counter() - t_synth
    empty = no_tasks_message(synth, writers[-1], str(cfg.corpus))
    if empty:
        raise InvalidInput(f"{empty} (the index of {cfg.corpus} is kept in collection {cfg.collection!r}.)")
    tasks = read_tasks(cfg.out / "tasks.jsonl")
    train_tasks, held = split_tasks(tasks, cfg.holdout, cfg.seed)
    _write(cfg.out / "train_tasks.jsonl", train_tasks)
    _write(cfg.out / "heldout_tasks.jsonl", held)
    if cfg.route == "learned":
        result = _learned_route(cfg, index, synth, train_tasks, held, progress)
    else:
        result = _llm_route(cfg, index, synth, train_tasks, held, progress)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    result["stage_seconds"] = {"index": round(indexed.seconds, 1), "synth": round(synth_s, 1), **result.get(
        "stage_seconds", {})}
    result["config"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()}
    (cfg.out / "report.json").write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    return result


def _learned_route(cfg: PipelineConfig, index: Any, synth: Any, train_tasks: list[dict[str, Any]],
                   held: list[dict[str, Any]], progress: bool) -> dict[str, Any]:
    """GRPO of the learned policy from the shipped checkpoint; report heuristic / shipped / retrained."""
    from sieve.agent.config import AgentConfig
    from sieve.agent.policies.heuristic import HeuristicPolicy
    from sieve.agent.policies.learned import LearnedPolicy
    from sieve.eval.data import read_tasks
    from sieve.train.learned import LearnedRLConfig, run_learned_rl
    from sieve.train.learned.trainer import policy_check

    rl_cfg = LearnedRLConfig(tasks=cfg.out / "train_tasks.jsonl", out=cfg.out / "rl", init="default",
                             updates=cfg.rl_steps or 200, minutes=cfg.rl_minutes, holdout=0.0, seed=cfg.seed)
    t0 = time.perf_counter()
    rl = run_learned_rl(index, rl_cfg, progress=progress)
    rl_s = time.perf_counter() - t0
    policies = {"heuristic": HeuristicPolicy(AgentConfig(k=rl_cfg.k)), "learned (shipped)": LearnedPolicy.load(None),
                "learned (retrained)": LearnedPolicy.load(rl["model_dir"])}
    sets = {"held-out synthesized tasks": held}
    if cfg.eval_tasks is not None:
        sets["labelled questions (--eval-tasks)"] = read_tasks(cfg.eval_tasks)
    t0 = time.perf_counter()
    evals = {s: {name: policy_check(index, p, tasks, rl_cfg) for name, p in policies.items()}
             for s, tasks in sets.items() if tasks}
    eval_s = time.perf_counter() - t0
    lines = [f"# sieve train all: {cfg.corpus}", "",
             f"{synth.written + synth.existing} synthesized tasks ({len(train_tasks)} train, {len(held)} held out); "
             f"{rl['updates']} GRPO updates of the learned policy from the shipped checkpoint in "
             f"{rl['rl_seconds'] / 60:.1f} min (curves: `rl/curve.md`, `rl/curve.png`).", ""]
    for s, rows in evals.items():
        lines += [f"## {s}", "", f"| policy | tasks | recall@{rl_cfg.k} | all-gold@{rl_cfg.k} | traj recall | "
                  "searches/ep | reward |", "|---|---:|---:|---:|---:|---:|---:|"]
        lines += [f"| {name} | {r['n']} | {r['recall']:.3f} | {r['all_gold']:.3f} | {r['traj_recall']:.3f} | "
                  f"{r['searches']:.2f} | {r['reward']:.3f} |" for name, r in rows.items()]
        lines.append("")
    lines += [f"Policy: `{rl['model_dir']}` (`sieve search ... --policy learned --policy-path {rl['model_dir']}`).", ""]
    report = cfg.out / "report.md"
    report.write_text("\n".join(lines), encoding="utf-8")
    return {"model_dir": rl["model_dir"], "report": str(report), "evals": evals, "synth": synth.to_dict(),
            "rl": {k: v for k, v in rl.items() if k not in ("curve_first_window", "curve_last_window")},
            "stage_seconds": {"rl": round(rl_s, 1), "eval": round(eval_s, 1)}}


def _llm_route(cfg: PipelineConfig, index: Any, synth: Any, train_tasks: list[dict[str, Any]],
               held: list[dict[str, Any]], progress: bool) -> dict[str, Any]:
    """SFT warm start of a language model on heuristic trajectories, then GRPO (the GPU route)."""
    from sieve.agent.backends.local import LocalBackend
    from sieve.train.heldout import heldout_table, run_heldout
    from sieve.train.rl import RLConfig, run_rl
    from sieve.train.sft import WarmStartConfig, run_sft

    sft = run_sft(index, WarmStartConfig(tasks=cfg.out / "train_tasks.jsonl", out=cfg.out / "sft",
                                         model_path=cfg.model_path, holdout=0.0, epochs=cfg.sft_epochs,
                                         check_before=False, episode=cfg.episode, seed=cfg.seed), progress=progress)
    rl = run_rl(index, RLConfig(tasks=cfg.out / "train_tasks.jsonl", out=cfg.out / "rl", model_path=sft["model_dir"],
                                max_steps=cfg.rl_steps or 10, episode=cfg.episode, seed=cfg.seed), progress=progress)
    evals: dict[str, dict[str, Any]] = {}
    evals["heuristic"] = run_heldout(index, held, cfg.episode, policy="heuristic", progress=progress)[0].to_dict()
    for name, path in (("sft", sft["model_dir"]), ("sft+rl", rl["model_dir"])):
        evals[name] = run_heldout(index, held, cfg.episode, backend=LocalBackend.load(path), progress=progress)[0].to_dict()
    report = cfg.out / "report.md"
    report.write_text("\n".join([
        f"# sieve train all --llm: {cfg.corpus}", "",
        f"{synth.written + synth.existing} synthesized tasks ({len(train_tasks)} train, {len(held)} held out); "
        f"SFT {sft['n_train_examples']} examples; GRPO {rl['steps']} steps (reward {rl['reward_first']:.3f} -> "
        f"{rl['reward_last']:.3f}).", "", "## Held-out tasks", "", heldout_table(evals), "",
        f"Model: `{rl['model_dir']}` (HF folder: `AgentConfig(local_model=...)`, or `vllm serve`).", ""]),
        encoding="utf-8")
    return {"model_dir": rl["model_dir"], "report": str(report), "evals": evals, "synth": synth.to_dict(),
            "sft_model": sft["model_dir"], "rl_steps": rl["steps"]}


__all__ = ["PipelineConfig", "run_pipeline"]
