"""One source of configuration: ``sieve.settings.Settings`` reads ``SIEVE_*``; nothing else reads the environment.

The first test walks every module of the installed package folders and fails on any environment
read outside the settings module, so the rule cannot erode; the others check that the variables
reach the CLI, the server's configs and the public ``Sieve`` object alike.
"""

from __future__ import annotations

import ast
import json
import re
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sieve.core.errors import InvalidInput
from sieve.retriever.config import RetrieverConfig
from sieve.settings import Settings, load_settings

ROOT = Path(__file__).resolve().parents[1]
# Every folder the package-dir mapping installs (read from pyproject.toml, so a new room is never missed).
PACKAGE_FOLDERS = tuple(
    tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values()
)

# Modules that may touch os.environ, each with its one-line reason. Nothing here *reads* SIEVE_*.
ALLOWED = {
    "sieve/core/runtime.py": "writes the offline / telemetry / OpenMP switches third-party libraries read, and the "
    "settings `sieve serve --workers` hands its worker processes",
    "benchmarks/load_test.py": "passes its own environment on to the `sieve serve` child it benchmarks",
    "benchmarks/gpu_check_llm.py": "passes its own environment, and the endpoint it started, on to the `sieve eval` "
    "child it runs",
}


def _env_uses(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for every os.environ / os.getenv / os.putenv use, ``from os import environ``, or typer ``envvar=``."""
    hits = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
            and node.attr in ("environ", "environb", "getenv", "getenvb", "putenv", "unsetenv")
        ):
            hits.append((node.lineno, f"os.{node.attr}"))
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            hits += [(node.lineno, f"from os import {a.name}") for a in node.names if "env" in a.name]
        elif isinstance(node, ast.keyword) and node.arg == "envvar":
            hits.append((node.value.lineno, "envvar="))
    return hits


def _modules() -> list[Path]:
    return sorted(p for folder in PACKAGE_FOLDERS for p in (ROOT / folder).rglob("*.py"))


def test_nothing_outside_the_settings_module_reads_the_environment() -> None:
    found: dict[str, list[tuple[int, str]]] = {}
    for path in _modules():
        hits = _env_uses(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        if hits:
            found[path.relative_to(ROOT).as_posix()] = hits
    unexpected = {name: hits for name, hits in found.items() if name not in ALLOWED}
    assert not unexpected, f"read SIEVE_* through sieve.settings, and other variables not at all: {unexpected}"
    # The allow-list must not outlive its reasons.
    assert set(found) == set(ALLOWED), f"allowed but clean now, drop from ALLOWED: {set(ALLOWED) - set(found)}"


def test_only_the_settings_module_declares_settings() -> None:
    users = [
        p.relative_to(ROOT).as_posix()
        for p in _modules()
        if re.search(r"^\s*(from|import) pydantic_settings\b", p.read_text(encoding="utf-8"), re.M)
    ]
    assert users == ["sieve/settings.py"]


def _runs_at_import(tree: ast.Module) -> list[ast.stmt]:
    """Module and class-body statements: everything but the bodies of functions."""
    out: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            out += _runs_at_import(ast.Module(body=node.body, type_ignores=[]))
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Import, ast.ImportFrom)):
            out.append(node)
    return out


def test_the_environment_is_never_touched_at_import_time() -> None:
    for name in ALLOWED:  # the other modules do not touch it at all
        tree = ast.parse((ROOT / name).read_text(encoding="utf-8"))
        assert not [hit for node in _runs_at_import(tree) for hit in _env_uses(node)], name


def test_the_docs_list_every_variable() -> None:
    table = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `(SIEVE_[A-Z0-9_]+)` \|", table, re.M))
    assert listed == {f"SIEVE_{name.upper()}" for name in Settings.model_fields}
    # A default written as a literal is the field's own (SIEVE_POLICY once said `heuristic` after
    # the default became `learned`); defaults described in words (a folder, "CPU count") are not checked.
    literals = re.findall(r"^\| `SIEVE_([A-Z0-9_]+)` \| `([^`<]*)` \|", table, re.M)
    assert len(literals) >= 30
    for name, shown in literals:
        default = Settings.model_fields[name.lower()].default
        assert shown == (str(default).lower() if isinstance(default, bool) else str(default)), name


def test_library_configs_ignore_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SIEVE_DATA_DIR", str(tmp_path / "from-env"))
    monkeypatch.setenv("SIEVE_EMBED_BACKEND", "torch")
    monkeypatch.setenv("SIEVE_EMBED_DTYPE", "bfloat16")
    monkeypatch.setenv("SIEVE_CHROMA_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("SIEVE_MODEL_DIR", str(tmp_path / "models"))
    plain = RetrieverConfig()
    assert plain.data_dir != tmp_path / "from-env" and plain.embed_dtype == "float32" and plain.chroma_url is None
    assert plain.embed_backend == "onnx" and plain.model_dir is None
    built = load_settings().retriever_config()
    assert built.data_dir == tmp_path / "from-env" and (built.embed_backend, built.embed_dtype) == ("torch", "bfloat16")
    assert built.models_dir == tmp_path / "models"
    assert built.chroma_url == "http://127.0.0.1:9"


def test_flags_override_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SIEVE_MODEL_DIR", raising=False)  # the test session shares one (tests/conftest.py)
    monkeypatch.setenv("SIEVE_DATA_DIR", str(tmp_path / "env"))
    monkeypatch.setenv("SIEVE_OPENAI_BASE_URL", "http://env:8001/v1")
    monkeypatch.setenv("SIEVE_OPENAI_MODEL", "env-model")
    s = load_settings(data_dir=tmp_path / "flag", openai_base_url="http://flag:8001/v1", k=None)
    config = s.agent_config(k=3)
    assert s.data_dir == tmp_path / "flag" and s.k == 10
    assert (config.base_url, config.model, config.k) == ("http://flag:8001/v1", "env-model", 3)
    assert config.models_dir == tmp_path / "flag" / "models"  # converted models follow the data folder


def test_bad_values_name_their_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIEVE_CHUNK_TOKENS", "lots")
    with pytest.raises(InvalidInput, match=r"SIEVE_CHUNK_TOKENS.*got 'lots'"):
        load_settings()
    monkeypatch.delenv("SIEVE_CHUNK_TOKENS")
    monkeypatch.setenv("SIEVE_REQUIRE_AUTH", "1")
    monkeypatch.setenv("SIEVE_API_KEY", "")
    with pytest.raises(InvalidInput, match="Expected SIEVE_API_KEY"):
        load_settings()
    monkeypatch.setenv("SIEVE_API_KEY", "s3cret")
    monkeypatch.setenv("SIEVE_MAX_K", "0")
    with pytest.raises(InvalidInput, match="SIEVE_MAX_K") as err:
        load_settings()
    assert "s3cret" not in err.value.message


def test_the_python_api_reads_the_same_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from sieve import Sieve

    monkeypatch.delenv("SIEVE_MODEL_DIR", raising=False)  # the test session shares one (tests/conftest.py)
    monkeypatch.setenv("SIEVE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("SIEVE_CHUNK_TOKENS", "48")
    monkeypatch.setenv("SIEVE_CHUNK_OVERLAP", "8")
    monkeypatch.setenv("SIEVE_COLLECTION", "from-env")
    monkeypatch.setenv("SIEVE_BUDGET_TOKENS", "4000")
    s = Sieve()
    assert s.collection == "from-env" and s.config.data_dir == tmp_path
    assert (s.config.chunk_tokens, s.config.chunk_overlap) == (48, 8)  # what Sieve().index() chunks with
    assert s._agent_config.budget_tokens == 4000 and s._agent_config.models_dir == tmp_path / "models"
    explicit = Sieve("mine", config=RetrieverConfig(data_dir=tmp_path / "other"))
    assert explicit.collection == "mine" and explicit.config.chunk_tokens == 200
    assert explicit._agent_config.models_dir == tmp_path / "other" / "models"


def test_the_cli_takes_its_collection_from_the_environment(sample_index, session_data_dir: Path) -> None:
    from sieve.cli.main import app

    res = CliRunner().invoke(
        app,
        ["retrieve", "Spirit of St. Louis", "-k", "2", "--json", "--data-dir", str(session_data_dir)],
        env={"SIEVE_COLLECTION": "sample"},
    )
    assert res.exit_code == 0, res.output
    body = json.loads(res.stdout[res.stdout.index("{") :])
    assert body["collection"] == "sample" and len(body["results"]) == 2


def test_one_default_policy():
    """`sieve search`, `sieve demo`, `Sieve.search`, the server and the playground share one default policy."""
    from sieve.agent.factory import DEFAULT_POLICY
    from sieve.cli.commands.agent import DEMO_POLICY
    from sieve.settings import Settings

    assert Settings.model_fields["policy"].default == DEFAULT_POLICY == DEMO_POLICY


def test_one_home_for_k_mode_and_caps() -> None:
    """The defaults several layers name come from sieve.core.defaults; the cap on k is one number."""
    import inspect

    from sieve.agent.config import AgentConfig
    from sieve.core.defaults import DEFAULT_K, DEFAULT_MODE, MAX_DEPTH, MAX_K, MIN_BUDGET_TOKENS
    from sieve.facade import Sieve
    from sieve.retriever.base import validate_k
    from sieve.server.schemas import RetrieveRequest

    assert Settings.model_fields["k"].default == AgentConfig().k == DEFAULT_K
    assert Settings.model_fields["max_request_k"].default == MAX_K
    assert inspect.signature(validate_k).parameters["max_k"].default == MAX_K
    # Not a cap on k: how deep one search reads, for pools (search_documents, the floor) past any k allowed.
    assert RetrieverConfig().max_k == MAX_DEPTH > MAX_K
    retrieve = inspect.signature(Sieve.retrieve).parameters
    assert retrieve["k"].default == DEFAULT_K and retrieve["mode"].default == DEFAULT_MODE
    assert RetrieveRequest.model_fields["mode"].default == DEFAULT_MODE
    with pytest.raises(InvalidInput, match=f">= {MIN_BUDGET_TOKENS}"):
        AgentConfig(budget_tokens=MIN_BUDGET_TOKENS - 1)


def test_the_python_api_has_the_servers_cap_on_k(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from sieve import Sieve
    from sieve.core.defaults import MAX_K

    monkeypatch.setenv("SIEVE_DATA_DIR", str(tmp_path))
    for s in (Sieve("c"), Sieve("c", config=RetrieverConfig(data_dir=tmp_path))):  # checked before any store opens
        with pytest.raises(InvalidInput, match=f"k between 1 and {MAX_K}"):
            s.search("q", k=MAX_K + 1)
        with pytest.raises(InvalidInput, match=f"k between 1 and {MAX_K}"):
            s.retrieve("q", k=MAX_K + 1)
    monkeypatch.setenv("SIEVE_MAX_REQUEST_K", "3")
    with pytest.raises(InvalidInput, match="k between 1 and 3"):
        Sieve("c").search("q", k=4)
