"""Policies by name: one registry (:data:`POLICIES`), from which every list of policy names derives.

A policy is a name, a builder ``(config, backend) -> Policy`` and one line of help. The CLI's help,
the settings' and the HTTP schema's allowed values, ``sieve eval``'s system names and
:func:`make_policy` all read :data:`POLICIES`, so adding a policy is one :func:`register_policy`
call beside its class.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sieve.agent.config import AgentConfig
from sieve.core.defaults import DEFAULT_POLICY
from sieve.core.errors import InvalidInput

if TYPE_CHECKING:
    from sieve.agent.backends.base import ChatBackend
    from sieve.agent.policies.base import Policy
    from sieve.retriever.index import CorpusIndex

PolicyBuilder = Callable[[AgentConfig, "ChatBackend | None"], "Policy"]
# What a policy needs configured before it can run: nothing, an OpenAI-compatible endpoint, or a local model.
Requirement = Literal["none", "openai_endpoint", "local_model"]


@dataclass(frozen=True)
class PolicySpec:
    """One registered policy: how to build it, one line of help, and what it needs configured."""

    name: str
    build: PolicyBuilder
    help: str
    requires: Requirement = "none"


POLICIES: dict[str, PolicySpec] = {}


def register_policy(name: str, build: PolicyBuilder, help: str, *, requires: Requirement = "none") -> PolicySpec:
    """Add a policy under ``name`` (replacing one of that name) and return its spec."""
    spec = PolicySpec(name, build, help, requires)
    POLICIES[name] = spec
    return spec


def policy_help() -> str:
    """``"heuristic | learned | ..."``: the names for a help text, in registry order."""
    return " | ".join(POLICIES)


def _heuristic(config: AgentConfig, backend: ChatBackend | None) -> Policy:
    from sieve.agent.policies.heuristic import HeuristicPolicy

    return HeuristicPolicy(config)


def _learned(config: AgentConfig, backend: ChatBackend | None) -> Policy:
    from sieve.agent.policies.learned import LearnedPolicy
    from sieve.core.runs import RunArtifact

    if config.policy_path is not None and RunArtifact.is_run(config.policy_path):
        run = RunArtifact.load(config.policy_path)
        if run.policy_kind == "llm" and run.policy is not None:
            # A run of `sieve train all --route llm`: its language model serves in-process, as `--policy local`
            # would serve it, so one --policy-path (or an adopted run) serves either route's result.
            from dataclasses import replace

            return _local(replace(config, local_model=run.policy), backend)
        return LearnedPolicy.load(run.policy)  # its checkpoint, or the shipped one when the run kept none
    return LearnedPolicy.load(config.policy_path)


def _openai(config: AgentConfig, backend: ChatBackend | None) -> Policy:
    from sieve.agent.policies.llm import LLMPolicy

    if backend is None:
        from sieve.agent.backends.openai import HarmonyCompletionsBackend, OpenAIBackend

        kind = HarmonyCompletionsBackend if config.api == "harmony" else OpenAIBackend
        backend = kind(
            config.base_url,
            config.model,
            api_key=config.api_key,
            timeout=config.timeout_s,
            retries=config.retries,
            reasoning_effort=config.reasoning_effort,
        )
    from sieve.agent.backends.tokens import LabelledEstimate, served_model_counter

    # The budget counts in the served model's tokens when its tokenizer is here, else ~4 characters a token.
    # A backend passed in (a test's script, a caller's own) is counted by the model it names, if any.
    model = getattr(backend, "model", None)
    counter = served_model_counter(model) if isinstance(model, str) else LabelledEstimate()
    return LLMPolicy(backend, config, name="openai", counter=counter)


def _local(config: AgentConfig, backend: ChatBackend | None) -> Policy:
    from sieve.agent.policies.llm import LLMPolicy
    from sieve.pruning.tokens import HFTokenCounter

    if backend is None:
        from sieve.agent.backends.local import LocalBackend
        from sieve.agent.backends.models import smollm2_path

        backend = LocalBackend.load(config.local_model or smollm2_path(config.models_dir))
    tok = getattr(backend, "tokenizer", None)
    return LLMPolicy(backend, config, name="local", counter=HFTokenCounter(tok) if tok is not None else None)


register_policy("heuristic", _heuristic, "hand-tuned rules, no model")
register_policy(
    "learned",
    _learned,
    "a small RL-trained network (config.policy_path or the shipped checkpoint; a run of the llm route serves its model)",
)
register_policy("openai", _openai, "an LLM behind an OpenAI-compatible server", requires="openai_endpoint")
register_policy("local", _local, "an LLM run in-process with transformers", requires="local_model")


def make_policy(name: str, config: AgentConfig | None = None, *, backend: ChatBackend | None = None) -> Policy:
    """The policy registered as ``name`` (see :data:`POLICIES`), built from ``config``.

    ``backend`` overrides the one the name implies (tests pass a scripted fake here).

    Raises:
        InvalidInput: no policy is registered under ``name``.

    Example:
        >>> make_policy("heuristic").name
        'heuristic'
    """
    spec = POLICIES.get(name)
    if spec is None:
        raise InvalidInput(f"Expected a policy in {list(POLICIES)}, got {name!r}")
    return spec.build(config or AgentConfig(), backend)


def adopted_config(index: CorpusIndex, config: AgentConfig) -> AgentConfig:
    """``config`` with the run adopted for ``index``'s collection (``sieve adopt``) as its policy
    path, when the caller named none; a run named by the caller is checked against the collection.

    Raises:
        InvalidInput: the run adapted the embedder, and the collection holds another model's vectors.
    """
    from dataclasses import replace

    from sieve.core.runs import RunArtifact

    if config.policy_path is None:
        recorded = index.recorded_run
        if recorded and RunArtifact.is_run(recorded):
            return replace(config, policy_path=Path(recorded))
        return config
    if RunArtifact.is_run(config.policy_path):
        run = RunArtifact.load(config.policy_path)
        if run.embedder is not None and not index.embedded_with(run.embedder):
            raise InvalidInput(
                f"Expected collection {index.name!r} embedded with the run's adapted embedder {run.embedder}, got "
                f"another model's vectors; adopt the run first (sieve adopt {run.folder} -c {index.name}), "
                "or score it with sieve eval --policy-path, which re-embeds its own copy"
            )
    return config


__all__ = [
    "DEFAULT_POLICY",
    "POLICIES",
    "adopted_config",
    "PolicyBuilder",
    "PolicySpec",
    "make_policy",
    "policy_help",
    "register_policy",
]
