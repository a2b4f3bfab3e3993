"""``sieve train embedder``: adapt the embedder to a collection's own words (sieve.train.adapt_embedder)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any, Optional

import typer

from sieve.cli.commands._common import (
    ChromaUrlOpt,
    CollectionOpt,
    DataDirOpt,
    EmbedderOpt,
    JsonOpt,
    cli_errors,
    print_json,
    settings_from,
)
from sieve.train.adapt_embedder import AdaptConfig
from sieve.train.weak_pairs import MINERS


def _default(name: str) -> Any:
    f = next(f for f in fields(AdaptConfig) if f.name == name)
    return f.default


def _help(name: str) -> str:
    f = next(f for f in fields(AdaptConfig) if f.name == name)
    return f"{f.metadata['help'][:-1]} (default {_default(name)})."


def _verdict_lines(result: dict[str, Any]) -> list[str]:
    lines = [
        f"{s['set']} ({s['n']}): shipped {s['shipped']:.3f} -> adapted {s['adapted']:.3f} "
        f"({s['diff']:+.3f}, noise {'unknown' if s['noise'] is None else format(s['noise'], '.3f')})"
        for s in result["sets"]
    ]
    what = "recall@10 of the pair's chunk by dense search; agent span (or document) recall@10 on --eval-data"
    verdict = (
        "Better than the shipped embedder"
        if result["better"]
        else "Not shown better than the shipped embedder (keep it; the run is kept for inspection)"
    )
    return [*lines, f"  ({what})", f"{verdict}, decided on {result['deciding_set']}."]


def add_embedder_command(train: typer.Typer) -> None:
    @train.command("embedder")
    @cli_errors
    def embedder_cmd(
        collection: Optional[str] = CollectionOpt,
        out: Path = typer.Option(Path("runs/embedder"), "--out", help="Run folder (embedder/, pairs, summary)."),
        minutes: float = typer.Option(_default("minutes"), "--minutes", help=_help("minutes")),
        epochs: float = typer.Option(_default("epochs"), "--epochs", help=_help("epochs")),
        pairs: str = typer.Option(
            ",".join(MINERS), "--pairs", help=f"Kinds of pairs, comma-separated: {', '.join(MINERS)}."
        ),
        batch_size: int = typer.Option(_default("batch_size"), "--batch-size", help=_help("batch_size")),
        max_pairs: int = typer.Option(_default("max_pairs"), "--max-pairs", help=_help("max_pairs")),
        hard_negatives: bool = typer.Option(True, "--hard-negatives/--no-hard-negatives", help=_help("hard_negatives")),
        filter_trivial: bool = typer.Option(True, "--filter-trivial/--keep-trivial", help=_help("filter_trivial")),
        eval_data: Optional[Path] = typer.Option(
            None,
            "--eval-data",
            help="A sieve eval data dir (corpus.jsonl + labelled tasks.jsonl) of this corpus: the default agent runs "
            "its questions with each embedder, and they decide the verdict.",
        ),
        seed: int = typer.Option(0, "--seed", help="Split and training seed."),
        data_dir: Optional[Path] = DataDirOpt,
        chroma_url: Optional[str] = ChromaUrlOpt,
        embedder: Optional[str] = EmbedderOpt,
        as_json: bool = JsonOpt,
    ) -> None:
        """Adapt the embedder to COLLECTION's own words, with no LLM: mine (query, passage) pairs from its headings,
        titles, links, sentences and turns, fine-tune MiniLM on the CPU, and compare it with the shipped one."""
        from sieve.core.errors import InvalidInput
        from sieve.eval.runner import agent_recall_per_task
        from sieve.retriever import CorpusIndex
        from sieve.train.adapt_embedder import adapt

        if eval_data is not None and not (eval_data / "tasks.jsonl").is_file():
            raise InvalidInput(f"Expected --eval-data to be a folder with tasks.jsonl, got {str(eval_data)!r}")
        cfg = AdaptConfig(
            kinds=tuple(k.strip() for k in pairs.split(",") if k.strip()),
            minutes=minutes,
            epochs=epochs,
            batch_size=batch_size,
            max_pairs=max_pairs,
            hard_negatives=hard_negatives,
            filter_trivial=filter_trivial,
            seed=seed,
        )
        s = settings_from(data_dir, chroma_url, embedder, collection=collection)
        rc = s.retriever_config()
        index = CorpusIndex.open(rc, s.collection)
        result = adapt(
            index,
            cfg,
            out,
            rc,
            eval_data=eval_data,
            score_tasks=lambda d, c, e, o: agent_recall_per_task(d, c, e, o, progress=not as_json),
            progress=not as_json,
        )
        if as_json:
            print_json(result)
            return
        p, t = result["pairs"], result["training"]
        typer.echo(
            f"Pairs mined: {p['mined']}; dropped: {p['filtered']['copied']} copied, "
            f"{p['filtered']['bm25_trivial']} BM25-trivial, {p['filtered']['too_short']} too short; "
            f"{p['train']} trained on ({p['hard_negatives']} with a hard negative), {p['held_apart']} held apart."
        )
        budget = " (the --minutes budget ended it)" if t["stopped_by_budget"] else ""
        typer.echo(f"Fine-tuned {t['steps']} steps in {t['seconds']:.0f}s{budget}; loss {t['loss']}.")
        for line in _verdict_lines(result):
            typer.echo(line)
        model = result["embedder"]
        typer.echo(
            f"Use it: sieve eval --data DIR --embedder {model}; sieve index FOLDER -c NEW_NAME --embedder {model} "
            "(that collection then uses it without the flag)."
        )


__all__ = ["add_embedder_command"]
