"""The Context-1 reward, term by term, as pure functions of a :class:`~sieve.agent.trace.Trace`.

``r = clamp(w_f·F_β + w_r·traj_recall + r_answer − p_prune − p_turn, ε, r_before_penalties)``
(Chroma Context-1 technical report, 2026). Clamping at the pre-penalty value means the
penalties can only take away what was earned, and the floor ε keeps every finished episode
distinguishable from a crashed one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sieve.train.rewards.gold import doc_of
from sieve.train.rewards.metrics import contains_answer, f_beta, recall

if TYPE_CHECKING:
    from sieve.agent.trace import Trace
    from sieve.train.rewards.gold import Gold


def returned_ids(trace: Trace, gold: Gold, level: str) -> list[str]:
    """The ids the episode returned, at the level gold is scored at."""
    if level == "chunk" and gold.chunk_ids:
        return trace.returned_chunk_ids
    return trace.returned_doc_ids


def seen_ids(trace: Trace, gold: Gold, level: str) -> list[str]:
    """Every id ever shown during the episode (pruned ones included)."""
    if level == "chunk" and gold.chunk_ids:
        return list(trace.seen_chunk_ids)
    # seen_doc_ids may be left empty by a hand-built trace; derive it from the chunks then.
    return list(trace.seen_doc_ids) or list(dict.fromkeys(doc_of(c) for c in trace.seen_chunk_ids))


def returned_f_beta(trace: Trace, gold: Gold, beta: float, level: str = "doc") -> float:
    """F-beta of the returned set against gold."""
    return f_beta(returned_ids(trace, gold, level), gold.ids(level), beta)


def trajectory_recall(trace: Trace, gold: Gold, level: str = "doc") -> float:
    """Share of gold seen at any point of the episode, even if pruned later."""
    return recall(seen_ids(trace, gold, level), gold.ids(level))


def answer_returned(trace: Trace, gold: Gold) -> bool:
    """Whether a returned chunk holds the answer: a configured answer chunk, or one whose text
    contains an answer string."""
    for ev in trace.returned:
        if ev.chunk_id in gold.answer_chunk_ids:
            return True
        if gold.answers and ev.text and contains_answer(ev.text, gold.answers):
            return True
    return False


def prune_streak_penalty(trace: Trace, step: float = 0.1, cap: float = 0.5, streak: int = 3) -> float:
    """``step`` per prune call beyond ``streak`` consecutive prune calls, capped at ``cap``.

    Consecutive means adjacent in the episode's flat list of tool calls; any other call
    (malformed ones included) ends a streak.
    """
    run, over = 0, 0
    for call in trace.tool_calls:
        if call.name == "prune" and not call.malformed:
            run += 1
            if run > streak:
                over += 1
        else:
            run = 0
    return min(step * over, cap)


def turn_penalty(n_turns: int, start: int = 64, end: int = 128, max_penalty: float = 0.5) -> float:
    """0 up to ``start`` turns, rising linearly to ``max_penalty`` at ``end`` (and staying there).

    Example:
        >>> turn_penalty(64), turn_penalty(96), turn_penalty(500)
        (0.0, 0.25, 0.5)
    """
    if n_turns <= start:
        return 0.0
    return max_penalty * min(1.0, (n_turns - start) / (end - start))


def clamp(value: float, low: float, high: float) -> float:
    """``value`` clipped to [low, high]; when ``high < low`` (nothing earned) the floor wins."""
    return max(low, min(value, high))


__all__ = [
    "answer_returned",
    "clamp",
    "prune_streak_penalty",
    "returned_f_beta",
    "returned_ids",
    "seen_ids",
    "trajectory_recall",
    "turn_penalty",
]
