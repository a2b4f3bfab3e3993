"""One registry per kind of thing: a toy policy, retrieval mode, task writer and agent tool, each added
from this one file (no edit elsewhere), work end to end and show up wherever the names are listed.

Each toy is registered by a fixture and removed after its test, so no other test sees it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sieve.agent.backends.base import ParsedToolCall
from sieve.agent.factory import POLICIES, policy_help, register_policy
from sieve.agent.policies.base import PolicyStep
from sieve.agent.tool_specs import TOOLS, AgentTool, known_tool_names, register_tool, tool_specs
from sieve.pruning.tokens import ApproxTokenCounter
from sieve.retriever.modes import MODES, mode_help, register_mode
from sieve.train.synth_writers import WRITERS, register_writer, writer_help


# -- a toy agent tool: echoes its text back, shows no chunk ------------------------------------------
def _echo_prepare(box: Any, p: Any) -> None:
    box.check_text("echo", "text", p.args["text"])


def _echo_commit(box: Any, p: Any, out: Any, turn: int) -> None:
    out.content = f"echo: {p.args['text']}"


@pytest.fixture()
def toy_tool() -> Iterator[AgentTool]:
    tool = register_tool(
        AgentTool(
            name="echo",
            description="Repeat a text back.",
            parameters={
                "type": "object",
                "properties": {"text": {"type": "string", "description": "Any text."}},
                "required": ["text"],
            },
            prompt="echo(text): repeat a text back.",
            prepare=_echo_prepare,
            commit=_echo_commit,
            arg_aliases={"message": "text"},
            call_aliases=("say",),
        )
    )
    yield tool
    del TOOLS["echo"]


# -- a toy policy: search the question, echo it, finish with what was shown -------------------------
class _ToySession:
    def step(self, episode: Any) -> PolicyStep:
        if episode.turn == 0:
            calls = [
                ParsedToolCall("search", {"query": episode.question}, call_id="a"),
                ParsedToolCall("say", {"message": "hello"}, call_id="b"),
            ]
        else:
            calls = [ParsedToolCall("finish", {"ids": list(episode.context.chunks)}, call_id="c")]
        return PolicyStep(tool_calls=calls)


class _ToyPolicy:
    name = "toy"

    def start(self, episode: Any) -> _ToySession:
        return _ToySession()

    def token_counter(self) -> ApproxTokenCounter:
        return ApproxTokenCounter()


@pytest.fixture()
def toy_policy() -> Iterator[str]:
    register_policy("toy", lambda config, backend: _ToyPolicy(), "search once, then finish")
    yield "toy"
    del POLICIES["toy"]


@pytest.fixture()
def toy_mode() -> Iterator[str]:
    # BM25 scores under another name, reading no vectors.
    register_mode("keywords", lambda index: index.bm25, "BM25 under another name", needs_vectors=False)
    yield "keywords"
    del MODES["keywords"]


@pytest.fixture()
def toy_writer() -> Iterator[str]:
    from sieve.train.synth_generators import TemplateWriter

    class ToyWriter(TemplateWriter):
        name = "toy"

    register_writer("toy", lambda o: ToyWriter(seed=o.seed), "the template writer under another name")
    yield "toy"
    del WRITERS["toy"]


def test_a_registered_tool_is_offered_described_parsed_and_run(toy_tool, toy_policy, sample_index) -> None:
    from sieve.agent import AgentConfig, SearchAgent, make_policy
    from sieve.agent.prompts import system_prompt

    assert "echo" in [s["function"]["name"] for s in tool_specs()]
    assert "- echo(text): repeat a text back." in system_prompt()
    assert {"echo", "say"} <= known_tool_names()
    config = AgentConfig()
    trace = SearchAgent(sample_index, make_policy("toy", config), config).run("Who flew the Spirit of St. Louis?")
    calls = [c for t in trace.turns for c in t.tool_calls]
    echo = next(c for c in calls if c.name == "echo")
    assert echo.error is None and echo.arguments == {"text": "hello"}
    assert trace.policy == "toy" and trace.returned


def test_a_registered_policy_is_valid_everywhere_names_are_checked(toy_policy) -> None:
    from sieve.eval.systems import parse_systems
    from sieve.server.schemas import SearchRequest
    from sieve.settings import Settings

    assert "toy" in policy_help()
    assert Settings(policy="toy").policy == "toy"
    assert "toy" in Settings().available_policies()
    assert SearchRequest(query="q", policy="toy").policy == "toy"
    assert "toy" in SearchRequest.model_json_schema()["properties"]["policy"]["anyOf"][0]["enum"]
    assert parse_systems("agent:toy") == ["agent:toy"]


def test_a_registered_mode_searches_and_is_accepted(toy_mode, sample_index) -> None:
    from sieve.eval.systems import parse_systems
    from sieve.server.schemas import RetrieveRequest

    hits = sample_index.search("Spirit of St. Louis", 3, mode="keywords")
    assert [h.chunk.chunk_id for h in hits] == [
        h.chunk.chunk_id for h in sample_index.search("Spirit of St. Louis", 3, mode="bm25")
    ]
    assert "keywords" in mode_help()
    assert RetrieveRequest(query="q", mode="keywords").mode == "keywords"
    assert "keywords" in RetrieveRequest.model_json_schema()["properties"]["mode"]["enum"]
    assert parse_systems("keywords") == ["keywords"]


def test_a_registered_writer_writes_tasks(toy_writer, sample_index, tmp_path: Path) -> None:
    from sieve.train.synth import SynthConfig, synthesize

    assert "toy (the template writer" in writer_help()
    out = tmp_path / "tasks.jsonl"
    report = synthesize(sample_index, out, SynthConfig(n=2, generator="toy"), progress=False)
    tasks = [json.loads(line) for line in out.read_text().splitlines()]
    assert report.written == len(tasks) >= 1
    assert {t["meta"]["generator"] for t in tasks} == {"toy"}
