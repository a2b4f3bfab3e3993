"""Layering, read from the source: no import cycle, retriever/ below agent/, the web stack in server/ only,
the command line in cli/ only, server/ HTTP only, and nothing importing the benchmarks.

The module graph is built with :mod:`ast` from the files the ``package-dir`` mapping of
``pyproject.toml`` installs (so it needs no import of the package and sees every module, even
ones whose dependencies are optional). An edge ``a -> b`` is an ``import`` or ``from ... import``
in ``a`` naming module ``b`` (``from p import name`` points at ``p.name`` when that is a module,
else at the package ``p``, i.e. its ``__init__``). Which imports count:

* *module level*: statements run when ``a`` is imported, including those inside top-level
  ``try``/``if`` blocks, but not those under ``if TYPE_CHECKING:`` (never run) nor those inside
  functions (run on first call, when every module is already loaded). Only these can make an
  import fail half-way, so :func:`test_no_import_cycle` checks this graph.
* *every import*: all of the above plus the ``TYPE_CHECKING`` and function-local ones. A cycle
  here cannot break an import, but it is still a circle a reader must hold in mind (the agent
  loop and the policy protocol once named each other this way), so
  :func:`test_no_cycle_through_type_only_or_lazy_imports` forbids it too; and the layer rules
  (what ``retriever/`` may reach, who may import FastAPI) hold for this wider graph, since a
  lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WEB = ("fastapi", "starlette", "sse_starlette")
CLI = ("typer",)


def _modules() -> dict[str, Path]:
    """Module name -> source file, for every module the package-dir mapping installs."""
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    out: dict[str, Path] = {}
    for package, folder in mapping.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join((package, *parts))] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module, *, module_level: bool) -> list[ast.Import | ast.ImportFrom]:
    """Import statements of a module: all of them, or only those that run at import time."""
    if not module_level:
        return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If):
            pending.extend(node.orelse if _is_type_checking(node.test) else [*node.body, *node.orelse])
        elif isinstance(node, (ast.Try, ast.With)):
            pending.extend(node.body)
            for extra in ("handlers", "orelse", "finalbody"):
                for item in getattr(node, extra, []):
                    pending.extend(item.body if isinstance(item, ast.ExceptHandler) else [item])
    return found


def _targets(node: ast.Import | ast.ImportFrom, name: str, path: Path) -> list[str]:
    """The full names a statement imports (possibly not ours: filtered by the caller)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}".rstrip(".")
    return [base, *(f"{base}.{a.name}" for a in node.names)]


def graph(*, module_level: bool) -> dict[str, set[str]]:
    """Module -> the modules of the sieve package it imports (and the external top-level names, prefixed ``ext:``)."""
    modules = _modules()
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        out: set[str] = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8")), module_level=module_level):
            targets = _targets(node, name, path)
            if isinstance(node, ast.ImportFrom):
                # `from p import x`: the submodule p.x when it exists, else p itself.
                subs = [t for t in targets[1:] if t in modules]
                targets = subs if len(subs) == len(targets) - 1 else [targets[0], *subs]
            for t in targets:
                if t in modules:
                    out.add(t)
                elif not t.startswith("sieve.") and t != "sieve":
                    out.add(f"ext:{t.split('.')[0]}")
        edges[name] = out - {name}
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path ``[a, b, ..., a]``, or None (iterative depth-first search)."""
    colour: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(edges):
        if colour.get(start):
            continue
        path, stack = [start], [iter(sorted(n for n in edges[start] if n in edges))]
        colour[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                colour[path.pop()] = 2
                stack.pop()
            elif colour.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            elif not colour.get(nxt):
                colour[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(n for n in edges[nxt] if n in edges)))
    return None


def test_the_graph_sees_the_package() -> None:
    edges = graph(module_level=True)
    # Sanity: the graph is not empty and knows edges we can name, so the checks below can fail.
    assert len(edges) > 60
    assert "sieve.retriever.types" in edges["sieve.retriever.index"]
    assert "sieve.agent.policies.base" in graph(module_level=False)["sieve.agent.loop"]
    assert "ext:fastapi" in edges["sieve.server.main"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle() -> None:
    cycle = find_cycle(graph(module_level=True))
    assert cycle is None, f"Expected no import cycle among module-level imports, got {' -> '.join(cycle or [])}"


def test_no_cycle_through_type_only_or_lazy_imports() -> None:
    cycle = find_cycle(graph(module_level=False))
    assert cycle is None, (
        f"Expected no import cycle, even via TYPE_CHECKING or lazy imports, got {' -> '.join(cycle or [])}"
    )


def test_retriever_never_imports_the_layers_above_it() -> None:
    above = (
        "sieve.pruning",
        "sieve.agent",
        "sieve.train",
        "sieve.eval",
        "sieve.server",
        "sieve.facade",
        "sieve.client",
    )
    bad = {
        m: sorted(t for t in ts if t.startswith(above))
        for m, ts in graph(module_level=False).items()
        if m.startswith("sieve.retriever")
    }
    assert not {m: ts for m, ts in bad.items() if ts}


def test_only_the_server_imports_the_web_stack() -> None:
    web = {f"ext:{w}" for w in WEB}
    bad = {m: sorted(ts & web) for m, ts in graph(module_level=False).items() if not m.startswith("sieve.server")}
    assert not {m: ts for m, ts in bad.items() if ts}


def _under(module: str, *packages: str) -> bool:
    """Whether ``module`` is one of ``packages`` or inside one (``sieve.client`` is not under ``sieve.cli``)."""
    return any(module == p or module.startswith(f"{p}.") for p in packages)


def _reaching(prefix: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    """Modules under ``prefix`` and what they import among the packages ``forbidden``."""
    bad = {
        m: sorted(t for t in ts if _under(t, *forbidden))
        for m, ts in graph(module_level=False).items()
        if _under(m, prefix)
    }
    return {m: ts for m, ts in bad.items() if ts}


def test_only_the_cli_imports_typer() -> None:
    cli = {f"ext:{c}" for c in CLI}
    bad = {m: sorted(ts & cli) for m, ts in graph(module_level=False).items() if not _under(m, "sieve.cli")}
    assert not {m: ts for m, ts in bad.items() if ts}


def test_the_server_is_http_only() -> None:
    """server/ serves the library; training, evaluation, benchmarks and the command line are rooms above it."""
    assert not _reaching("sieve.server", ("sieve.cli", "sieve.train", "sieve.eval", "sieve.benchmarks"))


def test_nothing_imports_the_command_line_or_the_benchmarks() -> None:
    edges = graph(module_level=False)
    for top in ("sieve.cli", "sieve.benchmarks"):
        bad = {m: sorted(t for t in ts if _under(t, top)) for m, ts in edges.items() if not _under(m, top)}
        assert not {m: ts for m, ts in bad.items() if ts}, top


def test_only_the_retriever_imports_chromadb() -> None:
    """Chroma stays behind the store interface: the rest of Sieve sees its errors as Sieve's own."""
    bad = sorted(
        m for m, ts in graph(module_level=False).items() if "ext:chromadb" in ts and not m.startswith("sieve.retriever")
    )
    assert bad == []


EVAL_LIBRARY = ("sieve.eval.data", "sieve.eval.metrics")


def test_eval_data_and_metrics_are_a_library_below_training() -> None:
    """eval's sets and metrics import only the retriever, errors and defaults (a module of constants that
    imports nothing of Sieve); train/ and the benchmarks use only them.

    And the package ``sieve.eval`` loads none of its modules when imported (its names are lazy), so the library's
    users never load the runner, its systems or the agent through it.
    """
    edges = graph(module_level=False)
    allowed = ("sieve.core.errors", "sieve.core.defaults", "sieve.retriever", *EVAL_LIBRARY)
    library = {
        m: sorted(t for t in edges[m] if t.startswith("sieve") and not _under(t, *allowed)) for m in EVAL_LIBRARY
    }
    assert not {m: ts for m, ts in library.items() if ts}
    users = {
        m: sorted(t for t in ts if _under(t, "sieve.eval") and t not in EVAL_LIBRARY)
        for m, ts in edges.items()
        if _under(m, "sieve.train", "sieve.benchmarks")
    }
    assert not {m: ts for m, ts in users.items() if ts}
    # only the helper that makes its names lazy (sieve/core/lazy.py, standard library alone)
    assert [t for t in graph(module_level=True)["sieve.eval"] if t.startswith("sieve")] == ["sieve.core.lazy"]
    assert not [t for t in graph(module_level=True)["sieve.core.lazy"] if t.startswith("sieve")]


# The ladder, bottom first: a module may import its own rung and the rungs below it, never one above
# (docs/design.md draws it). `sieve` itself (the public package's __init__) sits on the top rung.
LADDER: tuple[tuple[str, ...], ...] = (
    ("sieve.core", "sieve.data"),  # data/: the shipped sample and the script that builds it (standard library)
    ("sieve.retriever",),
    ("sieve.pruning",),
    ("sieve.agent",),
    ("sieve.settings",),
    ("sieve.eval",),
    ("sieve.train",),
    ("sieve", "sieve.facade", "sieve.client", "sieve.adapters", "sieve.results", "sieve.server", "sieve.cli"),
    ("sieve.benchmarks",),
)


def rung(module: str) -> int:
    """The ladder's rung of ``module`` (the most specific package naming it wins: sieve.core before sieve)."""
    best = max(
        ((len(p), i) for i, packages in enumerate(LADDER) for p in packages if _under(module, p)),
        default=None,
    )
    if best is None:
        raise AssertionError(f"{module} is on no rung of LADDER: place it there")
    return best[1]


def test_every_module_is_on_the_ladder() -> None:
    for module in graph(module_level=False):
        rung(module)
    assert rung("sieve") == rung("sieve.facade") > rung("sieve.train") > rung("sieve.eval") > rung("sieve.core.errors")


def test_no_module_imports_a_higher_rung() -> None:
    """Lazy and type-only imports count: a dependency upward is one, however it is spelled."""
    upward = {
        m: sorted(t for t in ts if not t.startswith("ext:") and rung(t) > rung(m))
        for m, ts in graph(module_level=False).items()
    }
    assert not {m: ts for m, ts in upward.items() if ts}, "Expected no import up the ladder"
    # the check can fail: a retriever module naming the agent is upward
    assert rung("sieve.agent.loop") > rung("sieve.retriever.index")
