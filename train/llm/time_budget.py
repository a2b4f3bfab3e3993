"""A time budget for a transformers/TRL training run, shared by the SFT and GRPO routes.

Its own module so that ``train/llm/sft.py`` and ``train/llm/rl.py`` both use it without importing each other.
"""

from __future__ import annotations

import logging
import time
from typing import Any

logger = logging.getLogger(__name__)


def time_limit_callback(max_seconds: float, *, anneal: bool = False) -> Any:
    """Stops training cleanly (the model is still saved) once ``max_seconds`` of wall time have passed.

    With ``anneal`` (a time budget and no step cap), ``state.max_steps`` (what the reward's annealing
    reads as the end of training) is kept at the step the budget is projected to end at, from the
    steps' pace so far, so the schedule spans the budget rather than a cap that is never reached.
    ``stopped_by`` says afterwards whether the time limit ended the run.
    """
    from transformers import TrainerCallback

    class _TimeLimit(TrainerCallback):
        def __init__(self) -> None:
            self.t0 = time.perf_counter()
            self.stopped_by_time = False

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            elapsed = time.perf_counter() - self.t0
            if elapsed > max_seconds:
                logger.info("Time limit of %.0f s reached at step %d; stopping", max_seconds, state.global_step)
                control.should_training_stop = True
                self.stopped_by_time = True
            elif anneal and state.global_step > 0:
                state.max_steps = max(state.global_step + 1, round(state.global_step * max_seconds / elapsed))

    return _TimeLimit()


__all__ = ["time_limit_callback"]
