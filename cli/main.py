"""The ``sieve`` command line. Each command group lives in ``cli/commands/<name>.py`` and
exposes ``register(app)``; this module only assembles them.

Start-up is kept cheap: the command modules import nothing heavy at module level (torch, Chroma,
FastAPI load inside the command that needs them), so ``sieve --help`` costs typer and little
else. ``tests/server/test_cli.py`` checks that structurally (which modules a command imports).
"""

from __future__ import annotations

import importlib
import inspect
import logging
import sys
from typing import TYPE_CHECKING, Any

import typer

from sieve.cli.commands._common import print_problem

if TYPE_CHECKING:
    from collections.abc import Sequence

app = typer.Typer(
    name="sieve",
    help="Sieve: agentic retrieval with context pruning.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

# Command modules, in help order.
COMMAND_MODULES = [
    "sieve.cli.commands.retrieval",
    "sieve.cli.commands.agent",
    "sieve.cli.commands.evaluate",
    "sieve.cli.commands.serve",
    "sieve.cli.commands.train",
]


class _ProgressSafeHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes log lines through ``tqdm.write``, so a line logged while a progress bar is drawn
    lands above the bar instead of in the middle of it (both go to stderr)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from tqdm import tqdm

            tqdm.write(self.format(record), file=sys.stderr)
        except Exception:  # logging must never raise into the command
            self.handleError(record)


def configure_logging(verbose: bool) -> None:
    handler = _ProgressSafeHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, handlers=[handler], force=True)


@app.callback()
def _main(verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging.")) -> None:
    configure_logging(verbose)
    # Models come from local paths only; make sure no library tries a hub download.
    from sieve.core.runtime import prepare_runtime

    prepare_runtime()


for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def _plain_flags(command: Any) -> None:
    """Show on/off options as bare flags: this typer prints ``--bf16 <bool>``, which reads as if the
    option took a value (``--bf16 true``). An empty metavar shows ``--bf16`` alone."""
    for param in command.params:
        if getattr(param, "is_flag", False):
            param.metavar = ""
    help_option = command.get_help_option(typer.Context(command))
    if help_option is not None:
        help_option.metavar = ""
    for sub in getattr(command, "commands", {}).values():
        _plain_flags(sub)


def _unwrap_help(command: Any) -> None:
    """Join each help paragraph's source lines into one: typer keeps the docstring's own line breaks
    after the first paragraph, so at any width but the source's the text came out ragged (a full
    line, then a stub of two words). Rich then wraps each paragraph to the terminal."""
    if command.help:
        paragraphs = inspect.cleandoc(command.help).split("\n\n")
        command.help = "\n\n".join(p if p.startswith("\b") else " ".join(p.split("\n")) for p in paragraphs)
    for sub in getattr(command, "commands", {}).values():
        _unwrap_help(sub)


def build_command() -> Any:
    """The click command tree of :data:`app`, with flags shown as flags and help paragraphs unwrapped."""
    command = typer.main.get_command(app)
    _plain_flags(command)
    _unwrap_help(command)
    return command


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``sieve`` script.

    With ``--json`` anywhere on the line, a usage error (unknown option, bad value) is printed as
    JSON problem details on stdout too, like every error a command raises, so a script reading
    ``--json`` output never has to parse a second format.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    command = build_command()
    if "--json" not in args:
        command.main(args=args, prog_name="sieve")
        return
    try:
        rv = command.main(args=args, prog_name="sieve", standalone_mode=False)
    except typer.Abort:
        print_problem("interrupted", "Interrupted", 130)
        sys.exit(130)
    except typer.TyperException as exc:  # click's usage errors (exit code 2)
        print_problem("invalid_input", exc.format_message(), 422)
        sys.exit(getattr(exc, "exit_code", 2))
    sys.exit(rv if isinstance(rv, int) else 0)


__all__ = ["app", "build_command", "configure_logging", "main"]


if __name__ == "__main__":  # python -m sieve.cli.main, where the console script is not on PATH
    main()
