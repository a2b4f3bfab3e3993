"""Is the retrained policy better than the shipped one? A before/after verdict on paired per-task scores.

``sieve train all`` runs the shipped policy and the retrained one on the same tasks (held-apart
synthesized tasks; the user's labelled questions when given) and recommends the retrained one
only when it is better by this rule (:data:`RULE`):

1. The *deciding set* is the labelled questions (``--eval-tasks``) when given, else the held-apart
   synthesized tasks: real questions are what a user asks.
2. On it, per task, ``d = recall_retrained - recall_shipped``; the noise is ``margin`` (2) standard
   errors of the mean of ``d`` (paired: both policies answer the same tasks).
3. Better when ``mean(d) > noise``; or, as a tie-breaker, when ``mean(d) >= 0`` (recall not lower)
   and the tie-breaking score's mean paired difference beats its own noise. The rows' ``reward`` key
   holds that score; Sieve as served is scored by recall at twice k there
   (:func:`sieve.train.ranking.corpus.served_scores`), and the verdict calls it by that name
   (``VerdictConfig.tie_metric``): each figure is named as what it is.
4. And on no other set is the retrained recall lower than the shipped one by more than that set's noise.

Otherwise the shipped default stays, with the reasons: recall not above the noise (figures), worse on
another set, and, where the shipped policy already solves most tasks, "tasks saturated". A deciding
set of fewer than ``few_tasks`` tasks is too small to tell a difference from the noise: that decides
the wording first ("too few tasks to tell", not "not better"), before any advice.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from sieve.core.defaults import DEFAULT_K
from sieve.core.errors import InvalidInput

RULE = (
    "better = on the deciding set (the --eval-tasks questions when given, else the held-apart synthesized "
    "tasks) the retrained policy's mean recall@{k} beats the shipped one's by more than {margin:g} standard errors "
    "of the paired per-task differences; or, recall@{k} not lower, its mean {tie} beats the shipped one's by more "
    "than {margin:g} standard errors; and on no other set is its recall@{k} lower by more than that set's noise"
)


@dataclass(frozen=True)
class VerdictConfig:
    margin: float = field(default=2.0, metadata={"help": "Noise = this many standard errors of the paired mean."})
    saturated: float = field(
        default=0.9,
        metadata={"help": "Share of tasks the shipped policy fully solves above which the tasks are called saturated."},
    )
    few_tasks: int = field(
        default=20,
        metadata={
            "help": "Below this many tasks a set is too small to tell: the verdict says so instead of 'not better'."
        },
    )
    tie_metric: str = field(
        default="recall@{2k}",
        metadata={
            "help": "The name of the rows' tie-breaking score (their 'reward' key; {k} and {2k} filled in): Sieve as "
            "served is scored by recall at twice k (sieve.train.ranking.corpus.served_scores)."
        },
    )

    def __post_init__(self) -> None:
        if self.margin < 0 or not 0 < self.saturated <= 1 or self.few_tasks < 0:
            raise InvalidInput(
                f"Expected margin >= 0, 0 < saturated <= 1, few_tasks >= 0, got {self.margin}, "
                f"{self.saturated}, {self.few_tasks}"
            )


@dataclass(frozen=True)
class PairedDiff:
    """Mean paired difference (retrained - shipped) of one score and its noise (``margin`` standard errors)."""

    shipped: float
    retrained: float
    diff: float
    noise: float

    @classmethod
    def of(cls, shipped: list[float], retrained: list[float], margin: float) -> PairedDiff:
        """Example:
        >>> PairedDiff.of([0.5, 0.5, 0.5, 0.5], [1.0, 1.0, 1.0, 1.0], 2.0).noise
        0.0
        """
        if len(shipped) != len(retrained):
            raise InvalidInput(f"Expected paired scores, got {len(shipped)} shipped and {len(retrained)} retrained")
        n = len(shipped)
        if n == 0:
            return cls(0.0, 0.0, 0.0, math.inf)
        d = [r - s for s, r in zip(shipped, retrained)]
        mean = sum(d) / n
        se = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1) / n) if n > 1 else math.inf
        return cls(sum(shipped) / n, sum(retrained) / n, mean, margin * se)

    @property
    def above_noise(self) -> bool:
        return self.diff > self.noise

    @property
    def below_noise(self) -> bool:
        return self.diff < -self.noise


@dataclass(frozen=True)
class SetComparison:
    """Shipped vs retrained on one task set."""

    name: str
    n: int
    recall: PairedDiff
    reward: PairedDiff
    solved_by_shipped: int

    @classmethod
    def of(
        cls, name: str, shipped: list[dict[str, Any]], retrained: list[dict[str, Any]], config: VerdictConfig
    ) -> SetComparison:
        """From per-task rows (``id``, ``recall``, ``reward``, ``all_gold``), paired by task id."""
        by_id = {r["id"]: r for r in retrained}
        if {r["id"] for r in shipped} != set(by_id):
            raise InvalidInput(
                f"Expected the same tasks for both policies on {name!r}, got "
                f"{len(shipped)} and {len(retrained)} different ones"
            )
        pairs = [(s, by_id[s["id"]]) for s in shipped]

        def paired(key: str) -> PairedDiff:
            return PairedDiff.of([s[key] for s, _ in pairs], [r[key] for _, r in pairs], config.margin)

        return cls(
            name=name,
            n=len(pairs),
            recall=paired("recall"),
            reward=paired("reward"),
            solved_by_shipped=sum(s["all_gold"] == 1.0 for s, _ in pairs),
        )


@dataclass(frozen=True)
class Verdict:
    """Whether the retrained policy is recommended, on which set that was decided, the rule, and why."""

    better: bool
    deciding_set: str
    rule: str
    reasons: list[str]
    sets: list[SetComparison]
    tie_metric: str = "reward"  # what the sets' ``reward`` figures are
    few_tasks: int = 0  # the deciding set had fewer tasks than this: too few to tell (0: it had enough)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (an unknown noise, from fewer than 2 tasks, is ``None``)."""

        def clean(x: Any) -> Any:
            if isinstance(x, dict):
                return {k: clean(v) for k, v in x.items()}
            if isinstance(x, list):
                return [clean(v) for v in x]
            return None if isinstance(x, float) and math.isinf(x) else x

        return clean({**asdict(self), "headline": self.headline()})

    @property
    def weak(self) -> bool:
        """Whether the deciding set was too small to tell a difference from the noise."""
        return self.few_tasks > 0

    def headline(self) -> str:
        """One line for the CLI and the report: the weakness of a small deciding set first, then the advice."""
        n = next((s.n for s in self.sets if s.name == self.deciding_set), 0)
        if self.weak and not self.better:
            return (
                f"Too few tasks to tell whether the retrained policy is better: {n} in {self.deciding_set} "
                f"({self.few_tasks} or more tell a difference from the noise); the shipped default stays."
            )
        if self.weak:
            return (
                f"Retrained policy better than the shipped default on only {n} tasks of {self.deciding_set} "
                f"(a weak verdict: {self.few_tasks} or more tell): recommended; confirm with --eval-tasks."
            )
        what = (
            "better than the shipped default: recommended"
            if self.better
            else "not better than the shipped default: the default stays"
        )
        return f"Retrained policy {what}."


def fmt_diff(p: PairedDiff) -> str:
    """``shipped -> retrained (diff, noise ±x)``, e.g. ``0.700 -> 0.750 (+0.050, noise ±0.031)``."""
    noise = f"noise ±{p.noise:.3f}" if math.isfinite(p.noise) else "noise unknown: under 2 tasks"
    return f"{p.shipped:.3f} -> {p.retrained:.3f} ({p.diff:+.3f}, {noise})"


def _deciding_set(d: SetComparison, k: int, tie: str) -> tuple[bool, list[str]]:
    """Whether the deciding set says better (recall above the noise, or level recall and ``tie`` above it), and why."""
    if d.recall.above_noise:
        return True, [f"recall@{k} on {d.name} {fmt_diff(d.recall)}"]
    if d.recall.diff >= 0 and d.reward.above_noise:
        return True, [f"recall@{k} on {d.name} {fmt_diff(d.recall)}: within the noise; {tie} {fmt_diff(d.reward)}"]
    if d.recall.below_noise:
        return False, [f"recall@{k} on {d.name} is lower: {fmt_diff(d.recall)}"]
    return False, [
        f"recall@{k} on {d.name} {fmt_diff(d.recall)}: not above the noise",
        f"{tie} {fmt_diff(d.reward)}: "
        + ("not above the noise" if d.recall.diff >= 0 else f"no tie-break, recall@{k} is lower"),
    ]


def _caveats(sets: list[SetComparison], deciding: str, cfg: VerdictConfig, k: int) -> list[str]:
    """What weakens the comparison: sets the shipped policy already solves, and other sets with few tasks."""
    reasons: list[str] = []
    for s in sets:
        if s.n and s.solved_by_shipped >= cfg.saturated * s.n:
            reasons.append(
                f"tasks saturated: the shipped policy already solves {s.solved_by_shipped} of {s.n} "
                f"{s.name} (every gold chunk in its top {k})"
            )
        if s.name != deciding and s.n < cfg.few_tasks:
            reasons.append(f"only {s.n} task{'s' if s.n != 1 else ''} in {s.name}: a weak comparison")
    return reasons


def decide(
    sets: list[SetComparison], deciding: str, config: VerdictConfig | None = None, k: int = DEFAULT_K
) -> Verdict:
    """The verdict of :data:`RULE` on per-set comparisons; ``deciding`` names the set that decides.

    Raises:
        InvalidInput: when ``deciding`` is not one of the sets.

    Example:
        >>> cfg = VerdictConfig()
        >>> rows = lambda xs: [{"id": str(i), "recall": x, "reward": x, "all_gold": float(x == 1)}
        ...                    for i, x in enumerate(xs)]
        >>> worse = SetComparison.of("held", rows([1, 1, 1, 1]), rows([0.5, 0.5, 1, 1]), cfg)
        >>> decide([worse], "held").better
        False
    """
    cfg = config or VerdictConfig()
    tie = cfg.tie_metric.format(k=k, **{"2k": 2 * k})
    by_name = {s.name: s for s in sets}
    if deciding not in by_name:
        raise InvalidInput(f"Expected the deciding set among {sorted(by_name)}, got {deciding!r}")
    d = by_name[deciding]
    reasons: list[str] = []
    weak = d.n < cfg.few_tasks
    if weak:  # first: it decides how everything after it reads
        reasons.append(
            f"only {d.n} task{'s' if d.n != 1 else ''} in {d.name}: too few to tell a difference from the noise "
            f"({cfg.few_tasks} or more tell)"
        )
    better, why = _deciding_set(d, k, tie)
    reasons += why
    for other in sets:
        if other.name != deciding and other.recall.below_noise:
            better = False
            reasons.append(f"recall@{k} on {other.name} is lower: {fmt_diff(other.recall)}")
    reasons += _caveats(sets, deciding, cfg, k)
    return Verdict(
        better=better,
        deciding_set=deciding,
        rule=RULE.format(margin=cfg.margin, k=k, tie=tie),
        reasons=reasons,
        sets=list(sets),
        tie_metric=tie,
        few_tasks=cfg.few_tasks if weak else 0,
    )


__all__ = ["RULE", "PairedDiff", "SetComparison", "Verdict", "VerdictConfig", "decide", "fmt_diff"]
