"""The ``sieve`` command line: ``main`` assembles the command groups of ``cli/commands/``."""

__all__: list[str] = []
