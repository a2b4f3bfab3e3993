"""SFT teachers by name: one registry (:data:`TEACHERS`), from which every list of teacher names derives.

A teacher is the policy whose episodes the student imitates in the SFT warm start: a name, a builder
``(AgentConfig, TeacherOptions) -> Policy`` and one line of help. ``WarmStartConfig.teacher``'s check,
``sieve train sft --teacher``'s help and :func:`sieve.train.llm.sft.collect_teacher` all read
:data:`TEACHERS`, so adding a teacher is one :func:`register_teacher` call.

Example:
    >>> list(TEACHERS)
    ['heuristic', 'openai', 'local']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from sieve.core.errors import InvalidInput

if TYPE_CHECKING:
    from sieve.agent.config import AgentConfig
    from sieve.agent.policies.base import Policy


@dataclass(frozen=True)
class TeacherOptions:
    """What a teacher's builder may read beside the episode's agent config (each takes what it needs)."""

    base_url: str | None = None  # openai: endpoint (default: the agent config's)
    model: str | None = None  # openai: model name (default: the agent config's)
    model_path: str | None = None  # local: HF model folder (default: the agent config's)


TeacherBuilder = Callable[["AgentConfig", TeacherOptions], "Policy"]


@dataclass(frozen=True)
class TeacherSpec:
    """One registered teacher: how to build its policy and one line of help."""

    name: str
    build: TeacherBuilder
    help: str


TEACHERS: dict[str, TeacherSpec] = {}


def register_teacher(name: str, build: TeacherBuilder, help: str) -> TeacherSpec:
    """Add a teacher under ``name`` (replacing one of that name) and return its spec."""
    spec = TeacherSpec(name, build, help)
    TEACHERS[name] = spec
    return spec


def teacher_help() -> str:
    """``"heuristic (...) | openai (...) | ..."``: each teacher with its help, for a help text."""
    return " | ".join(f"{t.name} ({t.help})" for t in TEACHERS.values())


def check_teacher(name: str) -> str:
    """``name`` if a teacher is registered under it.

    Raises:
        InvalidInput: no teacher has that name.
    """
    if name not in TEACHERS:
        raise InvalidInput(f"Expected teacher in {tuple(TEACHERS)}, got {name!r}")
    return name


def build_teacher(name: str, config: AgentConfig, options: TeacherOptions) -> Policy:
    """The policy of the teacher registered as ``name``, for episodes run with ``config``."""
    return TEACHERS[check_teacher(name)].build(config, options)


def _heuristic(config: AgentConfig, o: TeacherOptions) -> Policy:
    from sieve.agent import make_policy

    return make_policy("heuristic", config)


def _openai(config: AgentConfig, o: TeacherOptions) -> Policy:
    from sieve.agent import make_policy

    return make_policy("openai", replace(config, base_url=o.base_url or config.base_url, model=o.model or config.model))


def _local(config: AgentConfig, o: TeacherOptions) -> Policy:
    from sieve.agent import make_policy

    return make_policy("local", replace(config, local_model=Path(o.model_path)) if o.model_path else config)


register_teacher("heuristic", _heuristic, "the hand-tuned heuristic policy, no model")
register_teacher(
    "openai", _openai, "an LLM behind an OpenAI-compatible endpoint, set by --base-url and --teacher-model"
)
register_teacher("local", _local, "an LLM run in-process with transformers")

__all__ = [
    "TEACHERS",
    "TeacherBuilder",
    "TeacherOptions",
    "TeacherSpec",
    "build_teacher",
    "check_teacher",
    "register_teacher",
    "teacher_help",
]
