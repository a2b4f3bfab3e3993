"""Options and helpers shared by CLI commands."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from sieve.core.errors import SieveError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sieve.settings import Settings

F = TypeVar("F", bound="Callable[..., Any]")


def setting_option(name: str, *flags: str, help: str | None = None, otherwise: str | None = None) -> Any:
    """A flag for the setting ``name``, its help and default read from :class:`~sieve.settings.Settings`
    (which reads them from the config dataclasses): written once, never repeated in a help text.

    Options never read the environment themselves (no ``envvar=``): a flag left at None falls back
    to the Settings value, which is where every SIEVE_* variable is read.

    Args:
        name: the Settings field.
        flags: the flag's spellings (default ``--name-with-dashes``).
        help: what the flag is, when the field's description reads wrong as a flag's help.
        otherwise: the default in words, for a default computed at run time or unset.
    """
    from sieve.settings import ENV_PREFIX, Settings

    field = Settings.model_fields[name]
    what = (help or field.description or name).rstrip(".")
    if otherwise is None and field.default_factory is None and field.default is not None:
        otherwise = repr(field.default) if isinstance(field.default, str) else str(field.default)
    default = f"${ENV_PREFIX}{name.upper()}" + (f" or {otherwise}" if otherwise else "")
    return typer.Option(None, *(flags or ("--" + name.replace("_", "-"),)), help=f"{what} (default {default}).")


CollectionOpt = setting_option("collection", "--collection", "-c", help="Collection name")
DataDirOpt = setting_option("data_dir", help="Data folder", otherwise="the per-user data dir")
ChromaUrlOpt = setting_option("chroma_url", help="Chroma server URL", otherwise="embedded Chroma")
EmbedderOpt = setting_option("embedder", help="Local sentence-transformers folder", otherwise="the bundled MiniLM")

JsonOpt = typer.Option(False, "--json", help="Machine-readable JSON on stdout (errors too, as problem details).")
EmbedBackendOpt = setting_option("embed_backend")
EmbedDtypeOpt = setting_option("embed_dtype")
Bf16Opt = typer.Option(False, "--bf16", help="Shorthand for --embed-backend torch --embed-dtype bfloat16.")
DeviceOpt = setting_option("device")
WideOpt = typer.Option(
    False,
    "--wide",
    help="Wrap each result's text over several lines instead of one line per result cut to the terminal width.",
)


def embed_overrides(backend: str | None, dtype: str | None, bf16: bool = False) -> dict[str, str | None]:
    """The Settings overrides of the embedding flags (``--bf16`` is torch + bfloat16).

    A collection remembers which embedder wrote it; querying it needs the same one.
    """
    if bf16:
        if backend not in (None, "torch") or dtype not in (None, "bfloat16"):
            from sieve.core.errors import InvalidInput

            raise InvalidInput(
                f"Expected --bf16 alone or with torch/bfloat16, got --embed-backend {backend} --embed-dtype {dtype}"
            )
        return {"embed_backend": "torch", "embed_dtype": "bfloat16"}
    if backend is not None and dtype is None:
        dtype = "auto"  # a backend given alone gets its own default precision, not $SIEVE_EMBED_DTYPE's
    return {"embed_backend": backend, "embed_dtype": dtype}


def settings_from(
    data_dir: Path | None = None, chroma_url: str | None = None, embedder: str | None = None, **overrides: Any
) -> Settings:
    """Settings from the environment, with the CLI flags that were given (not None) taking precedence."""
    from sieve.settings import load_settings

    return load_settings(data_dir=data_dir, chroma_url=chroma_url, embedder=embedder, **overrides)


def cli_errors(fn: F) -> F:
    """Report Sieve errors as one clear line and exit 2, instead of a traceback.

    A command called with ``--json`` (its ``as_json`` parameter) prints the error as JSON problem
    details on stdout instead, the shape the HTTP API answers with.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = bool(kwargs.get("as_json"))
        try:
            return fn(*args, **kwargs)
        except SieveError as exc:
            if as_json:
                from sieve.server.errors import error_problem

                print_json(error_problem(exc))
            else:
                typer.secho(f"error [{exc.code}]: {exc.message}", fg=typer.colors.RED, err=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            if as_json:
                print_problem("interrupted", "Interrupted; indexing resumes where it stopped if run again", 130)
            else:
                typer.secho("interrupted; indexing resumes where it stopped if run again", err=True)
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def parse_assignments(pairs: list[str], config_cls: type) -> dict[str, Any]:
    """``["max_turns=3", "floor.fusion_path=f.json"]`` as field values of the dataclass ``config_cls``.

    Values are read as JSON where they parse (numbers, booleans), else kept as strings. A dotted
    key sets a field of a nested config (``floor.hybrid_depth=40``): that field's default with the
    given fields replaced.

    Raises:
        InvalidInput: a pair without ``=`` or a name that is not a field of ``config_cls`` (or of its nested config).
    """
    import dataclasses

    from sieve.core.errors import InvalidInput

    fields = [f.name for f in dataclasses.fields(config_cls)]
    # Each dataclass-valued field's default instance: what a dotted key's fields replace.
    defaults = {f.name: d for f in dataclasses.fields(config_cls) if (d := _dataclass_default(f)) is not None}
    valid = sorted([*fields, *(f"{n}.{g.name}" for n, d in defaults.items() for g in dataclasses.fields(d))])
    out: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        key, eq, raw = pair.partition("=")
        if not eq or key not in valid:
            raise InvalidInput(
                f"Expected KEY=VALUE with KEY a field of {config_cls.__name__}, got {pair!r}; valid keys: {valid}"
            )
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        head, dot, sub = key.partition(".")
        if dot:
            nested.setdefault(head, {})[sub] = value
        else:
            out[key] = value
    for head, values in nested.items():
        out[head] = dataclasses.replace(defaults[head], **values)
    return out


def _dataclass_default(f: Any) -> Any:
    """The default instance of a dataclass-valued field (None for any other field)."""
    import dataclasses

    value = f.default_factory() if f.default_factory is not dataclasses.MISSING else None
    return value if dataclasses.is_dataclass(value) and not isinstance(value, type) else None


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def print_problem(code: str, detail: str, status: int) -> None:
    """Problem details (RFC 9457, as the HTTP API sends them) for an error that is not a SieveError."""
    from sieve.server.errors import problem_body

    print_json(problem_body(status, detail, code))


ResultRow = tuple[int, float, str, str, str]
"""One result as the tables show it: rank, score, chunk id, title, text."""


def _cut_id(chunk_id: str, width: int) -> str:
    """``chunk_id`` in ``width`` characters, cut in the middle so its ``#position`` stays readable.

    Example:
        >>> _cut_id("wiki-charles-lindbergh#12", 12)
        'wiki-cha…#12'
    """
    if len(chunk_id) <= width:
        return chunk_id
    head, sep, tail = chunk_id.rpartition("#")
    tail = sep + tail if head and len(tail) + 2 < width else ""
    return chunk_id[: max(width - 1 - len(tail), 0)] + "…" + tail


def print_results(rows: Sequence[ResultRow], title: str, *, wide: bool = False, console: Any = None) -> None:
    """Ranked results as a table on ``console`` (default: stdout's).

    Compact (the default): one line per result, the table as wide as the terminal, every cell
    cut with an ellipsis (chunk ids in the middle, keeping their ``#position``). ``wide``: the
    text wraps over several lines, up to 110 characters a result.
    """
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = console or Console()
    if not rows:  # an empty table would show only its header
        console.print(f"{' '.join(title.split())}: no results")
        return
    if wide:
        table = Table(title=title, show_lines=False)
        for col in ("#", "score", "chunk", "title", "text"):
            table.add_column(col, overflow="fold" if col == "text" else "ellipsis")
        for rank, score, chunk_id, doc_title, text in rows:
            table.add_row(str(rank), f"{score:.4f}", chunk_id, shorten(doc_title, 40), shorten(text, 110))
        console.print(table)
        return
    width = console.width
    id_width = max(8, min(max((len(r[2]) for r in rows), default=5), width // 4))
    title_width = max(6, min(max((len(r[3]) for r in rows), default=5), width // 7))
    table = Table(
        title=Text(" ".join(title.split()), no_wrap=True, overflow="ellipsis"),
        expand=True,
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        collapse_padding=True,
        padding=(0, 1),
    )
    table.add_column("#", no_wrap=True, justify="right")
    table.add_column("score", no_wrap=True)
    table.add_column("chunk", no_wrap=True, overflow="ellipsis", max_width=id_width)
    table.add_column("title", no_wrap=True, overflow="ellipsis", max_width=title_width)
    table.add_column("text", no_wrap=True, overflow="ellipsis", ratio=1)
    for rank, score, chunk_id, doc_title, text in rows:
        # Whitespace (newlines included) folds to single spaces: a cell must never take two lines.
        table.add_row(
            str(rank), f"{score:.4f}", _cut_id(chunk_id, id_width), shorten(doc_title, width), shorten(text, 2 * width)
        )
    console.print(table)


def plural(n: int, noun: str, plural_form: str | None = None) -> str:
    """``n`` and the noun in the right number.

    Example:
        >>> plural(1, "file"), plural(3, "file"), plural(2, "query", "queries")
        ('1 file', '3 files', '2 queries')
    """
    return f"{n:,} {noun if n == 1 else (plural_form or noun + 's')}"


def shorten(text: str, n: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


__all__ = [
    "Bf16Opt",
    "ChromaUrlOpt",
    "CollectionOpt",
    "DataDirOpt",
    "DeviceOpt",
    "EmbedBackendOpt",
    "EmbedDtypeOpt",
    "EmbedderOpt",
    "JsonOpt",
    "ResultRow",
    "WideOpt",
    "cli_errors",
    "embed_overrides",
    "parse_assignments",
    "plural",
    "print_json",
    "print_problem",
    "print_results",
    "settings_from",
    "shorten",
]
