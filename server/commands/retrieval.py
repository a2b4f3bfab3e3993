"""``sieve index``, ``sieve retrieve``, ``sieve collections`` and ``sieve demo``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from sieve.data import SAMPLE_DIR
from sieve.server.commands._common import (
    Bf16Opt, ChromaUrlOpt, CollectionOpt, DataDirOpt, EmbedBackendOpt, EmbedDtypeOpt, EmbedderOpt, JsonOpt, cli_errors,
    embed_overrides, print_json, settings_from, shorten,
)

DEMO_QUESTION = "What was the 2020 population of the city that Charles Lindbergh's transatlantic aircraft was named after?"


def _hits_table(hits: list, title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_lines=False)
    for col in ("#", "score", "chunk", "title", "text"):
        table.add_column(col, overflow="fold" if col == "text" else "ellipsis")
    for h in hits:
        table.add_row(str(h.rank), f"{h.score:.4f}", h.chunk_id, shorten(h.chunk.title, 40), shorten(h.chunk.text, 110))
    Console().print(table)


def hit_json(h) -> dict:
    c = h.chunk
    return {"rank": h.rank, "id": c.chunk_id, "doc_id": c.doc_id, "score": h.score, "title": c.title,
            "source": c.source, "position": c.position, "text": c.text, "metadata": c.metadata}


def _report_index(report, as_json: bool) -> None:
    ing = report.ingest
    if as_json:
        print_json({"added": report.added, "updated": report.updated, "unchanged": report.unchanged,
                    "resumed": report.resumed, "chunks_written": report.chunks_written,
                    "seconds": round(report.seconds, 2), "files_read": ing.files_read, "documents": ing.documents,
                    "skipped": [{"where": w, "reason": r} for w, r in ing.skipped], "ignored": ing.ignored})
        return
    typer.echo(f"{ing.documents} documents from {ing.files_read} files: {report.added} added, {report.updated} "
               f"updated, {report.resumed} resumed, {report.unchanged} unchanged; {report.chunks_written} chunks "
               f"written in {report.seconds:.1f}s ({report.chunks_per_second:.1f} chunks/s)")
    if ing.skipped:
        typer.secho(f"Skipped {len(ing.skipped)} unreadable inputs:", fg=typer.colors.YELLOW, err=True)
        for where, reason in ing.skipped:
            typer.secho(f"  {where}: {reason}", fg=typer.colors.YELLOW, err=True)
    if ing.ignored:
        typer.echo(f"Ignored {len(ing.ignored)} files with unsupported suffixes (e.g. {ing.ignored[0]})", err=True)


def register(app: typer.Typer) -> None:
    @app.command("index")
    @cli_errors
    def index_cmd(
        path: Path = typer.Argument(..., help="File or folder (.txt .md .jsonl .html .pdf)."),
        collection: Optional[str] = CollectionOpt, data_dir: Optional[Path] = DataDirOpt,
        chroma_url: Optional[str] = ChromaUrlOpt, embedder: Optional[str] = EmbedderOpt,
        embed_backend: Optional[str] = EmbedBackendOpt, embed_dtype: Optional[str] = EmbedDtypeOpt, bf16: bool = Bf16Opt,
        chunk_tokens: Optional[int] = typer.Option(None, help="Chunk size in tokens (default $SIEVE_CHUNK_TOKENS or 200)."),
        chunk_overlap: Optional[int] = typer.Option(None, help="Chunk overlap in tokens (default $SIEVE_CHUNK_OVERLAP "
                                                               "or 32)."),
        as_json: bool = JsonOpt,
    ) -> None:
        """Index a file or folder into COLLECTION (idempotent, resumable)."""
        from sieve.retriever import CorpusIndex

        s = settings_from(data_dir, chroma_url, embedder, **embed_overrides(embed_backend, embed_dtype, bf16),
                          chunk_tokens=chunk_tokens, chunk_overlap=chunk_overlap, collection=collection)
        index = CorpusIndex.open(s.retriever_config(), s.collection, create=True)
        _report_index(index.index_path(path, progress=not as_json), as_json)

    @app.command("retrieve")
    @cli_errors
    def retrieve_cmd(
        query: str = typer.Argument(..., help="The query."),
        k: Optional[int] = typer.Option(None, "-k", help="Number of results (default $SIEVE_K or 10)."),
        mode: str = typer.Option("hybrid", "--mode", help="dense | bm25 | hybrid"),
        collection: Optional[str] = CollectionOpt, data_dir: Optional[Path] = DataDirOpt,
        chroma_url: Optional[str] = ChromaUrlOpt, embedder: Optional[str] = EmbedderOpt,
        embed_backend: Optional[str] = EmbedBackendOpt, embed_dtype: Optional[str] = EmbedDtypeOpt, bf16: bool = Bf16Opt,
        as_json: bool = JsonOpt,
    ) -> None:
        """Plain (non-agentic) retrieval: one query, top-k chunks."""
        from sieve.retriever import CorpusIndex

        s = settings_from(data_dir, chroma_url, embedder, collection=collection,
                          **embed_overrides(embed_backend, embed_dtype, bf16))
        index = CorpusIndex.open(s.retriever_config(), s.collection)
        hits = index.search(query, s.k if k is None else k, mode=mode)  # type: ignore[arg-type]
        if as_json:
            print_json({"query": query, "mode": mode, "collection": s.collection,
                        "results": [hit_json(h) for h in hits]})
        else:
            _hits_table(hits, f"{mode} results for: {query}")

    @app.command("collections")
    @cli_errors
    def collections_cmd(
        delete: Optional[str] = typer.Option(None, "--delete", help="Delete this collection (and its BM25 index)."),
        yes: bool = typer.Option(False, "--yes", help="Do not ask before deleting."),
        data_dir: Optional[Path] = DataDirOpt, chroma_url: Optional[str] = ChromaUrlOpt, as_json: bool = JsonOpt,
    ) -> None:
        """List collections, or delete one."""
        from sieve.retriever.index import delete_collection, list_collections

        cfg = settings_from(data_dir, chroma_url).retriever_config()
        if delete:
            if not yes and not typer.confirm(f"Delete collection {delete!r}?"):
                raise typer.Exit(1)
            delete_collection(cfg, delete)
            typer.echo(f"Deleted {delete}")
            return
        cols = list_collections(cfg)
        if as_json:
            print_json([{"name": n, "chunks": c} for n, c in cols.items()])
        else:
            for n, c in cols.items():
                typer.echo(f"{n}\t{c} chunks")
            if not cols:
                typer.echo("No collections yet: run `sieve index PATH`.")

    @app.command("demo")
    @cli_errors
    def demo_cmd(
        question: str = typer.Option(DEMO_QUESTION, "--question", "-q", help="Question to ask."),
        collection: str = typer.Option("sample", "--collection", "-c", help="Collection for the sample corpus."),
        data_dir: Optional[Path] = DataDirOpt, k: int = typer.Option(5, "-k"),
    ) -> None:
        """Index the shipped sample corpus and show hybrid results for a sample question."""
        from sieve.retriever import CorpusIndex

        s = settings_from(data_dir)
        index = CorpusIndex.open(s.retriever_config(), collection, create=True)
        _report_index(index.index_path(SAMPLE_DIR / "corpus.jsonl"), False)
        _hits_table(index.search(question, k, mode="hybrid"), f"hybrid results for: {question}")
        for extra in DEMO_EXTRAS:
            extra(index, question, k)


# Later stages (the agent) append demo steps here: callables (index, question, k) -> None.
DEMO_EXTRAS: list = []

__all__ = ["register", "hit_json"]
