"""GRPO over the harness stops when no episode of a batch ran (a model that cannot run Sieve's episodes).

Before the guard, a tiny gpt-oss whose every rollout failed still took optimizer steps: its router's
load-balancing loss moved the weights with no reward behind them.
"""

from __future__ import annotations

import pytest

from sieve.agent.trace import Trace
from sieve.train.llm.grpo import raise_if_all_failed
from sieve.train.llm.rollout import Rollout


def _rollout(stop: str, error: str | None = None) -> Rollout:
    trace = Trace(question="q", stop_reason=stop)
    if error:
        trace.meta["error"] = error
    return Rollout(trace=trace)


def test_a_batch_of_failed_episodes_stops_the_run_with_the_first_error() -> None:
    with pytest.raises(RuntimeError, match="all 2 of this batch ending as backend_error.*cache cannot be cropped"):
        raise_if_all_failed([_rollout("backend_error", "cache cannot be cropped"), _rollout("backend_error")])


def test_one_episode_that_ran_is_enough_to_go_on() -> None:
    raise_if_all_failed([_rollout("backend_error", "x"), _rollout("finished")])
    raise_if_all_failed([_rollout("max_turns")])
    raise_if_all_failed([])
