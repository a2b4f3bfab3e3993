"""A command's options as one dataclass (``sieve.cli.commands._flags``): typer sees each field as a parameter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import typer
from typer.testing import CliRunner

from sieve.cli.commands._flags import flag, takes


@dataclass(frozen=True)
class _Flags:
    name: str = flag(typer.Argument(..., help="Who to greet."))
    times: int = flag(typer.Option(1, "--times", "-n", help="How often."))
    greeting: Optional[str] = flag(typer.Option(None, "--greeting", help="The word (default hello)."))
    loud: bool = flag(typer.Option(False, "--loud", help="Shout."))


def test_a_flags_dataclass_is_a_commands_signature() -> None:
    got: list[_Flags] = []

    @takes(_Flags)
    def hello(flags: _Flags) -> None:
        """Greet someone."""
        got.append(flags)

    app = typer.Typer()
    app.command("hello")(hello)
    app.command("other")(lambda: None)  # two commands: typer keeps the name "hello"
    runner = CliRunner()
    res = runner.invoke(app, ["hello", "Ada", "-n", "2", "--loud"])
    assert res.exit_code == 0, res.output
    assert got == [_Flags(name="Ada", times=2, greeting=None, loud=True)]
    help_text = runner.invoke(app, ["hello", "--help"]).output
    assert "Greet someone." in help_text and "--greeting" in help_text and "How often." in help_text
    assert runner.invoke(app, ["hello", "Ada", "--times", "x"]).exit_code == 2  # typed: an int is checked
