"""The full episode reward: Context-1's clamped outcome reward minus annealed auxiliary penalties.

``total = clamp(w_f·F_β + w_r·traj_recall + w_a·answer − p_prune − p_turn, ε, pre) − aux``, where
``pre`` is the part before penalties and ``aux`` the sum of Sieve's own penalties at the current
annealing scale. ``aux`` sits outside the clamp on purpose: inside it, a penalty could never
push an episode below ε, so a collapsed episode that found nothing would cost the same as one
that tried; outside it, early training sees the penalty, and once annealed to 0 the objective is
exactly Context-1's.

The TRL-facing callables follow the ``(completions, **kwargs) -> list[float | None]`` contract
(``None`` abstains): they read the per-row ``trace`` (a :class:`~sieve.agent.trace.Trace` or its dict)
and the task columns ``gold_ids``, ``answers``, ``meta``; training progress comes from TRL's
``trainer_state`` (``global_step / max_steps``) or an explicit ``progress`` list.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from sieve.train.rewards.config import RewardConfig
from sieve.train.rewards.context1 import (
    answer_returned,
    clamp,
    prune_streak_penalty,
    returned_f_beta,
    trajectory_recall,
    turn_penalty,
)
from sieve.train.rewards.gold import Gold
from sieve.train.rewards.penalties import (
    collapse_penalty,
    gold_prune_penalty,
    malformed_penalty,
    pruned_gold,
    repeat_query_penalty,
    repeated_queries,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sieve.agent.trace import Trace


@dataclass(frozen=True)
class RewardBreakdown:
    """Every term of one episode's reward, plus the behaviour counts the batch report needs."""

    total: float
    context1: float  # the clamped Context-1 reward
    pre_penalty: float
    f_beta: float
    beta: float
    traj_recall: float
    answer: float  # 1.0 if a returned chunk holds the answer
    p_prune: float
    p_turn: float
    p_collapse: float
    p_malformed: float
    p_gold_prune: float
    p_repeat: float
    n_searches: int
    n_prune_calls: int
    n_pruned_gold: int
    n_malformed: int
    n_repeats: int
    n_turns: int
    n_returned: int

    @property
    def aux_penalty(self) -> float:
        return self.p_collapse + self.p_malformed + self.p_gold_prune + self.p_repeat

    def to_dict(self) -> dict[str, float]:
        return {**asdict(self), "aux_penalty": self.aux_penalty}


def score_episode(
    trace: Trace, gold: Gold, config: RewardConfig | None = None, progress: float = 0.0
) -> RewardBreakdown:
    """Score one episode.

    Args:
        trace: the episode (``Trace``; the full, unpruned record is used for trajectory recall).
        gold: the task's gold evidence.
        config: weights and schedule (defaults: Context-1's published values + Sieve's penalties).
        progress: training progress in [0, 1] (anneals β and the auxiliary penalties).

    Returns:
        The :class:`RewardBreakdown`; ``total`` is the scalar to train on.

    Example:
        >>> score_episode(trace, Gold.from_task(task)).total  # doctest: +SKIP
        2.0
    """
    cfg = config or RewardConfig()
    w = cfg.weights_at(progress)
    fb = returned_f_beta(trace, gold, w.beta, cfg.level)
    tr = trajectory_recall(trace, gold, cfg.level)
    ans = 1.0 if answer_returned(trace, gold) else 0.0
    pre = w.f_beta * fb + w.traj_recall * tr + w.answer * ans
    p_prune = prune_streak_penalty(trace, w.prune_step, w.prune_cap, w.prune_streak)
    p_turn = turn_penalty(len(trace.turns), w.turn_start, w.turn_end, w.turn_max)
    c1 = clamp(pre - p_prune - p_turn, w.epsilon, pre)
    p_collapse = collapse_penalty(trace, gold, w.collapse, cfg.collapse_max_searches, cfg.level)
    p_malformed = malformed_penalty(trace, w.malformed, w.malformed_cap)
    p_gold = gold_prune_penalty(trace, gold, w.gold_prune, w.gold_prune_cap)
    p_repeat = repeat_query_penalty(trace, w.repeat_query, w.repeat_query_cap)
    total = c1 - (p_collapse + p_malformed + p_gold + p_repeat)
    return RewardBreakdown(
        total=total,
        context1=c1,
        pre_penalty=pre,
        f_beta=fb,
        beta=w.beta,
        traj_recall=tr,
        answer=ans,
        p_prune=p_prune,
        p_turn=p_turn,
        p_collapse=p_collapse,
        p_malformed=p_malformed,
        p_gold_prune=p_gold,
        p_repeat=p_repeat,
        n_searches=trace.n_searches,
        n_prune_calls=trace.n_prune_calls,
        n_pruned_gold=len(pruned_gold(trace, gold)),
        n_malformed=trace.n_malformed,
        n_repeats=repeated_queries(trace),
        n_turns=len(trace.turns),
        n_returned=len(trace.returned),
    )


# -- TRL-style callables ---------------------------------------------------------------------------


def _as_trace(obj: Any) -> Trace | None:
    from sieve.agent.trace import Trace

    if obj is None or isinstance(obj, Trace):
        return obj
    if isinstance(obj, dict):
        return Trace.from_dict(obj)
    raise TypeError(f"Expected a Trace or its dict, got {type(obj).__name__}")


def _progress(kwargs: dict[str, Any], n: int) -> list[float]:
    given = kwargs.get("progress")
    if given is not None:
        return list(given) if isinstance(given, (list, tuple)) else [float(given)] * n
    state = kwargs.get("trainer_state")
    if state is not None and getattr(state, "max_steps", None):
        return [min(1.0, state.global_step / state.max_steps)] * n
    return [0.0] * n


def _golds(kwargs: dict[str, Any], n: int) -> list[Gold]:
    gold_ids = kwargs.get("gold_ids")
    if gold_ids is None or len(gold_ids) != n:
        raise ValueError(
            f"Expected a 'gold_ids' column with {n} rows, got {None if gold_ids is None else len(gold_ids)}"
        )
    answers = kwargs.get("answers") or [[] for _ in range(n)]
    metas = kwargs.get("meta") or [{} for _ in range(n)]
    return [Gold.from_task({"gold_ids": g, "answers": a, "meta": m}) for g, a, m in zip(gold_ids, answers, metas)]


class _TraceReward:
    """Base of the picklable TRL reward callables: one float (or None) per row's trace."""

    component = "total"

    def __init__(self, config: RewardConfig | None = None) -> None:
        self.config = config or RewardConfig()
        self.__name__ = f"sieve_{self.component}"  # TRL names its logged columns after __name__

    def __call__(self, completions: Sequence[Any] | None = None, **kwargs: Any) -> list[float | None]:
        traces = kwargs.get("trace")
        if traces is None:
            raise ValueError(
                "Expected a 'trace' column (one agent Trace per row), got none; "
                "train with train.rl.SieveGRPOTrainer, which adds it"
            )
        n = len(traces)
        out: list[float | None] = []
        for t, g, p in zip(traces, _golds(kwargs, n), _progress(kwargs, n)):
            trace = _as_trace(t)
            out.append(
                None if trace is None else float(getattr(score_episode(trace, g, self.config, p), self.component))
            )
        return out

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return (type(self), (self.config,))


class EpisodeReward(_TraceReward):
    """The scalar episode reward (``RewardBreakdown.total``)."""

    component = "total"


class ComponentReward(_TraceReward):
    """One term of the breakdown (for logging it as its own TRL reward column with weight 0)."""

    def __init__(self, component: str, config: RewardConfig | None = None) -> None:
        if component not in RewardBreakdown.__dataclass_fields__:
            raise ValueError(
                f"Expected a RewardBreakdown field, got {component!r}; valid: "
                f"{sorted(RewardBreakdown.__dataclass_fields__)}"
            )
        self.component = component
        super().__init__(config)

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return (type(self), (self.component, self.config))


def get_episode_reward(config: RewardConfig | None = None) -> EpisodeReward:
    """Factory of the picklable episode-reward callable for TRL's ``reward_funcs``."""
    return EpisodeReward(config)


def get_component_reward(component: str, config: RewardConfig | None = None) -> ComponentReward:
    """Factory of a callable returning one breakdown term (e.g. ``'traj_recall'``)."""
    return ComponentReward(component, config)


def check_reward_weights(reward_funcs: Sequence[Any], reward_weights: Sequence[float] | None) -> list[float]:
    """One weight per reward function (all 1.0 when ``None``).

    Raises:
        ValueError: if the counts differ.
    """
    if reward_weights is None:
        return [1.0] * len(reward_funcs)
    if len(reward_weights) != len(reward_funcs):
        raise ValueError(
            f"Expected one weight per reward function ({len(reward_funcs)}), got {len(reward_weights)} weights"
        )
    return [float(w) for w in reward_weights]


__all__ = [
    "ComponentReward",
    "EpisodeReward",
    "RewardBreakdown",
    "check_reward_weights",
    "get_component_reward",
    "get_episode_reward",
    "score_episode",
]
