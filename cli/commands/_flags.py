"""A command's arguments and options as one dataclass: :func:`flag` declares a field, :func:`takes` the command.

A command with thirty options was a function of thirty parameters, each passed on again by name
(to the settings, to the request) in a body that outgrew any screen. Declared as the fields of a
frozen dataclass, each option is one line (its type and its ``typer.Option``), and the command is a
short function of one typed value. Typer still sees one parameter per field, in field order, so
every flag name, default and help text reads exactly as it would have in the function's signature.

Example:
    >>> from dataclasses import dataclass
    >>> import typer
    >>> @dataclass(frozen=True)
    ... class HelloFlags:
    ...     name: str = flag(typer.Argument(..., help="Who to greet."))
    ...     loud: bool = flag(typer.Option(False, "--loud", help="Shout."))
    >>> @takes(HelloFlags)
    ... def hello(flags: HelloFlags) -> None:
    ...     print(flags.name.upper() if flags.loud else flags.name)
    >>> hello(name="Ada", loud=True)
    ADA
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")


def flag(declaration: Any) -> Any:
    """A field of a flags dataclass, declared by its ``typer.Option(...)`` or ``typer.Argument(...)``."""
    return dataclasses.field(metadata={"cli": declaration})


def takes(flags: type[T]) -> Callable[[Callable[[T], None]], Callable[..., None]]:
    """Turn ``command(flags: T) -> None`` into the function typer registers: keyword parameters named, typed
    and declared as the fields of the dataclass ``flags``, gathered into one ``flags`` value per call."""
    hints = typing.get_type_hints(flags)  # the fields' types as objects: typer reads no strings here
    params = [
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.metadata["cli"], annotation=hints[f.name])
        for f in dataclasses.fields(flags)
    ]

    def decorate(command: Callable[[T], None]) -> Callable[..., None]:
        @functools.wraps(command)
        def from_options(**values: Any) -> None:
            command(flags(**values))

        # Set after functools.wraps, which copies the command's own (one-parameter) annotations.
        from_options.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
        from_options.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
        return from_options

    return decorate


__all__ = ["flag", "takes"]
