"""``sieve eval``: gold-evidence recall of every system, side by side, in one run."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from sieve.core.errors import InvalidInput
from sieve.cli.commands._common import (
    Bf16Opt,
    ChromaUrlOpt,
    DataDirOpt,
    DeviceOpt,
    EmbedBackendOpt,
    EmbedDtypeOpt,
    EmbedderOpt,
    JsonOpt,
    cli_errors,
    embed_overrides,
    parse_assignments,
    plural,
    print_json,
    settings_from,
)
from sieve.eval.systems import systems_help


def _parse_ks(raw: str) -> list[int]:
    try:
        ks = [int(x) for x in raw.split(",") if x.strip()]
    except ValueError:
        raise InvalidInput(f"Expected --k as comma-separated integers like 5,10,20, got {raw!r}") from None
    if not ks or min(ks) < 1:
        raise InvalidInput(f"Expected --k as positive integers like 5,10,20, got {raw!r}")
    return ks


DataOpt = typer.Option(..., "--data", help="Data dir with corpus.jsonl + tasks.jsonl; repeat to pool.")
SystemsOpt = typer.Option(
    "dense,bm25,hybrid,agent:heuristic",
    "--systems",
    help=f"Comma-separated: {systems_help()}.",
)
OutOpt = typer.Option(Path("report"), "--out", help="Report folder; a rerun resumes from its results.jsonl.")
PolicyPathOpt = typer.Option(
    None,
    "--policy-path",
    help="agent:learned checkpoint folder, or a run folder of sieve train all (its policy, ranker and "
    "embedder: the set is re-embedded into a cached copy of its own); default: the shipped one.",
)
AgentSetOpt = typer.Option(
    [],
    "--agent-set",
    metavar="KEY=VALUE",
    help="An AgentConfig field for every agent system (repeatable), "
    "e.g. --agent-set max_turns=3 --agent-set floor.fusion_path=fusion.json (a dotted key sets a "
    "field of a nested config).",
)


@cli_errors
def eval_cmd(
    data: list[Path] = DataOpt,
    systems: str = SystemsOpt,
    k: str = typer.Option("5,10,20", "--k", help="Cut-offs, comma-separated."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Only the first N tasks of each data dir."),
    out: Path = OutOpt,
    embed_backend: Optional[str] = EmbedBackendOpt,
    embed_dtype: Optional[str] = EmbedDtypeOpt,
    bf16: bool = Bf16Opt,
    device: Optional[str] = DeviceOpt,
    no_exports: bool = typer.Option(False, "--no-exports", help="Skip the BrowseComp-Plus and TREC run files."),
    no_plots: bool = typer.Option(False, "--no-plots", help="Skip the PNG plots."),
    policy_path: Optional[Path] = PolicyPathOpt,
    agent_set: list[str] = AgentSetOpt,
    data_dir: Optional[Path] = DataDirOpt,
    chroma_url: Optional[str] = ChromaUrlOpt,
    embedder: Optional[str] = EmbedderOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Index each DATA dir (cached), run its tasks through every system, write results and a summary."""
    from sieve.agent.config import AgentConfig
    from sieve.eval.runner import EvalConfig, run_eval

    ks = _parse_ks(k)
    if policy_path is not None and embedder is None:
        embedder = _run_embedder(policy_path)
    s = settings_from(
        data_dir, chroma_url, embedder, device=device, **embed_overrides(embed_backend, embed_dtype, bf16)
    )
    config = EvalConfig(
        data=list(data),
        systems=[systems],
        ks=ks,
        limit=limit,
        out=out,
        exports=not no_exports,
        plots=not no_plots,
        progress=not as_json,
        command="sieve " + shlex.join(sys.argv[1:]),
        policy_path=policy_path,
        agent={**s.agent_overrides(), **parse_assignments(agent_set, AgentConfig)},
    )
    for spec in config.systems:  # an LLM policy without its model fails here, not after indexing
        if spec.startswith("agent:"):
            s.require_policy(spec.split(":")[1], bundled_local=True)
    _eval_summary(run_eval(config, s.retriever_config()), config.ks, as_json)


def _run_embedder(policy_path: Path) -> str | None:
    """The embedder of a run folder of `sieve train all` that adapted one (None for a checkpoint or a run without)."""
    from sieve.core.runs import RunArtifact

    if RunArtifact.is_run(policy_path) and (run_embedder := RunArtifact.load(policy_path).embedder):
        return str(run_embedder)  # scored as the run serves: its own embedder, its own cached copy
    return None


def _eval_summary(report: Any, ks: list[int], as_json: bool) -> None:
    """Warnings on in-sample sets, then the tables per source (or the metrics as JSON)."""
    from sieve.eval.report import source_tables

    for source, overlap in report.meta["tuning_overlap"].items():
        typer.secho(
            f"warning: {overlap['tasks']} of {overlap['of']} tasks of {source} are declared tuning data "
            f"({', '.join(overlap['tuning_sets'])}): their figures are in-sample",
            fg=typer.colors.YELLOW,
            err=True,
        )
    if as_json:
        print_json(
            {
                "out": str(report.out_dir),
                "primary_metric": report.primary_metric,
                "metrics": report.metrics,
                "calls": report.calls,
            }
        )
        return
    for source, metrics in report.metrics.items():
        typer.echo(f"\n## {source}\n")
        typer.echo("\n".join(source_tables(metrics, ks)))
    typer.echo(
        f"\nWrote {report.out_dir / 'summary.md'} and results.jsonl "
        f"({plural(sum(report.calls.values()), 'new system call')})"
    )


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_cmd)


__all__ = ["register"]
