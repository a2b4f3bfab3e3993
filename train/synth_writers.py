"""Task writers by name: one registry (:data:`WRITERS`), from which every list of writer names derives.

A writer is a name, a builder ``(WriterOptions) -> writer`` and one line of help. A
:class:`~sieve.train.synth_generators.QuestionWriter` (``drafts(link)``) runs through the
multi-hop synthesis (link, write, verify); a :class:`~sieve.train.synth_claims.ClaimWriter`
through the single-hop claims route. ``SynthConfig.generator``'s check, ``sieve train synth
--generator``'s help and :func:`sieve.train.synth.make_writer` all read :data:`WRITERS`, so adding
a writer is one :func:`register_writer` call beside its class.

Example:
    >>> list(WRITERS)
    ['heuristic', 'claims', 'hard', 'local', 'openai']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Union

from sieve.core.errors import InvalidInput

if TYPE_CHECKING:
    from sieve.train.synth_claims import ClaimWriter
    from sieve.train.synth_generators import QuestionWriter
    from sieve.train.synth_hard import HardWriter

# The writers' modules (BM25, scipy) load inside the builders: ``sieve --help`` reads this registry.
Writer = Union["QuestionWriter", "ClaimWriter", "HardWriter"]


@dataclass(frozen=True)
class WriterOptions:
    """Everything a writer's builder may read (each writer takes what it needs)."""

    model_path: str | None = None  # local: HF model folder (default: the bundled SmolLM2)
    base_url: str | None = None  # openai: endpoint
    model: str | None = None  # openai: model name
    api_key: str | None = None
    models_dir: Path | None = None  # where the default local model is converted once
    seed: int = 0  # the template writer's phrasings
    claim_max_words: int = 20


WriterBuilder = Callable[[WriterOptions], Writer]


@dataclass(frozen=True)
class WriterSpec:
    """One registered task writer: how to build it and one line of help."""

    name: str
    build: WriterBuilder
    help: str


WRITERS: dict[str, WriterSpec] = {}


def register_writer(name: str, build: WriterBuilder, help: str) -> WriterSpec:
    """Add a task writer under ``name`` (replacing one of that name) and return its spec."""
    spec = WriterSpec(name, build, help)
    WRITERS[name] = spec
    return spec


def writer_help() -> str:
    """``"heuristic (...) | claims (...) | ..."``: each writer with its help, for a help text."""
    return " | ".join(f"{w.name} ({w.help})" for w in WRITERS.values())


def build_writer(name: str, options: WriterOptions) -> Writer:
    """The writer registered as ``name``.

    Raises:
        InvalidInput: no writer has that name.
    """
    spec = WRITERS.get(name)
    if spec is None:
        raise InvalidInput(f"Expected generator in {tuple(WRITERS)}, got {name!r}")
    return spec.build(options)


def _heuristic(o: WriterOptions) -> Writer:
    from sieve.train.synth_generators import TemplateWriter

    return TemplateWriter(seed=o.seed)


def _claims(o: WriterOptions) -> Writer:
    from sieve.train.synth_claims import ClaimWriter

    return ClaimWriter(max_words=o.claim_max_words)


def _hard(o: WriterOptions) -> Writer:
    from sieve.train.synth_hard import HardWriter

    return HardWriter()


def _local(o: WriterOptions) -> Writer:
    from sieve.agent.backends.local import LocalBackend
    from sieve.agent.backends.models import smollm2_path
    from sieve.train.synth_generators import LLMWriter

    return LLMWriter(LocalBackend.load(o.model_path or smollm2_path(o.models_dir)), name="local")


def _openai(o: WriterOptions) -> Writer:
    from sieve.agent.backends.openai import OpenAIBackend
    from sieve.train.synth_generators import LLMWriter

    if not o.base_url or not o.model:
        raise InvalidInput(f"Expected --base-url and --model for the openai generator, got {o.base_url!r}, {o.model!r}")
    return LLMWriter(OpenAIBackend(o.base_url, o.model, api_key=o.api_key), name="openai")


register_writer("heuristic", _heuristic, "multi-hop templates, no model")
register_writer(
    "claims", _claims, "single-hop claims from finding sentences, no model; for scientific or report-like text"
)
register_writer(
    "hard",
    _hard,
    "keyphrase questions from any text: single chunks, spans of long documents with span gold, bridges; no model",
)
register_writer("local", _local, "an LLM run with transformers")
register_writer("openai", _openai, "an LLM behind an OpenAI-compatible endpoint")

__all__ = [
    "WRITERS",
    "Writer",
    "WriterBuilder",
    "WriterOptions",
    "WriterSpec",
    "build_writer",
    "register_writer",
    "writer_help",
]
