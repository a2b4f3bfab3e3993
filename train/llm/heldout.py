"""Held-out checks of a policy: valid tool-call rate, recall and reward on tasks it never trained on."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from sieve.train.rewards import Gold, RewardConfig, RewardReport, score_episode

if TYPE_CHECKING:
    from sieve.agent.trace import Trace
    from sieve.retriever.index import CorpusIndex
    from sieve.train.config import EpisodeConfig

logger = logging.getLogger(__name__)


def turn_is_valid(turn: Any) -> bool:
    """A turn is valid when the model called at least one tool and none of its calls was malformed."""
    return bool(turn.tool_calls) and not any(c.malformed for c in turn.tool_calls)


@dataclass
class HeldoutResult:
    n_tasks: int = 0
    n_turns: int = 0
    valid_tool_call_rate: float = 0.0  # share of turns with >= 1 tool call, none malformed
    call_validity: float = 0.0  # share of tool calls that were well-formed
    first_turn_valid_rate: float = 0.0
    traj_recall: float = 0.0
    output_recall: float = 0.0
    finish_rate: float = 0.0  # episodes that ended by finishing (finish call, or the heuristic converging)
    reward: dict[str, float] = field(default_factory=dict)
    searches_per_episode: float = 0.0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


def summarize(
    traces: list[Trace], tasks: list[dict[str, Any]], reward_config: RewardConfig | None = None, progress: float = 1.0
) -> HeldoutResult:
    """Aggregate held-out traces (``progress`` picks the reward weights: 1.0 = the converged objective)."""
    from sieve.train.rewards.metrics import recall

    turns = [t for tr in traces for t in tr.turns]
    calls = [c for tr in traces for c in tr.tool_calls]
    golds = [Gold.from_task(t) for t in tasks]
    breakdowns = [score_episode(tr, g, reward_config, progress) for tr, g in zip(traces, golds)]
    rep = RewardReport.from_breakdowns(breakdowns)
    n = max(1, len(traces))
    return HeldoutResult(
        n_tasks=len(traces),
        n_turns=len(turns),
        valid_tool_call_rate=sum(turn_is_valid(t) for t in turns) / max(1, len(turns)),
        call_validity=sum(not c.malformed for c in calls) / max(1, len(calls)),
        first_turn_valid_rate=sum(bool(tr.turns) and turn_is_valid(tr.turns[0]) for tr in traces) / n,
        traj_recall=sum(b.traj_recall for b in breakdowns) / n,
        output_recall=sum(recall(tr.returned_doc_ids, g.doc_ids) for tr, g in zip(traces, golds)) / n,
        finish_rate=sum(tr.stop_reason in ("finished", "converged") for tr in traces) / n,
        reward=rep.means,
        searches_per_episode=rep.searches_per_episode,
    )


def run_heldout(
    index: CorpusIndex,
    tasks: list[dict[str, Any]],
    episode: EpisodeConfig,
    *,
    model_path: str | None = None,
    policy: str = "local",
    backend: Any | None = None,
    reward_config: RewardConfig | None = None,
    progress: bool = True,
) -> tuple[HeldoutResult, list[Trace]]:
    """Run ``policy`` greedily on ``tasks`` through the agent (exactly as served) and summarize.

    Args:
        index: the collection.
        tasks: held-out tasks.
        episode: episode settings (the same as training).
        model_path: HF folder for the local policy (a checkpoint from SFT or RL).
        policy: ``"local"`` (default), ``"heuristic"`` or ``"openai"``.
        backend: an already loaded backend to reuse (skips loading ``model_path``).
        reward_config: weights for the reported reward.
        progress: tqdm bar.
    """
    from pathlib import Path

    from sieve.agent import SearchAgent

    t0 = time.perf_counter()
    cfg = episode.training_agent_config(
        record_prompts=False,
        temperature=0.0,
        models_dir=index.config.models_dir,
        local_model=Path(model_path) if model_path else None,
    )
    agent = SearchAgent.with_policy(index, policy, cfg, backend=backend)
    traces = [agent.run(t["question"]) for t in tqdm(tasks, desc=f"Held-out ({policy})", disable=not progress)]
    result = summarize(traces, tasks, reward_config)
    result.seconds = time.perf_counter() - t0
    return result, traces


def heldout_table(evals: dict[str, dict[str, Any]]) -> str:
    """Markdown table of several :meth:`HeldoutResult.to_dict` results, one row per model."""
    cols = [
        "model",
        "tasks",
        "valid tool-call turns",
        "call validity",
        "traj recall",
        "output recall",
        "searches/ep",
        "finish rate",
        "reward (converged weights)",
    ]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for name, e in evals.items():
        lines.append(
            "| "
            + " | ".join(
                [
                    name,
                    str(e["n_tasks"]),
                    f"{e['valid_tool_call_rate']:.1%}",
                    f"{e['call_validity']:.1%}",
                    f"{e['traj_recall']:.3f}",
                    f"{e['output_recall']:.3f}",
                    f"{e['searches_per_episode']:.2f}",
                    f"{e['finish_rate']:.1%}",
                    f"{e['reward'].get('total', 0.0):.3f}",
                ]
            )
            + " |"
        )
    return "\n".join(lines)


__all__ = ["HeldoutResult", "heldout_table", "run_heldout", "summarize", "turn_is_valid"]
