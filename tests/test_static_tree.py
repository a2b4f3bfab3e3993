"""A tool that reads only the checkout sees the package as it installs: ``sieve/agent`` is ``agent/``.

The top-level folders are the declared layout and install as sub-packages of ``sieve`` through the
``package-dir`` mapping of ``pyproject.toml``. A static tool (an import-graph drawer, a type checker
or an editor run on the checkout) knows nothing of that mapping, so ``sieve/`` holds one relative
symbolic link per mapped folder (``sieve/agent -> ../agent``): ``import sieve.agent.loop`` then
resolves from the tree alone. These tests hold the links to the mapping, and build the import graph
with grimp (import-linter's graph builder) from the checkout, with no installed copy in sight, to check
that it sees every module and the same layers ``tests/test_layers.py`` reads with :mod:`ast`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.test_layers import _modules, rung

ROOT = Path(__file__).resolve().parents[1]


def _mapping() -> dict[str, str]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]


def test_each_mapped_folder_has_its_link_under_sieve() -> None:
    for package, folder in _mapping().items():
        if package == "sieve":
            continue
        link = ROOT / "sieve" / package.removeprefix("sieve.")
        assert link.is_symlink(), f"{link.relative_to(ROOT)} should be a link to ../{folder}"
        assert os.readlink(link) == f"../{folder}"
        assert link.resolve() == (ROOT / folder).resolve()


# Run in a child: isolated (-I -S: no environment, no site-packages and so no installed `sieve`), the
# checkout's root as its only own path entry; grimp comes from wherever this interpreter found it.
GRAPH = """
import json, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import grimp
graph = grimp.build_graph("sieve", cache_dir=None)
print(json.dumps({m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}))
"""


def _grimp_graph() -> dict[str, list[str]]:
    import grimp  # noqa: F401  (a test dependency: fail here, clearly, if it is missing)

    grimp_home = str(Path(sys.modules["grimp"].__file__ or "").resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", GRAPH, str(ROOT), grimp_home],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


def test_a_tree_only_import_graph_sees_every_module_and_no_upward_import() -> None:
    graph = _grimp_graph()
    assert set(graph) == set(_modules()), "grimp (from the tree) and the package-dir mapping disagree"
    assert "sieve.agent.policies.base" in graph["sieve.agent.loop"]  # it follows imports through the links
    upward = {m: [t for t in ts if rung(t) > rung(m)] for m, ts in graph.items()}
    assert not {m: ts for m, ts in upward.items() if ts}
