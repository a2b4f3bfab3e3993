"""Fixtures of the agent tests; the scripted FAKE models live in ``_agent_fakes.py``."""

from __future__ import annotations

import pytest
from _agent_fakes import ScriptedBackend


@pytest.fixture()
def run_script(sample_index):
    """Run one episode of the LLM policy over the sample index with a scripted fake model."""
    from sieve.agent import AgentConfig, SearchAgent, make_policy

    def _run(script, question: str = "Charles Lindbergh aircraft city population", **config_kwargs):
        from sieve.agent.config import FloorConfig

        backend = script if hasattr(script, "chat") else ScriptedBackend(script)
        # The loop's mechanics are checked on the policy's own returned set; the floor that fuses
        # it with hybrid's ranking (on by default) has its own tests in test_ranking_floor.py.
        config = AgentConfig(**{"floor": FloorConfig(enabled=False), **config_kwargs})
        agent = SearchAgent(sample_index, make_policy("openai", config, backend=backend), config)
        events: list[dict] = []
        trace = agent.run(question, on_event=events.append)
        return trace, backend, events

    return _run
