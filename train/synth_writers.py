"""Task writers by name: one registry (:data:`WRITERS`), from which every list of writer names derives.

A writer is a name, a builder ``(WriterOptions) -> writer``, one line of help, whether it needs a
language model, and its place (if any) in ``auto``'s chain. A
:class:`~sieve.train.synth_generators.QuestionWriter` (``drafts(link)``) runs through the
multi-hop synthesis (link, write, verify); a :class:`~sieve.train.synth_claims.ClaimWriter`
through the single-hop claims route, a :class:`~sieve.train.synth_hard.HardWriter` through the
keyphrase route. ``SynthConfig.generator``'s check, ``sieve train synth --generator``'s help,
:func:`sieve.train.synth.make_writer` and ``sieve train all``'s writers (:func:`pipeline_writers`,
:func:`auto_chain`) all read :data:`WRITERS`, so adding a writer is one :func:`register_writer`
call beside its class.

Example:
    >>> list(WRITERS)
    ['heuristic', 'claims', 'hard', 'local', 'openai']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from sieve.core.errors import InvalidInput

# The writers' modules (BM25, scipy) load inside the builders: ``sieve --help`` reads this registry.


class Writer(Protocol):
    """A task writer: named (its tasks record the name as ``meta.generator``). Its class picks the route
    :func:`sieve.train.synth.synthesize` drives it through (see the module's docstring)."""

    @property
    def name(self) -> str: ...


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
    """One registered task writer: how to build it, one line of help, whether it needs a language model
    (``sieve train all`` configures none, so it offers only writers without), and where ``auto`` tries
    it (lower first; None: ``auto`` never does)."""

    name: str
    build: WriterBuilder
    help: str
    needs_model: bool = False
    auto_order: int | None = None


WRITERS: dict[str, WriterSpec] = {}
AUTO = "auto"  # sieve train all: the writers of auto_chain() in turn, each filling up what the last left


def register_writer(
    name: str, build: WriterBuilder, help: str, *, needs_model: bool = False, auto_order: int | None = None
) -> WriterSpec:
    """Add a task writer under ``name`` (replacing one of that name) and return its spec.

    Raises:
        InvalidInput: ``name`` is ``"auto"`` (the pipeline's chain of writers).
    """
    if name == AUTO:
        raise InvalidInput(f"Expected a writer name other than {AUTO!r} (the chain of writers), got {name!r}")
    spec = WriterSpec(name, build, help, needs_model, auto_order)
    WRITERS[name] = spec
    return spec


def writer_help() -> str:
    """``"heuristic (...) | claims (...) | ..."``: each writer with its help, for a help text."""
    return " | ".join(f"{w.name} ({w.help})" for w in WRITERS.values())


def auto_chain() -> tuple[str, ...]:
    """The writers ``auto`` runs in turn (by ``auto_order``): ``('hard', 'heuristic', 'claims')``."""
    chained = [w for w in WRITERS.values() if w.auto_order is not None and not w.needs_model]
    return tuple(w.name for w in sorted(chained, key=lambda w: w.auto_order or 0))


def pipeline_writers() -> tuple[str, ...]:
    """``sieve train all --generator``'s choices: ``auto``, then every writer that needs no model."""
    return (AUTO, *(w.name for w in WRITERS.values() if not w.needs_model))


def pipeline_writer_help() -> str:
    """``sieve train all --generator``'s help: ``auto`` (its chain), then each writer without a model."""
    chain = ", then ".join(auto_chain())
    rest = [f"{w.name} ({w.help})" for w in WRITERS.values() if not w.needs_model]
    return " | ".join([f"{AUTO} ({chain}, each filling up what the one before left)", *rest])


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


# auto_order: the hard writer reads any text; templates need encyclopedic leads, claims reported findings.
register_writer("heuristic", _heuristic, "multi-hop templates, no model", auto_order=1)
register_writer(
    "claims",
    _claims,
    "single-hop claims from finding sentences, no model; for scientific or report-like text",
    auto_order=2,
)
register_writer(
    "hard",
    _hard,
    "keyphrase questions from any text: single chunks, spans of long documents with span gold, bridges; no model",
    auto_order=0,
)
register_writer("local", _local, "an LLM run with transformers", needs_model=True)
register_writer("openai", _openai, "an LLM behind an OpenAI-compatible endpoint", needs_model=True)

__all__ = [
    "AUTO",
    "WRITERS",
    "Writer",
    "WriterBuilder",
    "WriterOptions",
    "WriterSpec",
    "auto_chain",
    "build_writer",
    "pipeline_writer_help",
    "pipeline_writers",
    "register_writer",
    "writer_help",
]
