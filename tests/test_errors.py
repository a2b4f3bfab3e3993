"""One error hierarchy: library errors in ``sieve.core.errors``, HTTP-only ones and the status map in ``sieve.server.errors``."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from sieve.core import errors as library
from sieve.core.errors import InvalidInput, SieveError
from sieve.server import errors as http
from sieve.server.errors import http_status

# The statuses clients have always received for each code.
STATUS = {
    "sieve_error": 500,
    "invalid_input": 422,
    "invalid_pattern": 422,
    "unknown_collection": 404,
    "not_found": 404,
    "empty_corpus": 409,
    "store_unavailable": 503,
    "model_unavailable": 503,
    "backend_error": 502,
    "unauthorized": 401,
    "payload_too_large": 413,
    "timeout": 504,
    "store_locked": 503,
    "overloaded": 503,
    "client_closed_request": 499,
    "embedder_mismatch": 409,
    "collection_gone": 404,
}


def _classes(module) -> list[type[SieveError]]:
    return [
        getattr(module, n)
        for n in module.__all__
        if isinstance(getattr(module, n), type) and issubclass(getattr(module, n), SieveError)
    ]


def test_every_error_has_one_code_and_its_status() -> None:
    classes = _classes(library) + _classes(http)
    codes = [cls.code for cls in classes]
    assert len(codes) == len(set(codes)), codes
    assert {cls.code: http_status(cls("x")) for cls in classes} == STATUS


def test_http_only_errors_stay_out_of_the_library() -> None:
    only_http = {"Unauthorized", "PayloadTooLarge", "RequestTimeout", "Overloaded", "ClientClosedRequest"}
    assert {c.__name__ for c in _classes(http)} == only_http
    assert not only_http & set(library.__all__)


def test_the_public_name_and_the_value_error_contract() -> None:
    import sieve

    assert sieve.SieveError is SieveError
    assert issubclass(InvalidInput, ValueError) and issubclass(library.InvalidPattern, InvalidInput)


@pytest.mark.parametrize(
    ("module", "name", "bad"),
    [
        ("sieve.agent.config", "AgentConfig", {"k": 0}),
        ("sieve.pruning.config", "PruningConfig", {"soft_fraction": 2.0}),
        ("sieve.retriever.config", "RetrieverConfig", {"chunk_tokens": 4}),
        ("sieve.train.config", "EpisodeConfig", {"max_turns": 0}),
        ("sieve.train.llm.rl", "RLConfig", {"group": 1}),
        ("sieve.train.rewards", "RewardConfig", {"epsilon": 2.0}),
    ],
)
def test_config_validation_raises_our_error(module: str, name: str, bad: dict) -> None:
    config = getattr(importlib.import_module(module), name)
    with pytest.raises(InvalidInput, match="Expected"):
        config(**bad)


@pytest.mark.parametrize(
    "module",
    [
        "sieve.core.errors",
        "sieve.server.errors",
        "sieve.settings",
        "sieve.core.runtime",
        "sieve.retriever.config",
        "sieve.agent.config",
        "sieve.client",
    ],
)
def test_each_module_imports_first_without_a_cycle(module: str) -> None:
    # A fresh interpreter importing this module before anything else: a cycle would fail here.
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True, capture_output=True, timeout=120)


def test_the_errors_module_depends_on_nothing_of_sieve() -> None:
    tree = ast.parse(Path(library.__file__).read_text(encoding="utf-8"))
    imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] + [
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    ]
    assert not [m for m in imported if m and m.split(".")[0] == "sieve"]
