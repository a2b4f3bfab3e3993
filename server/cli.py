"""The ``sieve`` command line. Each command group lives in ``server/commands/<name>.py`` and
exposes ``register(app)``; this module only assembles them."""

from __future__ import annotations

import importlib
import logging

import typer

app = typer.Typer(
    name="sieve", help="Sieve: agentic retrieval with context pruning.", no_args_is_help=True,
    pretty_exceptions_enable=False, add_completion=False,
)

# Command modules, in help order.
COMMAND_MODULES = ["sieve.server.commands.retrieval", "sieve.server.commands.agent", "sieve.server.commands.evaluate", "sieve.server.commands.serve", "sieve.server.commands.train"]


@app.callback()
def _main(verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging.")) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # Models come from local paths only; make sure no library tries a hub download.
    from sieve.runtime import prepare_runtime

    prepare_runtime()


for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def main() -> None:
    app()


__all__ = ["app", "main"]
