"""One registry per kind of thing: a toy of each kind, added from this one file (no edit elsewhere), works
behind every interface that names its kind, and shows up wherever the kind's names are listed.

| kind (registry)                    | toy          | interfaces driven here                                          |
| ----------------------------------- | ------------ | --------------------------------------------------------------- |
| agent tool (``register_tool``)      | ``echo``     | Python, HTTP (trace), CLI (``sieve search --trace``)            |
| policy (``register_policy``)        | ``toy``      | Python, HTTP (3 routes, OpenAPI), CLI, LangChain, LlamaIndex,   |
|                                     |              | eval                                                            |
| retrieval mode (``register_mode``)  | ``keywords`` | Python, HTTP (OpenAPI), CLI, LangChain, LlamaIndex, eval        |
| task writer (``register_writer``)   | ``toy``      | Python, CLI (``train synth``; ``train all``: choice, help, auto) |
| file reader (``register_reader``)   | ``.toy``     | Python (``Sieve.index``), CLI (``sieve index``, helps)          |
| SFT teacher (``register_teacher``)  | ``toy``      | Python (``collect_teacher``), CLI (``train sft``)               |

The toys are registered by module-scoped fixtures and removed when this module ends, so no other test
file sees them. The CLI is built after they are registered (``cli``): a command's options, their help
included, are made when its module registers it, as they are when a kind registers on import.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
from typer.testing import CliRunner

from sieve.agent.backends.base import ParsedToolCall
from sieve.agent.factory import POLICIES, policy_help, register_policy
from sieve.agent.policies.base import PolicyStep
from sieve.agent.tool_specs import TOOLS, AgentTool, known_tool_names, register_tool, tool_specs
from sieve.core.errors import InvalidInput
from sieve.pruning.tokens import ApproxTokenCounter
from sieve.retriever.modes import MODES, mode_help, register_mode
from sieve.retriever.readers import READERS, formats_help, register_reader, supported_suffixes
from sieve.train.llm.teachers import TEACHERS, register_teacher, teacher_help
from sieve.train.synth_writers import (
    WRITERS,
    auto_chain,
    pipeline_writer_help,
    pipeline_writers,
    register_writer,
    writer_help,
)

QUESTION = "Who flew the Spirit of St. Louis?"
WIDE = {"COLUMNS": "4000"}  # help text on one line, so a registry's whole list is found verbatim


# -- a toy agent tool: echoes its text back, shows no chunk ------------------------------------------
def _echo_prepare(box: Any, p: Any) -> None:
    box.check_text("echo", "text", p.args["text"])


def _echo_commit(box: Any, p: Any, out: Any, turn: int) -> None:
    out.content = f"echo: {p.args['text']}"


@pytest.fixture(scope="module")
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
    episodes: list[str] = []  # every question a toy policy started on, whoever ran it (server threads too)

    def start(self, episode: Any) -> _ToySession:
        _ToyPolicy.episodes.append(episode.question)
        return _ToySession()

    def token_counter(self) -> ApproxTokenCounter:
        return ApproxTokenCounter()


@pytest.fixture(scope="module")
def toy_policy(toy_tool: AgentTool) -> Iterator[str]:
    register_policy("toy", lambda config, backend: _ToyPolicy(), "search once, echo, then finish")
    yield "toy"
    del POLICIES["toy"]


# -- a toy retrieval mode: BM25's ranking, its hits labelled as its own -------------------------------
class _Keywords:
    def __init__(self, index: Any) -> None:
        self.bm25 = index.bm25

    def search(self, query: str, k: int = 10, *, where: Any = None, exclude: Any = None) -> list[Any]:
        return [replace(h, mode="keywords") for h in self.bm25.search(query, k, where=where, exclude=exclude)]

    def batch_search(self, queries: list[str], k: int = 10, *, where: Any = None) -> list[list[Any]]:
        return [self.search(q, k, where=where) for q in queries]


@pytest.fixture(scope="module")
def toy_mode() -> Iterator[str]:
    register_mode("keywords", _Keywords, "BM25 under another name", needs_vectors=False)
    yield "keywords"
    del MODES["keywords"]


# -- a toy task writer: the template writer under another name, last in auto's chain -----------------
@pytest.fixture(scope="module")
def toy_writer() -> Iterator[str]:
    from sieve.train.synth_generators import TemplateWriter

    class ToyWriter(TemplateWriter):
        name = "toy"

    register_writer("toy", lambda o: ToyWriter(seed=o.seed), "the template writer under another name", auto_order=99)
    yield "toy"
    del WRITERS["toy"]


# -- a toy file reader: .toy files, the first line the title ------------------------------------------
def _read_toy(path: Path) -> tuple[str, str]:
    title, _, text = path.read_text(encoding="utf-8").partition("\n")
    return title.strip(), text.strip()


@pytest.fixture(scope="module")
def toy_reader() -> Iterator[str]:
    register_reader(_read_toy, ".toy")
    yield ".toy"
    del READERS[".toy"]


# -- a toy SFT teacher: the toy policy's episodes ------------------------------------------------------
@pytest.fixture(scope="module")
def toy_teacher(toy_policy: str) -> Iterator[str]:
    from sieve.agent import make_policy

    register_teacher("toy", lambda config, options: make_policy("toy", config), "the toy policy")
    yield "toy"
    del TEACHERS["toy"]


@pytest.fixture(scope="module")
def toys(toy_tool, toy_policy, toy_mode, toy_writer, toy_reader, toy_teacher) -> None:
    """Every toy registered (what the CLI and the server are built after)."""


@pytest.fixture(scope="module")
def cli(toys: None) -> typer.Typer:
    """The ``sieve`` command line assembled as ``sieve.cli.main`` assembles it, after the toys registered."""
    from sieve.cli.main import COMMAND_MODULES

    app = typer.Typer(name="sieve", no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(app)
    return app


@pytest.fixture(scope="module")
def server(toys: None, session_data_dir: Path, sample_index: Any, embedder: Any) -> Iterator[str]:
    """The real app under uvicorn, in this process (so it sees the toys), serving the sample; its URL."""
    sys.path.insert(0, str(Path(__file__).parent / "server"))
    try:
        from live_server import start_server
    finally:
        sys.path.pop(0)
    srv = start_server(embedder, session_data_dir, collection=sample_index.name, request_timeout_s=120.0)
    yield srv.url
    srv.stop()


@pytest.fixture(scope="module")
def sample_sieve(sample_index: Any) -> Any:
    """``sieve.Sieve`` over the session's sample index (read-only), sharing its loaded embedder."""
    from sieve import Sieve

    s = Sieve(sample_index.name, config=sample_index.config)
    s._index = sample_index
    return s


def run(cli: typer.Typer, *args: str, env: dict[str, str] | None = None) -> Any:
    res = CliRunner().invoke(cli, list(args), env=env)
    assert res.exit_code == 0, res.output
    return res


def help_of(cli: typer.Typer, *command: str) -> str:
    return str(run(cli, *command, "--help", env=WIDE).stdout)


def data_flags(sample_index: Any) -> list[str]:
    return ["-c", sample_index.name, "--data-dir", str(sample_index.config.data_dir)]


# -- agent tool ---------------------------------------------------------------------------------------
def _echo_calls(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for t in turns for c in t["tool_calls"] if c["name"] == "echo"]


def test_a_registered_tool_is_offered_described_parsed_and_run(toys, sample_index) -> None:
    from sieve.agent import AgentConfig, SearchAgent, make_policy
    from sieve.agent.prompts import system_prompt

    assert "echo" in [s["function"]["name"] for s in tool_specs()]
    assert "- echo(text): repeat a text back." in system_prompt()
    assert {"echo", "say"} <= known_tool_names()
    config = AgentConfig()
    trace = SearchAgent(sample_index, make_policy("toy", config), config).run(QUESTION)
    calls = [c for t in trace.turns for c in t.tool_calls]
    echo = next(c for c in calls if c.name == "echo")
    assert echo.error is None and echo.arguments == {"text": "hello"}
    assert trace.policy == "toy" and trace.returned


def test_a_registered_tool_runs_over_http_and_the_cli(toys, server, cli, sample_index, tmp_path: Path) -> None:
    body = httpx.post(
        server + "/v1/search", json={"query": QUESTION, "policy": "toy", "include_trace": True}, timeout=120
    ).json()
    (echo,) = _echo_calls(body["trace"]["turns"])
    assert echo["arguments"] == {"text": "hello"} and echo["error"] is None

    trace_file = tmp_path / "trace.jsonl"
    run(cli, "search", QUESTION, "--policy", "toy", "--trace", str(trace_file), "--json", *data_flags(sample_index))
    (echo,) = _echo_calls(json.loads(trace_file.read_text().splitlines()[0])["turns"])
    assert echo["arguments"] == {"text": "hello"}


# -- policy -------------------------------------------------------------------------------------------
def test_a_registered_policy_is_valid_everywhere_names_are_checked(toys) -> None:
    from sieve.eval.systems import parse_systems, systems_help
    from sieve.server.schemas import SearchRequest
    from sieve.settings import Settings

    assert policy_help().endswith(" | toy")
    assert Settings(policy="toy").policy == "toy"
    assert "toy" in Settings().available_policies()
    assert SearchRequest(query="q", policy="toy").policy == "toy"
    assert "toy" in SearchRequest.model_json_schema()["properties"]["policy"]["anyOf"][0]["enum"]
    assert parse_systems("agent:toy") == ["agent:toy"] and "|toy[:nofloor]" in systems_help()


def test_a_registered_policy_runs_behind_every_interface(toys, server, cli, sample_index, sample_sieve) -> None:
    from langchain_core.documents import Document
    from llama_index.core.schema import NodeWithScore

    from sieve.adapters.langchain import SieveRetriever as LangChainRetriever
    from sieve.adapters.llamaindex import SieveRetriever as LlamaIndexRetriever
    from sieve.eval.systems import make_system

    def ran(interface: Any) -> Any:
        """What ``interface()`` returned, checked to have run the toy policy exactly once."""
        before = len(_ToyPolicy.episodes)
        out = interface()
        assert len(_ToyPolicy.episodes) == before + 1, interface
        return out

    # HTTP: the agentic route, Context-1's route (the policy as `model`), the playground's list, the schema
    r = ran(lambda: httpx.post(server + "/v1/search", json={"query": QUESTION, "policy": "toy"}, timeout=120))
    assert r.status_code == 200 and r.json()["policy"] == "toy" and r.json()["results"]
    r = ran(lambda: httpx.post(server + "/search", json={"query": QUESTION, "model": "toy"}, timeout=120))
    assert r.status_code == 200, r.text
    assert "toy" in httpx.get(server + "/playground/config").json()["policies"]
    openapi = httpx.get(server + "/openapi.json").json()["components"]["schemas"]
    assert "toy" in openapi["SearchRequest"]["properties"]["policy"]["anyOf"][0]["enum"]
    assert httpx.post(server + "/v1/search", json={"query": QUESTION, "policy": "bogus"}).status_code == 422
    # CLI: search runs it; every help that lists policies lists it
    res = ran(lambda: run(cli, "search", QUESTION, "--policy", "toy", "--json", *data_flags(sample_index)))
    assert json.loads(res.stdout)["policy"] == "toy"
    for command in (("search",), ("serve",)):
        assert policy_help() in help_of(cli, *command), command
    assert "|toy[:nofloor]" in help_of(cli, "eval")
    # Python, the adapters (over HTTP and in-process) and eval's systems
    assert ran(lambda: sample_sieve.search(QUESTION, policy="toy")).policy == "toy"
    docs = ran(lambda: LangChainRetriever(base_url=server, policy="toy", k=3).invoke(QUESTION))
    assert docs and all(isinstance(d, Document) for d in docs)
    assert ran(lambda: LangChainRetriever(sieve=sample_sieve, policy="toy", k=3).invoke(QUESTION))
    nodes = ran(lambda: LlamaIndexRetriever(server, policy="toy", k=3).retrieve(QUESTION))
    assert nodes and all(isinstance(n, NodeWithScore) for n in nodes)
    assert ran(lambda: LlamaIndexRetriever(sieve=sample_sieve, policy="toy", k=3).retrieve(QUESTION))
    assert ran(lambda: make_system("agent:toy", sample_index, depth=3).run(QUESTION)).doc_ids


# -- retrieval mode -----------------------------------------------------------------------------------
def test_a_registered_mode_searches_and_is_accepted(toys, sample_index) -> None:
    from sieve.eval.systems import parse_systems
    from sieve.server.schemas import RetrieveRequest

    hits = sample_index.search("Spirit of St. Louis", 3, mode="keywords")
    assert [h.chunk.chunk_id for h in hits] == [
        h.chunk.chunk_id for h in sample_index.search("Spirit of St. Louis", 3, mode="bm25")
    ]
    assert {h.mode for h in hits} == {"keywords"}
    assert mode_help().endswith(" | keywords")
    assert RetrieveRequest(query="q", mode="keywords").mode == "keywords"
    assert "keywords" in RetrieveRequest.model_json_schema()["properties"]["mode"]["enum"]
    assert parse_systems("keywords") == ["keywords"]


def test_a_registered_mode_runs_behind_every_interface(toys, server, cli, sample_index, sample_sieve) -> None:
    from sieve.adapters import result_modes
    from sieve.adapters.langchain import SieveRetriever as LangChainRetriever
    from sieve.adapters.llamaindex import SieveRetriever as LlamaIndexRetriever
    from sieve.eval.systems import make_system, systems_help

    query = "Spirit of St. Louis"
    expected = [h.chunk_id for h in sample_index.search(query, 3, mode="bm25")]
    # HTTP
    r = httpx.post(server + "/v1/retrieve", json={"query": query, "k": 3, "mode": "keywords"}, timeout=120)
    assert r.status_code == 200 and r.json()["mode"] == "keywords"
    assert [x["id"] for x in r.json()["results"]] == expected
    openapi = httpx.get(server + "/openapi.json").json()["components"]["schemas"]
    assert "keywords" in openapi["RetrieveRequest"]["properties"]["mode"]["enum"]
    # CLI
    res = run(cli, "retrieve", query, "--mode", "keywords", "-k", "3", "--json", *data_flags(sample_index))
    assert [x["id"] for x in json.loads(res.stdout)["results"]] == expected
    assert mode_help() in help_of(cli, "retrieve")
    assert systems_help() in help_of(cli, "eval") and "keywords" in systems_help()
    # Python
    assert [h.chunk_id for h in sample_sieve.retrieve(query, 3, mode="keywords")] == expected
    # LangChain and LlamaIndex, over HTTP and in-process
    assert result_modes()[-1] == "keywords"
    assert [d.id for d in LangChainRetriever(base_url=server, mode="keywords", k=3).invoke(query)] == expected
    assert [d.id for d in LangChainRetriever(sieve=sample_sieve, mode="keywords", k=3).invoke(query)] == expected
    assert "keywords" in LangChainRetriever.model_json_schema()["properties"]["mode"]["enum"]
    with pytest.raises(ValueError, match="mode"):
        LangChainRetriever(base_url=server, mode="magic")
    assert [n.node.node_id for n in LlamaIndexRetriever(server, mode="keywords", k=3).retrieve(query)] == expected
    in_process = LlamaIndexRetriever(sieve=sample_sieve, mode="keywords", k=3).retrieve(query)
    assert [n.node.node_id for n in in_process] == expected
    with pytest.raises(InvalidInput, match="keywords"):  # the error lists the registered modes
        LlamaIndexRetriever(server, mode="magic").retrieve(query)
    # eval's baselines
    assert make_system("keywords", sample_index, depth=3).run(query).doc_ids


# -- task writer --------------------------------------------------------------------------------------
def test_a_registered_writer_writes_tasks(toys, sample_index, tmp_path: Path) -> None:
    from sieve.train.synth import SynthConfig, synthesize

    assert "toy (the template writer" in writer_help()
    out = tmp_path / "tasks.jsonl"
    report = synthesize(sample_index, out, SynthConfig(n=2, generator="toy"), progress=False)
    tasks = [json.loads(line) for line in out.read_text().splitlines()]
    assert report.written == len(tasks) >= 1
    assert {t["meta"]["generator"] for t in tasks} == {"toy"}


def test_a_registered_writer_is_offered_by_train_synth_and_train_all(
    toys, cli, sample_index, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sieve.train.pipeline import PipelineConfig

    # sieve train synth writes with it
    out = tmp_path / "tasks.jsonl"
    run(cli, "train", "synth", "--generator", "toy", "--n", "2", "--out", str(out), "--json", *data_flags(sample_index))
    assert {json.loads(line)["meta"]["generator"] for line in out.read_text().splitlines()} == {"toy"}
    assert writer_help() in help_of(cli, "train", "synth")
    # sieve train all: a choice of --generator, listed in its help, last in auto's chain
    assert auto_chain() == ("hard", "heuristic", "claims", "toy") and "toy" in pipeline_writers()
    assert "local" not in pipeline_writers()  # `train all` configures no model for a writer
    assert pipeline_writer_help() in help_of(cli, "train", "all") and "then toy," in pipeline_writer_help()
    corpus = tmp_path / "corpus.jsonl"  # any existing file: the pipeline is not run
    corpus.write_text("")
    assert PipelineConfig(corpus=corpus, generator="toy").generator == "toy"
    with pytest.raises(InvalidInput, match="'toy'"):  # the error lists the registered writers
        PipelineConfig(corpus=corpus, generator="bogus")
    seen: list[Any] = []
    monkeypatch.setattr("sieve.train.pipeline.run_pipeline", lambda cfg, rc, progress=True: seen.append(cfg) or {})
    train_all = ["train", "all", "--corpus", str(corpus), "--out", str(tmp_path / "run"), "--json"]
    run(cli, *train_all, "--generator", "toy", *data_flags(sample_index))
    assert [cfg.generator for cfg in seen] == ["toy"]
    bogus = CliRunner().invoke(cli, [*train_all, "--generator", "bogus"])
    assert bogus.exit_code == 2 and "'toy'" in bogus.stdout


# -- file reader --------------------------------------------------------------------------------------
def test_a_registered_reader_is_read_by_sieve_index_and_the_python_api(toys, cli, embedder, tmp_path: Path) -> None:
    from sieve import Sieve
    from sieve.retriever import CorpusIndex, RetrieverConfig

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "lindbergh.toy").write_text("Lindbergh's aeroplane\nThe Spirit of St. Louis crossed the Atlantic.\n")
    (folder / "wright.toy").write_text("The Wright Flyer\nThe first powered aeroplane flew at Kitty Hawk.\n")
    (folder / "bleriot.toy").write_text("Bleriot XI\nA monoplane flew over the English Channel.\n")
    (folder / "logo.png").write_bytes(b"\x89PNG")
    assert supported_suffixes()[-2:] == (".toy", ".jsonl") and ".toy" in formats_help()
    with pytest.raises(InvalidInput):
        register_reader(_read_toy, "TOY")  # a suffix is lower-case, with its dot
    # CLI: sieve index reads it, says it reads it, and both helps that list the formats list it
    data = tmp_path / "data"
    res = run(cli, "index", str(folder), "-c", "notes", "--data-dir", str(data), env=WIDE)
    assert f"Ignored 1 file: 1 .png; Sieve reads {formats_help()}" in res.stderr
    hits = json.loads(
        run(cli, "retrieve", "Atlantic", "--mode", "bm25", "-c", "notes", "--data-dir", str(data), "--json").stdout
    )
    assert [(h["doc_id"], h["title"]) for h in hits["results"]] == [("lindbergh.toy", "Lindbergh's aeroplane")]
    assert formats_help() in help_of(cli, "index")
    assert formats_help() in help_of(cli, "train", "all")
    # Python
    s = Sieve("pynotes", config=RetrieverConfig(data_dir=data))
    s._index = CorpusIndex.open(s.config, "pynotes", create=True, embedder=embedder)  # share the loaded model
    report = s.index(folder, progress=False)
    assert report.ingest.files_read == 3 and report.ingest.ignored == [str(folder / "logo.png")]
    assert [h.chunk.title for h in s.retrieve("Atlantic", 1, mode="bm25")] == ["Lindbergh's aeroplane"]


# -- SFT teacher --------------------------------------------------------------------------------------
def test_a_registered_teacher_teaches_through_train_sft(
    toys, cli, sample_index, sample_tasks, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sieve.train.llm.sft import WarmStartConfig, collect_teacher

    assert teacher_help().endswith(" | toy (the toy policy)")
    with pytest.raises(InvalidInput, match="'toy'"):  # the error lists the registered teachers
        WarmStartConfig(teacher="bogus")
    # Python: its episodes are the toy policy's
    episodes = collect_teacher(sample_index, sample_tasks[:1], WarmStartConfig(teacher="toy"), progress=False)
    assert [trace.policy for _, trace, _ in episodes] == ["toy"]
    # CLI: --teacher toy reaches the run (its training, minutes on a CPU, is left out) and the help lists it
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in sample_tasks[:1]))

    def collect_only(index: Any, cfg: WarmStartConfig, progress: bool = True) -> dict[str, Any]:
        from sieve.eval.data import read_tasks

        return {"policies": [tr.policy for _, tr, _ in collect_teacher(index, read_tasks(cfg.tasks), cfg, False)]}

    monkeypatch.setattr("sieve.train.llm.sft.run_sft", collect_only)
    res = run(cli, "train", "sft", "--tasks", str(tasks), "--teacher", "toy", "--json", *data_flags(sample_index))
    assert json.loads(res.stdout) == {"policies": ["toy"]}
    assert teacher_help() in help_of(cli, "train", "sft")
