"""``sieve train all``: index → synthesize → SFT → GRPO → held-out report, in one command.

Every stage writes into ``OUT`` (tasks, ``sft/``, ``rl/``, ``report.md``), and the first two
are resumable (indexing and synthesis skip what is already there). The evaluation compares the
no-LLM heuristic policy, the SFT model and the RL model on synthesized tasks held out from
training, through the agent exactly as served.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
    n_tasks: int = field(default=60, metadata={"help": "Tasks to synthesize."})
    holdout: float = field(default=0.25, metadata={"help": "Share of tasks held out for the report."})
    rl_steps: int = field(default=10, metadata={"help": "GRPO steps."})
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


def _write(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in tasks), encoding="utf-8")
    return path


def run_pipeline(cfg: PipelineConfig, retriever_config: RetrieverConfig, *, progress: bool = True) -> dict[str, Any]:
    from sieve.agent.backends.local import LocalBackend
    from sieve.retriever import CorpusIndex
    from sieve.eval.data import read_tasks
    from sieve.train.heldout import heldout_table, run_heldout
    from sieve.train.rl import RLConfig, run_rl
    from sieve.train.sft import WarmStartConfig, run_sft
    from sieve.train.synth import SynthConfig, synthesize

    t0 = time.perf_counter()
    cfg.out.mkdir(parents=True, exist_ok=True)
    index = CorpusIndex.open(retriever_config, cfg.collection, create=True)
    indexed = index.index_path(cfg.corpus, progress=progress)
    logger.info("Indexed %s: %d chunks written, %d unchanged documents", cfg.corpus, indexed.chunks_written,
                indexed.unchanged)
    synth = synthesize(index, cfg.out / "tasks.jsonl", SynthConfig(n=cfg.n_tasks, seed=cfg.seed), progress=progress)
    tasks = read_tasks(cfg.out / "tasks.jsonl")
    train_tasks, held = split_tasks(tasks, cfg.holdout, cfg.seed)
    _write(cfg.out / "train_tasks.jsonl", train_tasks)
    _write(cfg.out / "heldout_tasks.jsonl", held)
    sft = run_sft(index, WarmStartConfig(tasks=cfg.out / "train_tasks.jsonl", out=cfg.out / "sft",
                                         model_path=cfg.model_path, holdout=0.0, epochs=cfg.sft_epochs,
                                         check_before=False, episode=cfg.episode, seed=cfg.seed), progress=progress)
    rl = run_rl(index, RLConfig(tasks=cfg.out / "train_tasks.jsonl", out=cfg.out / "rl", model_path=sft["model_dir"],
                                max_steps=cfg.rl_steps, episode=cfg.episode, seed=cfg.seed), progress=progress)
    evals: dict[str, dict[str, Any]] = {}
    evals["heuristic"] = run_heldout(index, held, cfg.episode, policy="heuristic", progress=progress)[0].to_dict()
    for name, path in (("sft", sft["model_dir"]), ("sft+rl", rl["model_dir"])):
        evals[name] = run_heldout(index, held, cfg.episode, backend=LocalBackend.load(path), progress=progress)[0].to_dict()
    report = cfg.out / "report.md"
    report.write_text("\n".join([
        f"# sieve train all: {cfg.corpus}", "",
        f"{synth.written + synth.existing} synthesized tasks ({len(train_tasks)} train, {len(held)} held out); "
        f"SFT {sft['n_train_examples']} examples; GRPO {rl['steps']} steps (reward {rl['reward_first']:.3f} -> "
        f"{rl['reward_last']:.3f}).", "", "## Held-out tasks", "", heldout_table(evals), "",
        f"Model: `{rl['model_dir']}` (HF folder: `AgentConfig(local_model=...)`, or `vllm serve`).", ""]),
        encoding="utf-8")
    result = {"model_dir": rl["model_dir"], "report": str(report), "evals": evals, "synth": synth.to_dict(),
              "sft_model": sft["model_dir"], "rl_steps": rl["steps"], "seconds": round(time.perf_counter() - t0, 1),
              "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()}}
    (cfg.out / "report.json").write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    return result


__all__ = ["PipelineConfig", "run_pipeline"]
