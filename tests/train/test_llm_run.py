"""The LLM route's run folder: ``run.json`` names its language model (``policy_kind`` ``llm``) only when it beats
the shipped learned policy, and a run so named serves through the default ``learned`` name and ``--policy-path``
as the in-process LLM policy (a 2-layer cut of the real SmolLM2: it writes nonsense, the loading is real)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sieve.agent import AgentConfig, SearchAgent
from sieve.agent.factory import make_policy
from sieve.core.errors import InvalidInput
from sieve.core.runs import RunArtifact
from sieve.train.pipeline import llm_run_choice


def _evals(learned: float, sft: float, rl: float) -> dict[str, dict[str, float]]:
    return {"learned": {"output_recall": learned}, "sft": {"output_recall": sft}, "sft+rl": {"output_recall": rl}}


MODELS = {"sft": "out/sft/model", "sft+rl": "out/rl/model"}


def test_the_better_model_is_named_only_when_it_beats_the_shipped_policy() -> None:
    chosen, verdict = llm_run_choice(_evals(0.5, 0.7, 0.6), MODELS)
    assert chosen == "out/sft/model" and verdict["candidate"] == "sft" and verdict["better"]
    assert llm_run_choice(_evals(0.5, 0.6, 0.6), MODELS)[0] == "out/rl/model"  # a tie goes to the later stage
    chosen, verdict = llm_run_choice(_evals(0.8, 0.7, 0.8), MODELS)  # equal to the shipped one is not better
    assert chosen is None and not verdict["better"] and verdict["shipped_learned_score"] == 0.8


def test_the_manifest_keeps_its_policy_kind(tmp_path: Path) -> None:
    model = tmp_path / "run" / "rl" / "model"
    model.mkdir(parents=True)
    RunArtifact(tmp_path / "run", policy=model, embedder=None, policy_kind="llm").save()
    run = RunArtifact.load(tmp_path / "run")
    assert run.policy_kind == "llm" and run.policy == model.resolve()
    assert "policy (llm) retrained" in run.describe()

    manifest = tmp_path / "run" / "run.json"
    older = {k: v for k, v in json.loads(manifest.read_text()).items() if k != "policy_kind"}
    manifest.write_text(json.dumps(older))  # written before the LLM route wrote runs
    assert RunArtifact.load(tmp_path / "run").policy_kind == "learned"
    manifest.write_text(json.dumps({**older, "policy_kind": "gpt"}))
    with pytest.raises(InvalidInput, match="policy_kind"):
        RunArtifact.load(tmp_path / "run")


def test_an_llm_run_serves_its_model_under_the_learned_name(tiny_model_dir: Path, sample_index, tmp_path: Path):
    from sieve.agent.policies.learned import LearnedPolicy

    run = RunArtifact(tmp_path / "run", policy=tiny_model_dir, embedder=None, policy_kind="llm")
    run.save()
    config = AgentConfig(policy_path=run.folder, max_turns=1, max_new_tokens=8, length_retry_tokens=0)
    policy = make_policy("learned", config)
    assert policy.name == "local" and policy.backend.name == tiny_model_dir.name  # the run's model, not SmolLM2's
    trace = SearchAgent(sample_index, policy, config).run("Who directed 2001: A Space Odyssey?")
    assert len(trace.turns) == 1 and trace.returned  # one model turn, then the closing ranking
    with pytest.raises(InvalidInput, match="language model"):
        LearnedPolicy.load(run.folder)

    kept_out = RunArtifact(tmp_path / "none", policy=None, embedder=None, policy_kind="llm")
    kept_out.save()  # the LLM was no better: the shipped learned policy serves
    assert make_policy("learned", AgentConfig(policy_path=kept_out.folder)).name == "learned"
