"""The flags of ``sieve train``, read from the config dataclasses of ``train/``, and the helpers its commands share.

A flag for a config field takes that field's default (and its help, unless the command line words
it better): one home per default, as ``setting_option`` gives ``serve`` and ``search`` theirs from
the Settings. Everything read here is light (no numpy, no torch): ``sieve --help`` loads it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import typer

from sieve.core.errors import InvalidInput
from sieve.train.config import EpisodeConfig
from sieve.train.learned.config import LearnedRLConfig
from sieve.train.llm.rl import RLConfig
from sieve.train.rewards.config import RewardConfig

if TYPE_CHECKING:
    from sieve.retriever import CorpusIndex
    from sieve.settings import Settings


def config_field(config: type, name: str) -> dataclasses.Field[Any]:
    """The field ``name`` of the dataclass ``config``."""
    return next(f for f in dataclasses.fields(config) if f.name == name)


def config_default(config: type, name: str) -> Any:
    """The default of the field ``name`` of ``config`` (a default factory's value for a mutable one)."""
    f = config_field(config, name)
    if f.default is dataclasses.MISSING and f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def config_help(config: type, name: str) -> str:
    """The help of the field ``name`` of ``config`` (its ``metadata["help"]``)."""
    return str(config_field(config, name).metadata["help"])


def config_option(config: type, name: str, *flags: str, help: str | None = None) -> Any:
    """A flag for the field ``name`` of the dataclass ``config``, with that field's default.

    Args:
        config: the config dataclass the flag sets a field of.
        name: the field.
        flags: the flag's spellings (default ``--name-with-dashes``).
        help: what the flag is, when the field's help reads wrong as a flag's (default: the field's help).
    """
    spellings = flags or ("--" + name.replace("_", "-"),)
    return typer.Option(
        config_default(config, name), *spellings, help=config_help(config, name) if help is None else help
    )


DEFAULT_INIT = config_default(LearnedRLConfig, "init")
"""``--init``'s 'default': the start point shipped with either route (the checkpoint, or SmolLM2-135M)."""


def per_route(name: str) -> str:
    """Both routes' defaults of one knob, read from their configs: ``learned: 4; llm: 2``."""
    return f"learned: {config_default(LearnedRLConfig, name)}; llm: {config_default(RLConfig, name)}"


def llm_option(name: str, flag: str) -> Any:
    """A flag of the LLM route only, with ``RLConfig.<name>``'s default and help."""
    return config_option(RLConfig, name, flag, help="llm: " + config_help(RLConfig, name))


# The episode a policy is trained on must be the episode it is served with: `train sft` and
# `train rl` share these flags, and their defaults are EpisodeConfig's.
BudgetTokensOpt = config_option(EpisodeConfig, "budget_tokens")
MaxTurnsOpt = config_option(EpisodeConfig, "max_turns")
MaxNewTokensOpt = config_option(EpisodeConfig, "max_new_tokens")
SearchKOpt = config_option(EpisodeConfig, "search_k")
SearchTokensOpt = config_option(EpisodeConfig, "search_tokens")


def episode(
    budget_tokens: int, max_turns: int, max_new_tokens: int, search_k: int, search_tokens: int
) -> EpisodeConfig:
    """The EpisodeConfig of the five episode flags."""
    return EpisodeConfig(
        budget_tokens=budget_tokens,
        max_turns=max_turns,
        max_new_tokens=max_new_tokens,
        search_k=search_k,
        search_tokens=search_tokens,
    )


# One vocabulary of flags: the same knob has the same name in `train all`, `synth`, `sft` and `rl`
# (`--n` tasks, `--minutes` of wall clock, `--steps` of the optimiser, `--init` the starting point).
# Their defaults live in the config dataclasses; an unset flag leaves the config's default in force.
def minutes_option(what: str) -> Any:
    return typer.Option(
        None,
        "--minutes",
        help=f"Wall-clock budget of {what}; it ends the run (the model is "
        "saved). With --minutes and no --steps there is no step cap.",
    )


def steps_option(what: str) -> Any:
    return typer.Option(
        None,
        "--steps",
        help=f"Most {what}; with --minutes too, whichever comes first ends the run (the summary says which).",
    )


def n_option(what: str) -> Any:
    return typer.Option(None, "--n", help=what)


def old_option(new_flag: str) -> Any:
    """A hidden, deprecated spelling of ``new_flag`` (still accepted, with a warning)."""
    return typer.Option(None, hidden=True, help=f"Deprecated: use {new_flag}.")


def renamed(new: Any, old: Any, old_flag: str, new_flag: str) -> Any:
    """``new``, or ``old`` (with a deprecation warning on stderr) when only the old spelling was given."""
    if old is None:
        return new
    typer.echo(f"Warning: {old_flag} is deprecated; use {new_flag}.", err=True)
    if new is not None and new != old:
        raise InvalidInput(f"Expected one of {new_flag} and {old_flag}, got {new_flag} {new} and {old_flag} {old}")
    return old


def renamed_init(init: str, model_path: str | None) -> str:
    """``--init`` (or the deprecated ``--model-path``), 'default' when neither names a start point."""
    return renamed(None if init == DEFAULT_INIT else init, model_path, "--model-path", "--init") or DEFAULT_INIT


def student_init(init: str | None) -> str:
    """``--init`` of a language model: 'default' (SmolLM2-135M) or a folder; there is no fresh one ('none')."""
    if init == "none":
        raise InvalidInput(
            "Expected --init 'default' or an HF model folder for a language model, got 'none' "
            "(a fresh network is the learned policy's option)"
        )
    return init or DEFAULT_INIT


def model_path_of(init: str) -> str | None:
    """A language model's ``model_path`` from ``--init``: None for 'default' (the config's own start point)."""
    return None if init == DEFAULT_INIT else init


def given(**kwargs: Any) -> dict[str, Any]:
    """The keyword arguments whose value was given (not None): the rest keep the config's defaults."""
    return {k: v for k, v in kwargs.items() if v is not None}


def reward_config(collapse_penalty: float | None) -> RewardConfig:
    return RewardConfig() if collapse_penalty is None else RewardConfig(collapse=collapse_penalty)


def check_choice(value: str, valid: tuple[str, ...], flag: str) -> str:
    if value not in valid:
        raise InvalidInput(f"Expected {flag} in {list(valid)}, got {value!r}")
    return value


def open_index(s: Settings) -> CorpusIndex:
    from sieve.retriever import CorpusIndex

    return CorpusIndex.open(s.retriever_config(), s.collection, create=False)


__all__ = [
    "DEFAULT_INIT",
    "BudgetTokensOpt",
    "MaxNewTokensOpt",
    "MaxTurnsOpt",
    "SearchKOpt",
    "SearchTokensOpt",
    "check_choice",
    "config_default",
    "config_field",
    "config_help",
    "config_option",
    "episode",
    "given",
    "llm_option",
    "minutes_option",
    "model_path_of",
    "n_option",
    "old_option",
    "open_index",
    "per_route",
    "renamed",
    "renamed_init",
    "reward_config",
    "steps_option",
    "student_init",
]
