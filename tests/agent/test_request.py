"""One agentic search request, resolved once: its k checked on construction, run as it was built."""

from __future__ import annotations

import dataclasses

import pytest

from sieve.agent import AgentConfig, AgentRequest, run_request
from sieve.agent.config import FloorConfig
from sieve.core.defaults import DEFAULT_K, MAX_K
from sieve.core.errors import InvalidInput


def test_k_is_checked_once_on_construction_against_the_cap() -> None:
    assert AgentRequest("q", "heuristic", AgentConfig(), "c").k == DEFAULT_K
    assert AgentRequest("q", "heuristic", AgentConfig(k=MAX_K), "c").k == MAX_K
    with pytest.raises(InvalidInput, match=f"k between 1 and {MAX_K}, got {MAX_K + 1}"):
        AgentRequest("q", "heuristic", AgentConfig(k=MAX_K + 1), "c")
    # A server's SIEVE_MAX_REQUEST_K, lower or higher, is the cap its requests are checked against.
    with pytest.raises(InvalidInput, match="k between 1 and 5, got 6"):
        AgentRequest("q", "heuristic", AgentConfig(k=6), "c", max_k=5)
    assert AgentRequest("q", "heuristic", AgentConfig(k=150), "c", max_k=150).k == 150


def test_a_request_is_frozen() -> None:
    request = AgentRequest("q", "heuristic", AgentConfig(), "c")
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.policy = "learned"  # type: ignore[misc]


def test_run_request_runs_the_request_as_built(sample_index) -> None:
    config = AgentConfig(k=3, rollouts=2, group_by_doc=True, floor=FloorConfig(enabled=False))
    request = AgentRequest("Charles Lindbergh aircraft", "heuristic", config, sample_index.name)
    trace = run_request(sample_index, request)
    # The config's rollouts and grouping, with no second argument saying them again.
    assert trace.policy == "heuristicx2" and len(trace.meta["rollouts"]) == 2
    assert trace.meta["group_by_doc"] is True and 0 < len(trace.returned) <= 3
    assert len({e.doc_id for e in trace.returned}) == len(trace.returned)
