"""``sieve index``, ``sieve retrieve``, ``sieve collections`` and ``sieve demo``."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from sieve.core.defaults import DEFAULT_MODE
from sieve.data import DEMO_QUESTION, SAMPLE_DIR
from sieve.retriever.modes import mode_help
from sieve.retriever.readers import formats_help
from sieve.cli.commands._common import (
    Bf16Opt,
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
)
from sieve.cli.commands._listing import listing, refresh

if TYPE_CHECKING:
    from sieve.retriever import CorpusIndex
    from sieve.retriever.config import RetrieverConfig
    from sieve.settings import Settings


def _check_lock_folder(cfg: RetrieverConfig, *, repair: bool, as_json: bool) -> None:
    """Report (and with ``repair`` fix) the store's lock-folder files; exit 1 while any stays damaged."""
    from sieve.retriever.handle import store_location
    from sieve.retriever.lockfolder import check_lock_folder

    states = check_lock_folder(cfg, repair=repair)
    left = [f for f in states if f.state == "damaged" and not f.repaired]
    if as_json:
        print_json(
            {
                "store": store_location(cfg),
                "files": [
                    {
                        "role": f.role,
                        "path": str(f.path),
                        "state": f.state,
                        "problem": f.problem,
                        "repaired": f.repaired,
                    }
                    for f in states
                ],
                "damaged": len(left),
            }
        )
    else:
        for f in states:
            note = f": {f.problem}" + ("; repaired (moved aside, fresh token written)" if f.repaired else "")
            typer.echo(f"{f.role}\t{f.state}\t{f.path}{note if f.problem else ''}")
        if left:
            typer.echo("Run `sieve collections --check --repair` to repair; the store's data is intact.", err=True)
    if left:
        raise typer.Exit(1)


def _hits_table(hits: list, title: str, wide: bool = False) -> None:
    print_results([(h.rank, h.score, h.chunk_id, h.chunk.title, h.chunk.text) for h in hits], title, wide=wide)


def hit_json(h) -> dict:
    c = h.chunk
    return {
        "rank": h.rank,
        "id": c.chunk_id,
        "doc_id": c.doc_id,
        "score": h.score,
        "title": c.title,
        "source": c.source,
        "position": c.position,
        "text": c.text,
        "metadata": c.metadata,
    }


def index_json(report) -> dict:
    ing = report.ingest
    return {
        "added": report.added,
        "updated": report.updated,
        "unchanged": report.unchanged,
        "resumed": report.resumed,
        "chunks_written": report.chunks_written,
        "seconds": round(report.seconds, 2),
        "files_read": ing.files_read,
        "documents": ing.documents,
        "skipped": [{"where": w, "reason": r} for w, r in ing.skipped],
        "ignored": ing.ignored,
        "ignored_by_suffix": ing.ignored_by_suffix(),
        "hidden": ing.hidden,
        "gitignored": ing.gitignored,
        "warnings": [{"where": w, "message": m} for w, m in ing.warnings],
        "gone": report.gone,
        "deleted": report.deleted,
    }


def _report_index(report, as_json: bool, width: int | None = None) -> None:
    """The run's summary on stdout (wrapped at ``width`` when given); every skip with its reason, library
    warnings (one line per file) and ignored files by suffix on stderr, after the progress bar."""
    ing = report.ingest
    if as_json:
        print_json(index_json(report))
        return
    summary = (
        f"{plural(ing.documents, 'document')} from {plural(ing.files_read, 'file')}: {report.added} added, "
        f"{report.updated} updated, {report.resumed} resumed, {report.unchanged} unchanged; "
        f"{plural(report.chunks_written, 'chunk')} written in {report.seconds:.1f}s "
        f"({report.chunks_per_second:.1f} chunks/s)"
    )
    typer.echo(summary if width is None else textwrap.fill(summary, width))
    if ing.skipped:
        typer.secho(
            f"Skipped {plural(len(ing.skipped), 'input')} (the rest was indexed):", fg=typer.colors.YELLOW, err=True
        )
        for where, reason in ing.skipped:
            typer.secho(f"  {where}: {reason}", fg=typer.colors.YELLOW, err=True)
    if ing.warnings:
        by_file: dict[str, list[str]] = {}
        for where, message in ing.warnings:
            by_file.setdefault(where, []).append(message)
        typer.secho(
            f"Indexed despite warnings of the library that read them (the text may be incomplete): "
            f"{plural(len(by_file), 'file')}",
            fg=typer.colors.YELLOW,
            err=True,
        )
        for where, messages in by_file.items():
            more = f" (+{len(messages) - 1} more; -v shows all)" if len(messages) > 1 else ""
            typer.secho(f"  {where}: {messages[0]}{more}", fg=typer.colors.YELLOW, err=True)
    if report.deleted:
        typer.echo(f"Deleted {plural(report.deleted, 'document')} of files no longer read from this folder", err=True)
    elif report.gone:
        shown = ", ".join(report.gone[:3]) + (", ..." if len(report.gone) > 3 else "")
        typer.secho(
            f"Still indexed: {plural(len(report.gone), 'document')} of files no longer read from this folder "
            f"(deleted, moved out or left out by .gitignore: {shown}); --delete-missing removes them",
            fg=typer.colors.YELLOW,
            err=True,
        )
    if ing.gitignored:
        left_out = ing.gitignored_summary()
        typer.echo(f"{left_out[0].upper()}{left_out[1:]}", err=True)
    summary = ing.ignored_summary()
    if summary:
        from sieve.retriever.readers import formats_help

        typer.echo(
            f"{summary[0].upper()}{summary[1:]}; Sieve reads {formats_help()} (--json lists every path)",
            err=True,
        )


PathArg = listing(typer.Argument(None), help=lambda: f"File or folder ({formats_help()}).")
ModeOpt = listing(typer.Option(DEFAULT_MODE, "--mode"), help=mode_help)
OptimizeOpt = typer.Option(
    False, "--optimize", help="Merge COLLECTION's BM25 segments into one (after indexing PATH, if given)."
)
DeleteMissingOpt = typer.Option(
    False,
    "--delete-missing",
    help="Remove the documents of files this folder no longer gives (deleted, moved out, or left out by .gitignore).",
)
NoGitignoreOpt = typer.Option(
    False,
    "--no-gitignore",
    help="Read the files the folder's .gitignore files leave out too (a build's output, node_modules); "
    "default: left out (SIEVE_GITIGNORE).",
)
RayOpt = typer.Option(
    False,
    "--ray",
    help="Chunk and embed on Ray Data (pip install -e '.[ray]'); "
    "a local cluster unless --ray-address. See docs/scaling.md.",
)
RayAddressOpt = typer.Option(
    None,
    "--ray-address",
    help="Ray cluster to use (implies --ray): auto, HOST:PORT or ray://HOST:10001; default: a local cluster.",
)


@cli_errors
def index_cmd(
    path: Optional[Path] = PathArg,
    optimize: bool = OptimizeOpt,
    collection: Optional[str] = CollectionOpt,
    data_dir: Optional[Path] = DataDirOpt,
    chroma_url: Optional[str] = ChromaUrlOpt,
    embedder: Optional[str] = EmbedderOpt,
    embed_backend: Optional[str] = EmbedBackendOpt,
    embed_dtype: Optional[str] = EmbedDtypeOpt,
    bf16: bool = Bf16Opt,
    device: Optional[str] = DeviceOpt,
    chunk_tokens: Optional[int] = setting_option("chunk_tokens"),
    chunk_overlap: Optional[int] = setting_option("chunk_overlap"),
    chunk_split: Optional[str] = setting_option("chunk_split"),
    delete_missing: bool = DeleteMissingOpt,
    no_gitignore: bool = NoGitignoreOpt,
    ray: bool = RayOpt,
    ray_address: Optional[str] = RayAddressOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Index a file or folder into COLLECTION (idempotent, resumable).

    HTML is indexed by its main content (no navigation, menus or footers); what .gitignore leaves
    out is not read. Unreadable inputs (bad JSONL lines, repeated ids, metadata Chroma cannot hold,
    non-UTF-8 files, broken PDFs) are skipped and listed with their reasons; other types are counted.
    A failed run leaves no new collection; each run adds one BM25 segment, --optimize merges them.
    """
    from sieve.core.errors import InvalidInput
    from sieve.retriever import CorpusIndex

    s = settings_from(
        data_dir,
        chroma_url,
        embedder,
        **embed_overrides(embed_backend, embed_dtype, bf16),
        chunk_tokens=chunk_tokens,
        chunk_overlap=chunk_overlap,
        chunk_split=chunk_split,
        collection=collection,
        device=device,
        **({"gitignore": False} if no_gitignore else {}),
    )
    if path is None:
        if not optimize:
            raise InvalidInput("Expected a PATH to index or --optimize, got neither")
        _merge_segments(s, as_json)
        return
    index = CorpusIndex.open(s.retriever_config(), s.collection, create=True)
    report = _index_path(
        index,
        path,
        ray=ray or bool(ray_address),
        ray_address=ray_address,
        delete_missing=delete_missing,
        as_json=as_json,
    )
    if optimize:
        index.writer.optimize()
    _report_index_run(index, report, device, as_json)


def _merge_segments(s: Settings, as_json: bool) -> None:
    """``sieve index --optimize`` with no PATH: merge the collection's BM25 segments into one."""
    from sieve.retriever import CorpusIndex

    merged = CorpusIndex.open(s.retriever_config(), s.collection).writer.optimize()
    if as_json:
        print_json({"collection": s.collection, "bm25_segments_merged": merged})
    else:
        typer.echo(f"Merged {merged} BM25 segment(s) of {s.collection} into one", err=True)


def _index_path(
    index: CorpusIndex, path: Path, *, ray: bool, ray_address: str | None, delete_missing: bool, as_json: bool
) -> Any:
    """Index ``path`` in this process, or on Ray Data (a local cluster unless ``ray_address``); the IndexReport."""
    if not ray:
        return index.writer.index_path(path, progress=not as_json, delete_missing=delete_missing)
    from sieve.retriever.ray_index import LOCAL, RayOptions, index_path_ray

    try:
        return index_path_ray(
            index, path, RayOptions(address=ray_address or LOCAL), progress=not as_json, delete_missing=delete_missing
        )
    except ImportError as exc:  # the optional extra: a usage error naming the install, not a traceback
        raise typer.BadParameter(str(exc), param_hint="--ray") from None


def _report_index_run(index: CorpusIndex, report: Any, device: str | None, as_json: bool) -> None:
    """The run's report, with the device that embedded it where one was chosen or a GPU taken."""
    # Which device embedded (auto resolves at load); an index run that embedded nothing loaded no model.
    used = index.embedder.device_choice if index.embedder.is_loaded else None
    if as_json:
        print_json({**index_json(report), "device": used.device if used else None})
        return
    _report_index(report, False)
    if used is not None and (device is not None or used.device == "cuda"):
        # Only where a choice was made (--device given) or a GPU was taken: a CPU-only machine's every
        # run would otherwise explain why no CUDA device was used.
        typer.echo(f"Embedding device: {used.describe()}", err=True)


@cli_errors
def retrieve_cmd(
    query: str = typer.Argument(..., help="The query."),
    k: Optional[int] = setting_option("k", "-k", help="Number of results"),
    mode: str = ModeOpt,
    collection: Optional[str] = CollectionOpt,
    data_dir: Optional[Path] = DataDirOpt,
    chroma_url: Optional[str] = ChromaUrlOpt,
    embedder: Optional[str] = EmbedderOpt,
    embed_backend: Optional[str] = EmbedBackendOpt,
    embed_dtype: Optional[str] = EmbedDtypeOpt,
    bf16: bool = Bf16Opt,
    device: Optional[str] = DeviceOpt,
    wide: bool = WideOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Plain (non-agentic) retrieval: one query, top-k chunks."""
    from sieve.retriever import CorpusIndex
    from sieve.retriever.base import validate_k

    s = settings_from(
        data_dir,
        chroma_url,
        embedder,
        collection=collection,
        device=device,
        **embed_overrides(embed_backend, embed_dtype, bf16),
    )
    index = CorpusIndex.open(s.retriever_config(), s.collection)
    # The one cap on k (SIEVE_MAX_REQUEST_K, default MAX_K) that `sieve search` and the HTTP API check too.
    hits = index.search(query, validate_k(s.k if k is None else k, s.max_request_k), mode=mode)
    if as_json:
        print_json({"query": query, "mode": mode, "collection": s.collection, "results": [hit_json(h) for h in hits]})
    else:
        _hits_table(hits, f"{mode} results for: {query}", wide=wide)


DropOldOpt = typer.Option(
    None,
    "--drop-old",
    metavar="NAME",
    help="Delete the versions of NAME it no longer serves (left by sieve adopt's re-embedding).",
)
CheckOpt = typer.Option(
    False, "--check", help="Check the store's lock-folder files (lock, token, ready mark); exit 1 if damaged."
)
RepairOpt = typer.Option(
    False, "--repair", help="With --check: move damaged lock-folder files aside and write a fresh token."
)


@cli_errors
def collections_cmd(
    delete: Optional[str] = typer.Option(None, "--delete", help="Delete this collection (and its BM25 index)."),
    drop_old: Optional[str] = DropOldOpt,
    yes: bool = typer.Option(False, "--yes", help="Do not ask before deleting."),
    show_all: bool = typer.Option(False, "--all", help="Also list `sieve eval`'s cached corpora."),
    check: bool = CheckOpt,
    repair: bool = RepairOpt,
    data_dir: Optional[Path] = DataDirOpt,
    chroma_url: Optional[str] = ChromaUrlOpt,
    as_json: bool = JsonOpt,
) -> None:
    """List collections, or delete one. `sieve eval`'s cached corpora are hidden unless --all."""
    cfg = settings_from(data_dir, chroma_url).retriever_config()
    if check or repair:
        _check_lock_folder(cfg, repair=repair, as_json=as_json)
    elif drop_old:
        _drop_old_versions(cfg, drop_old, as_json)
    elif delete:
        _delete_collection(cfg, delete, yes=yes, as_json=as_json)
    else:
        _list_collections(cfg, show_all=show_all, as_json=as_json)


def _drop_old_versions(cfg: RetrieverConfig, name: str, as_json: bool) -> None:
    """``sieve collections --drop-old NAME``: delete the versions of NAME it no longer serves."""
    from sieve.retriever.reembed import drop_old_versions

    dropped = drop_old_versions(cfg, name)
    if as_json:
        print_json({"collection": name, "dropped": dropped})
    else:
        typer.echo(f"Dropped {', '.join(dropped)}" if dropped else f"{name} has no old versions")


def _delete_collection(cfg: RetrieverConfig, name: str, *, yes: bool, as_json: bool) -> None:
    """``sieve collections --delete NAME``, asking first on a terminal unless ``yes``."""
    from sieve.core.errors import InvalidInput, UnknownCollection
    from sieve.retriever.index import delete_collection
    from sieve.retriever.store import is_eval_cache, list_collections  # not index: no scipy to list

    names = sorted(n for n in list_collections(cfg, include_eval=True) if name == n or not is_eval_cache(n))
    if name not in names:  # before asking: nothing to confirm
        raise UnknownCollection(f"Expected an existing collection, got {name!r}; valid: {names}")
    if not yes:
        if not sys.stdin.isatty():
            raise InvalidInput(f"Expected --yes to delete collection {name!r} without a terminal to ask on")
        # The question goes to stderr: stdout carries only the result (--json stays parseable).
        if not typer.confirm(f"Delete collection {name!r}?", err=True):
            raise typer.Exit(1)
    delete_collection(cfg, name)
    if as_json:
        print_json({"deleted": name})
    else:
        typer.echo(f"Deleted {name}")


def _list_collections(cfg: RetrieverConfig, *, show_all: bool, as_json: bool) -> None:
    """The collections and their sizes; `sieve eval`'s cached corpora only with ``show_all``."""
    from sieve.retriever.store import is_eval_cache, list_collections  # not index: no scipy to list

    everything = list_collections(cfg, include_eval=True)
    cols = everything if show_all else {n: c for n, c in everything.items() if not is_eval_cache(n)}
    if as_json:
        print_json([{"name": n, "chunks": c} for n, c in cols.items()])
        return
    for n, c in cols.items():
        typer.echo(f"{n}\t{plural(c, 'chunk')}")
    hidden = len(everything) - len(cols)
    if not cols:
        typer.echo("No collections yet: run `sieve index PATH` (or `sieve demo`).")
    if hidden:
        typer.echo(f"({plural(hidden, 'eval cache')} hidden; --all lists them)", err=True)


@cli_errors
def demo_cmd(
    question: str = typer.Option(DEMO_QUESTION, "--question", "-q", help="Question to ask."),
    collection: str = typer.Option("sample", "--collection", "-c", help="Collection for the sample corpus."),
    data_dir: Optional[Path] = DataDirOpt,
    k: int = typer.Option(5, "-k", help="Results to show."),
    device: Optional[str] = DeviceOpt,
    wide: bool = WideOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Index the shipped sample corpus into COLLECTION (default: sample) and compare hybrid and agent results.

    The two rankings are shown side by side in one table (chunks in both marked), at the
    terminal's width but at most 100 columns.
    """
    from sieve.retriever import CorpusIndex
    from sieve.cli.commands._compare import compare_table, output_width

    s = settings_from(data_dir, device=device)
    index = CorpusIndex.open(s.retriever_config(), collection, create=True)
    report = index.writer.index_path(SAMPLE_DIR / "corpus.jsonl", progress=not as_json)
    hits = index.search(question, k, mode="hybrid")
    out: dict = {
        "collection": index.name,
        "question": question,
        "index": index_json(report),
        "hybrid": [hit_json(h) for h in hits],
    }
    width = output_width()
    if not as_json:
        _report_index(report, False, width=width)
    for extra in DEMO_EXTRAS:
        out.update(extra(index, question, k, as_json, wide=wide))
    if as_json:
        print_json(out)
        return
    # Each extra that ran an episode (a dict with "policy" and "results") is shown beside hybrid.
    for name, value in out.items():
        if isinstance(value, dict) and "policy" in value and "results" in value:
            compare_table(
                ("hybrid", out["hybrid"]),
                (f"{name} ({value['policy']})", value["results"]),
                f"hybrid and {name} ({value['policy']}) for: {question}",
                wide=wide,
            )
    if not any(isinstance(v, dict) and "results" in v for v in out.values()):
        _hits_table(hits, f"hybrid results for: {question}", wide=wide)
    nxt = (
        f'Next: sieve retrieve "..." -c {index.name}, sieve search "..." -c {index.name}, '
        f"or sieve serve -c {index.name} and open the playground at http://127.0.0.1:8000/"
    )
    typer.echo("\n" + textwrap.fill(nxt, width, break_on_hyphens=False, break_long_words=False), err=True)


# Later stages (the agent) append demo steps here: callables (index, question, k, as_json, *, wide)
# returning a dict merged into `sieve demo --json`'s output. A value holding an episode ("policy" and
# "results", as `trace_json` writes) is shown beside hybrid's results in the demo's one table; a step
# prints only its own log and notes (on stderr, within the demo's width) when not as_json.
DEMO_EXTRAS: list = []


def register(app: typer.Typer) -> None:
    refresh()  # help that lists a registry lists what registered before the command line is assembled
    app.command("index")(index_cmd)
    app.command("retrieve")(retrieve_cmd)
    app.command("collections")(collections_cmd)
    app.command("demo")(demo_cmd)


__all__ = ["DEMO_EXTRAS", "hit_json", "index_json", "register"]
