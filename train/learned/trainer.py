"""``sieve train rl --policy learned``: imitation warm start (optional), then GRPO, resumable.

The run folder holds ``model/`` (the checkpoint: ``model.safetensors`` + ``config.json``,
rewritten every ``save_every`` updates and at the end), ``trainer_state.pt`` (optimiser, RNG
and task-stream state, to resume), ``curve.jsonl`` (one row per update), ``curve.md`` (a table
every ``table_every`` updates), ``curve.png`` and ``summary.json``. Running the same command
again resumes where it stopped.
"""

from __future__ import annotations

import json
import logging
import os
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from tqdm.auto import tqdm

from sieve.agent.policies.learned.network import LearnedConfig, PolicyNetwork, load_checkpoint, save_checkpoint
from sieve.eval.data import read_tasks
from sieve.train.config import split_tasks
from sieve.train.learned.config import DEFAULT_UPDATES, LearnedRLConfig

if TYPE_CHECKING:
    from sieve.retriever.index import CorpusIndex

logger = logging.getLogger(__name__)


class _TaskStream:
    """Tasks in seeded shuffled epochs; tasks every rollout of the last group solved are mostly skipped.

    A group whose rollouts all find every gold document has no reward spread, hence no gradient:
    revisiting it costs rollouts and teaches nothing (DAPO's dynamic sampling, across epochs).
    The state (epoch, position, solved ids) is saved with the run, so a resumed run draws the same.
    """

    def __init__(
        self,
        tasks: list[dict[str, Any]],
        seed: int,
        epoch: int = 0,
        pos: int = 0,
        solved: set[str] | None = None,
        skip_solved: float = 0.0,
    ) -> None:
        self.tasks, self.seed, self.epoch, self.pos = tasks, seed, epoch, pos
        self.solved = set(solved or ())
        self.skip_solved = skip_solved
        self._order = self._shuffle()

    def _shuffle(self) -> list[int]:
        order = list(range(len(self.tasks)))
        random.Random(self.seed * 7919 + self.epoch).shuffle(order)
        return order

    def take(self, n: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        skipped = 0
        while len(out) < n:
            if self.pos >= len(self._order):
                self.epoch, self.pos = self.epoch + 1, 0
                self._order = self._shuffle()
            task = self.tasks[self._order[self.pos]]
            coin = random.Random(f"{self.seed}/{self.epoch}/{self.pos}").random()
            self.pos += 1
            if _task_id(task) in self.solved and coin < self.skip_solved and skipped < 10 * len(self.tasks):
                skipped += 1
                continue
            out.append(task)
        return out

    def mark(self, task: dict[str, Any], solved: bool) -> None:
        (self.solved.add if solved else self.solved.discard)(_task_id(task))


def _task_id(task: dict[str, Any]) -> str:
    return str(task.get("id") or task["question"])


def _agent(index: Any, policy: Any, cfg: LearnedRLConfig) -> Any:
    from sieve.agent import AgentConfig, SearchAgent
    from sieve.agent.config import FloorConfig

    # One thread per turn's tools: rollouts are sequential and the tools mostly hit the cache.
    # Rewards, screening and held-apart checks judge the policy's own ranking (as the LLM route's
    # EpisodeConfig does): with the floor on, hybrid's share of the fused set would be credited to
    # the policy, and the reward would barely move with what the policy ranks.
    config = AgentConfig(k=cfg.k, budget_tokens=cfg.budget_tokens, tool_workers=1, floor=FloorConfig(enabled=False))
    return SearchAgent(index, policy, config)


_SCORES = ("reward", "recall", "all_gold", "traj_recall", "searches")


def policy_scores(
    index: Any, policy: Any, tasks: list[dict[str, Any]], rl: LearnedRLConfig, progress: float = 1.0
) -> list[dict[str, Any]]:
    """A policy as served (greedy) on each of ``tasks``: one row per task (``id`` and :data:`_SCORES`).

    The rows pair task by task between two policies, which is what a before/after verdict needs
    (:mod:`sieve.train.verdict`); :func:`policy_check` averages them.
    """
    from sieve.eval.metrics import all_found_at_k, recall_at_k
    from sieve.train.rewards import Gold, score_episode

    agent = _agent(index, policy, rl)
    rows = []
    for t in tasks:
        trace = agent.run(t["question"])
        gold = Gold.from_task(t)
        br = score_episode(trace, gold, rl.reward, progress)
        rows.append(
            {
                "id": _task_id(t),
                "reward": br.total,
                "recall": recall_at_k(trace.returned_doc_ids, gold.doc_ids, rl.k),
                "all_gold": all_found_at_k(trace.returned_doc_ids, gold.doc_ids, rl.k),
                "traj_recall": br.traj_recall,
                "searches": float(br.n_searches),
            }
        )
    return rows


def mean_scores(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The mean of each of :data:`_SCORES` over per-task rows, and ``n``.

    Example:
        >>> rows = [{"reward": 1.0, "recall": 1.0, "all_gold": 1.0, "traj_recall": 1.0, "searches": 2.0},
        ...         {"reward": 0.0, "recall": 0.5, "all_gold": 0.0, "traj_recall": 0.5, "searches": 1.0}]
        >>> mean_scores(rows)["recall"], mean_scores(rows)["n"]
        (0.75, 2)
    """
    n = max(1, len(rows))
    return {name: sum(r[name] for r in rows) / n for name in _SCORES} | {"n": len(rows)}


def policy_check(
    index: Any, policy: Any, tasks: list[dict[str, Any]], rl: LearnedRLConfig, progress: float = 1.0
) -> dict[str, float]:
    """A policy as served (greedy) on ``tasks``: recall, all-gold, reward (converged weights), searches."""
    return mean_scores(policy_scores(index, policy, tasks, rl, progress))


def greedy_check(
    index: Any,
    net: PolicyNetwork,
    config: LearnedConfig,
    tasks: list[dict[str, Any]],
    rl: LearnedRLConfig,
    progress: float = 1.0,
) -> dict[str, float]:
    """The learned network as served (greedy) on ``tasks`` (see :func:`policy_check`)."""
    from sieve.agent.policies.learned import LearnedPolicy

    return policy_check(index, LearnedPolicy(net, config), tasks, rl, progress)


def _screen(index: Any, policy: Any, tasks: list[dict[str, Any]], cfg: LearnedRLConfig, progress: bool) -> set[str]:
    """Ids of the tasks the start policy already solves greedily (every gold document in its top k)."""
    from sieve.eval.metrics import all_found_at_k

    agent = _agent(index, policy, cfg)
    solved = set()
    for t in tqdm(tasks, desc="Screening tasks (greedy)", disable=not progress):
        trace = agent.run(t["question"])
        if all_found_at_k(trace.returned_doc_ids, set(t["gold_ids"]), cfg.k) == 1.0:
            solved.add(_task_id(t))
    return solved


def keep_after_screen(
    tasks: list[dict[str, Any]], solved: set[str], keep_solved: float, seed: int, min_tasks: int = 1
) -> list[dict[str, Any]]:
    """The tasks to train on: every unsolved one, plus a seeded ``keep_solved`` share of the solved ones.

    At least ``min_tasks`` are kept (solved ones fill up when too few are unsolved), in the input order.

    Example:
        >>> ts = [{"id": str(i), "question": "q"} for i in range(10)]
        >>> [t["id"] for t in keep_after_screen(ts, {str(i) for i in range(8)}, 0.25, 0)]
        ['1', '4', '8', '9']
    """
    solved_ids = [_task_id(t) for t in tasks if _task_id(t) in solved]
    random.Random(seed).shuffle(solved_ids)
    n_unsolved = len(tasks) - len(solved_ids)
    n_keep = min(len(solved_ids), max(round(keep_solved * len(solved_ids)), min_tasks - n_unsolved))
    keep = set(solved_ids[:n_keep])
    return [t for t in tasks if _task_id(t) not in solved or _task_id(t) in keep]


@dataclass
class _Run:
    """One training run's moving parts: the network and its optimiser, the sampling agent over the
    retrieval cache, the task stream, the held-apart tasks and the summary written as it goes."""

    cfg: LearnedRLConfig
    net: PolicyNetwork
    pcfg: LearnedConfig
    meta: dict[str, Any]  # how the start checkpoint was made (recorded as the new one's "previous")
    cached: Any  # the CachedIndex every episode searches
    policy: Any  # the sampling LearnedPolicy the rollouts run
    agent: Any
    optimizer: torch.optim.Optimizer
    stream: _TaskStream
    held: list[dict[str, Any]]
    summary: dict[str, Any]

    def save(self, update_i: int, elapsed: float) -> None:
        """Checkpoint, trainer state and retrieval cache, to resume after ``update_i`` updates."""
        _save(
            self.cfg.out,
            self.net,
            self.pcfg,
            self.optimizer,
            self.stream,
            update_i,
            elapsed,
            self.summary,
            self.cfg,
            self.meta,
            self.cached,
        )


def run_learned_rl(index: CorpusIndex, cfg: LearnedRLConfig, *, progress: bool = True) -> dict[str, Any]:
    """Train (or resume) the learned policy on ``cfg.tasks`` over ``index``; returns the run summary."""
    t_start = time.perf_counter()
    cfg.out.mkdir(parents=True, exist_ok=True)
    run = _open_run(index, cfg)
    if run.summary["resumed"]:
        start_update, elapsed_before = _resume(run)
    else:
        _set_up(run, progress, t_start)
        start_update, elapsed_before = 0, 0.0
    t_rl = time.perf_counter() - elapsed_before
    updates, stopped_by = _train(run, start_update, t_rl, progress)
    return _finish(run, updates, stopped_by, time.perf_counter() - t_rl, t_start)


def _open_run(index: CorpusIndex, cfg: LearnedRLConfig) -> _Run:
    """The run's tasks (split into training and held-apart), start network, agent and optimiser."""
    from sieve.agent.policies.learned import LearnedPolicy
    from sieve.train.learned.cache import CachedIndex

    tasks = read_tasks(cfg.tasks, cfg.limit)
    if cfg.heldout_tasks is not None:
        train_tasks, held = tasks, read_tasks(cfg.heldout_tasks)
    else:
        train_tasks, held = split_tasks(tasks, cfg.holdout, cfg.seed) if len(tasks) > 4 else (tasks, [])
    torch.manual_seed(cfg.seed)
    resumed = (cfg.out / "trainer_state.pt").is_file() and (cfg.out / "model" / "config.json").is_file()
    net, pcfg, meta = _start_network(cfg, resumed)
    # Retrieval cache shared by every run over this collection (seeds, ablations): each query embedded once.
    cached = CachedIndex(index, folder=Path(index.config.data_dir) / "rl-cache")
    policy = LearnedPolicy(
        net, pcfg, sample=True, record=True, temperature=cfg.temperature, prefetch=cached.embedder.embed_queries
    )
    return _Run(
        cfg=cfg,
        net=net,
        pcfg=pcfg,
        meta=meta,
        cached=cached,
        policy=policy,
        agent=_agent(cached, policy, cfg),
        optimizer=torch.optim.Adam(net.parameters(), lr=cfg.lr),
        stream=_TaskStream(train_tasks, cfg.seed, skip_solved=cfg.skip_solved),
        held=held,
        summary={"resumed": resumed, "n_train_tasks": len(train_tasks), "n_heldout": len(held)},
    )


def _start_network(cfg: LearnedRLConfig, resumed: bool) -> tuple[PolicyNetwork, LearnedConfig, dict[str, Any]]:
    """The network training starts from: the run's own checkpoint when resuming, else ``cfg.init``'s."""
    from sieve.agent.policies.learned.policy import default_checkpoint

    if resumed:
        return load_checkpoint(cfg.out / "model")
    if not cfg.fresh:
        return load_checkpoint(default_checkpoint() if cfg.init == "default" else Path(cfg.init))
    return PolicyNetwork(cfg.policy.hidden), cfg.policy, {}


def _resume(run: _Run) -> tuple[int, float]:
    """Restore the optimiser, task stream and summary of an interrupted run; (updates done, seconds spent)."""
    st = torch.load(run.cfg.out / "trainer_state.pt", weights_only=False)
    run.optimizer.load_state_dict(st["optimizer"])
    kept = set(st["kept"]) if st.get("kept") is not None else None
    run.stream = _TaskStream(
        [t for t in run.stream.tasks if kept is None or _task_id(t) in kept],
        run.cfg.seed,
        st["epoch"],
        st["pos"],
        set(st.get("solved", ())),
        run.cfg.skip_solved,
    )
    run.summary.update({k: v for k, v in st.get("summary", {}).items() if k != "resumed"})
    logger.info("Resuming %s at update %d", run.cfg.out, st["update"])
    return st["update"], st["elapsed"]


def _set_up(run: _Run, progress: bool, t_start: float) -> None:
    """A new run: imitation warm start (a fresh network), the screen, the start policy's held-apart
    check, then the start checkpoint (``warm_start/``) and a first ``summary.json``."""
    from sieve.train.learned.imitation import warm_start

    cfg, out, summary = run.cfg, run.cfg.out, run.summary
    (out / "curve.jsonl").write_text("", encoding="utf-8")
    if cfg.fresh and cfg.warm_start:
        t0 = time.perf_counter()
        summary["imitation"] = warm_start(run.agent, run.policy, run.stream.tasks, cfg.imitation, cfg.seed, progress)
        summary["imitation"]["seconds"] = round(time.perf_counter() - t0, 1)
        run.cached.save()
    if cfg.screen:
        _screen_tasks(run, progress)
    if run.held:
        _start_checks(run)
    summary["setup_seconds"] = round(time.perf_counter() - t_start, 1)
    save_checkpoint(out / "warm_start", run.net, run.pcfg, {"stage": "start", "init": cfg.init})
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    for name in ("heldout_heuristic", "heldout_start"):
        if name in summary:
            logger.info("%s: %s", name, {k: round(v, 3) for k, v in summary[name].items()})


def _screen_tasks(run: _Run, progress: bool) -> None:
    """Train on the tasks the start policy does not solve (and ``keep_solved`` of those it does)."""
    from sieve.agent.policies.learned import LearnedPolicy

    cfg, train_tasks = run.cfg, run.stream.tasks
    t0 = time.perf_counter()
    solved = _screen(run.cached, LearnedPolicy(run.net, run.pcfg), train_tasks, cfg, progress)
    kept_tasks = keep_after_screen(train_tasks, solved, cfg.keep_solved, cfg.seed, cfg.questions_per_step)
    run.stream = _TaskStream(kept_tasks, cfg.seed, skip_solved=cfg.skip_solved)
    n_kept_solved = sum(_task_id(t) in solved for t in kept_tasks)
    run.summary["screen"] = {
        "tasks": len(train_tasks),
        "solved": len(solved),
        "kept": len(kept_tasks),
        "kept_unsolved": len(kept_tasks) - n_kept_solved,
        "kept_solved": n_kept_solved,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    logger.info(
        "Screen: the start policy solves %d of %d training tasks; training on %d (%d unsolved + %d solved)",
        len(solved),
        len(train_tasks),
        len(kept_tasks),
        len(kept_tasks) - n_kept_solved,
        n_kept_solved,
    )
    run.cached.save()


def _start_checks(run: _Run) -> None:
    """The heuristic and the start policy on the held-apart tasks, timed (the end check will cost as much)."""
    from sieve.agent.config import AgentConfig
    from sieve.agent.policies.heuristic import HeuristicPolicy
    from sieve.agent.policies.learned import LearnedPolicy

    cfg, summary = run.cfg, run.summary
    rows = {"heuristic": policy_scores(run.cached, HeuristicPolicy(AgentConfig(k=cfg.k)), run.held, cfg)}
    t0 = time.perf_counter()
    rows["start"] = policy_scores(run.cached, LearnedPolicy(run.net, run.pcfg), run.held, cfg)
    summary["end_check_seconds"] = round(time.perf_counter() - t0, 1)  # what the end check will cost
    summary["heldout_heuristic"], summary["heldout_start"] = mean_scores(rows["heuristic"]), mean_scores(rows["start"])
    summary["heldout_scores"] = rows


def _update_budget(cfg: LearnedRLConfig, summary: dict[str, Any]) -> float | None:
    """Seconds the updates may take: the time budget covers the whole run, so set-up (warm start,
    screen, first checks) and the final check come out of it (at least one update runs)."""
    if not cfg.minutes:
        return None
    return max(0.0, cfg.minutes * 60 - summary.get("setup_seconds", 0.0) - summary.get("end_check_seconds", 0.0))


def _train(run: _Run, start_update: int, t_rl: float, progress: bool) -> tuple[int, str]:
    """GRPO updates from ``start_update`` until the step cap or the time budget; (updates, what stopped them)."""
    cfg, out = run.cfg, run.cfg.out
    budget_s = _update_budget(cfg, run.summary)
    cap = cfg.step_cap
    bar = tqdm(total=cap, initial=start_update, desc="GRPO updates", disable=not progress)
    u = start_update
    ep_seed = cfg.seed * 1_000_000_007 + start_update * 10_000
    stopped_by = "steps"
    while cap is None or u < cap:
        elapsed = time.perf_counter() - t_rl
        if budget_s is not None and elapsed >= budget_s and u > start_update:
            stopped_by = "minutes"
            break
        prog = (min(1.0, elapsed / budget_s) if budget_s > 0 else 1.0) if budget_s is not None else u / cap  # type: ignore[operator]
        stats = _update(run, u, ep_seed, prog)
        ep_seed += 10_000
        u += 1
        if run.held and cfg.eval_every and u % cfg.eval_every == 0 and (cap is None or u < cap):
            check = greedy_check(run.cached, run.net, run.pcfg, run.held, cfg, prog)
            stats.extra = {f"heldout_{k}": v for k, v in check.items()}
        with (out / "curve.jsonl").open("a", encoding="utf-8") as f:
            f.write(json.dumps(stats.to_dict()) + "\n")
        bar.update(1)
        bar.set_postfix(reward=f"{stats.reward:.3f}", recall=f"{stats.recall:.3f}", searches=f"{stats.searches:.1f}")
        if u % cfg.save_every == 0:
            run.save(u, time.perf_counter() - t_rl)
    bar.close()
    return u, stopped_by


def _update(run: _Run, u: int, ep_seed: int, prog: float) -> Any:
    """One GRPO update (the ``u``-th, 0-based): a group of rollouts per task of the batch, then the
    clipped policy-gradient steps; its row of the curve (rewards, losses, timings)."""
    from sieve.train.learned.grpo import run_group, summarize, update

    cfg = run.cfg
    t0, c0 = time.perf_counter(), time.process_time()
    rollouts = []
    for gi, task in enumerate(run.stream.take(cfg.questions_per_step)):
        seeds = [ep_seed + gi * cfg.group + j for j in range(cfg.group)]
        group = run_group(run.agent, run.policy, task, gi, seeds, cfg.reward, prog)
        run.stream.mark(task, all(r.all_gold == 1.0 for r in group))
        rollouts.extend(group)
    t1 = time.perf_counter()
    info = update(
        run.net,
        run.optimizer,
        rollouts,
        epochs=cfg.epochs,
        clip=cfg.clip,
        entropy_coef=cfg.entropy,
        max_grad_norm=cfg.max_grad_norm,
    )
    stats = summarize(rollouts, u + 1)
    stats.loss, stats.entropy = info["loss"], info["entropy"]
    stats.clip_frac, stats.approx_kl, stats.groups_used = info["clip_frac"], info["approx_kl"], int(info["groups_used"])
    stats.rollout_s, stats.update_s, stats.progress = t1 - t0, time.perf_counter() - t1, prog
    stats.cpu_s, stats.load = time.process_time() - c0, os.getloadavg()[0]
    total_q = run.cached.hits + run.cached.misses
    stats.cache_hit_rate = run.cached.hits / total_q if total_q else 0.0
    return stats


def _finish(run: _Run, updates: int, stopped_by: str, rl_seconds: float, t_start: float) -> dict[str, Any]:
    """The end check on the held-apart tasks, the last save, the curves and ``summary.json``."""
    from sieve.agent.policies.learned import LearnedPolicy
    from sieve.train.learned.report import write_curve_outputs

    cfg, out, summary = run.cfg, run.cfg.out, run.summary
    summary["updates"] = updates
    summary["rl_seconds"] = round(rl_seconds, 1)
    summary["stopped_by"] = stopped_by
    summary["stop"] = stop_message(cfg, stopped_by, updates, rl_seconds)
    if run.held:
        end = policy_scores(run.cached, LearnedPolicy(run.net, run.pcfg), run.held, cfg)
        summary["heldout_end"] = mean_scores(end)
        summary.setdefault("heldout_scores", {})["end"] = end
    run.save(updates, rl_seconds)
    curve = [json.loads(line) for line in (out / "curve.jsonl").read_text(encoding="utf-8").splitlines() if line]
    summary.update(write_curve_outputs(out, curve, cfg.table_every, title=str(cfg.tasks)))
    summary["seconds"] = round(time.perf_counter() - t_start, 1)
    summary["model_dir"] = str(out / "model")
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    return summary


def stop_message(cfg: LearnedRLConfig, stopped_by: str, updates: int, seconds: float) -> str:
    """What ended the run, in words: the time budget or the step cap (and which, when both were set).

    Example:
        >>> stop_message(LearnedRLConfig(steps=50, minutes=10), "steps", 50, 300.0)
        'stopped at the step cap (50 updates) after 5.0 of 10 minutes'
    """
    if stopped_by == "minutes":
        msg = f"stopped by the time budget ({cfg.minutes:.3g} min) after {updates} updates"
        return msg + (f" of the {cfg.steps} allowed" if cfg.steps is not None else "")
    msg = f"stopped at the step cap ({updates} updates)"
    return msg + (f" after {seconds / 60:.1f} of {cfg.minutes:.3g} minutes" if cfg.minutes else "")


def _save(
    out: Path,
    net: PolicyNetwork,
    pcfg: LearnedConfig,
    optimizer: torch.optim.Optimizer,
    stream: _TaskStream,
    update_i: int,
    elapsed: float,
    summary: dict[str, Any],
    cfg: LearnedRLConfig,
    meta: dict[str, Any],
    cache: Any = None,
) -> None:
    if cache is not None:
        cache.save()
    trained = {
        "tasks": str(cfg.tasks),
        "updates": update_i,
        "init": cfg.init,
        "seed": cfg.seed,
        "command": cfg.command,
        "previous": meta or None,
    }
    save_checkpoint(out / "model", net, pcfg, trained)
    tmp = out / "trainer_state.pt.tmp"
    torch.save(
        {
            "optimizer": optimizer.state_dict(),
            "epoch": stream.epoch,
            "pos": stream.pos,
            "solved": sorted(stream.solved),
            "kept": sorted({_task_id(t) for t in stream.tasks}),
            "update": update_i,
            "elapsed": elapsed,
            "summary": summary,
            "config": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(cfg).items()},
        },
        tmp,
    )
    tmp.replace(out / "trainer_state.pt")


__all__ = [
    "DEFAULT_UPDATES",
    "LearnedRLConfig",
    "greedy_check",
    "keep_after_screen",
    "mean_scores",
    "policy_check",
    "policy_scores",
    "run_learned_rl",
    "stop_message",
]
