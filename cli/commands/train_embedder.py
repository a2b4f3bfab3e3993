"""``sieve train embedder``: adapt the embedder to a collection's own words (sieve.train.adapt_embedder)."""

from __future__ import annotations

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
from sieve.cli.commands._listing import listing
from sieve.cli.commands._train_options import config_default, config_help, config_option
from sieve.train.adapt_embedder import AdaptConfig
from sieve.train.weak_pairs import MINERS, OPT_IN, default_kinds


def _option(name: str, *flags: str) -> Any:
    """A flag for ``AdaptConfig.<name>``: its default, and its help with the default said."""
    return config_option(
        AdaptConfig,
        name,
        *flags,
        help=f"{config_help(AdaptConfig, name)[:-1]} (default {config_default(AdaptConfig, name)}).",
    )


EvalDataOpt = typer.Option(
    None,
    "--eval-data",
    help="A sieve eval data dir (corpus.jsonl + labelled tasks.jsonl) of this corpus: the default agent runs "
    "its questions with each embedder, and they decide the verdict.",
)
# Every kind registered when the command line is assembled (AdaptConfig.kinds holds those registered at its import).
PairsOpt = listing(
    typer.Option(None, "--pairs"),
    help=lambda: f"Kinds of pairs, comma-separated: {', '.join(MINERS)} ({', '.join(sorted(OPT_IN))} only when named).",
    default=lambda: ",".join(default_kinds()),
)


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


def _summary_lines(result: dict[str, Any]) -> list[str]:
    """What was mined and trained, the verdict, and how to use the adapted embedder."""
    p, t = result["pairs"], result["training"]
    budget = " (the --minutes budget ended it)" if t["stopped_by_budget"] else ""
    model = result["embedder"]
    return [
        f"Pairs mined: {p['mined']}; dropped: {p['filtered']['copied']} copied, "
        f"{p['filtered']['bm25_trivial']} BM25-trivial, {p['filtered']['too_short']} too short; "
        f"{p['train']} trained on ({p['hard_negatives']} with a hard negative), {p['held_apart']} held apart.",
        f"Fine-tuned {t['steps']} steps in {t['seconds']:.0f}s{budget}; loss {t['loss']}.",
        *_verdict_lines(result),
        f"Use it: sieve eval --data DIR --embedder {model}; sieve index FOLDER -c NEW_NAME --embedder {model} "
        "(that collection then uses it without the flag).",
    ]


@cli_errors
def embedder_cmd(
    collection: Optional[str] = CollectionOpt,
    out: Path = typer.Option(Path("runs/embedder"), "--out", help="Run folder (embedder/, pairs, summary)."),
    minutes: float = _option("minutes"),
    epochs: float = _option("epochs"),
    pairs: str = PairsOpt,
    batch_size: int = _option("batch_size"),
    max_pairs: int = _option("max_pairs"),
    hard_negatives: bool = _option("hard_negatives", "--hard-negatives/--no-hard-negatives"),
    filter_trivial: bool = _option("filter_trivial", "--filter-trivial/--keep-trivial"),
    eval_data: Optional[Path] = EvalDataOpt,
    seed: int = config_option(AdaptConfig, "seed"),
    data_dir: Optional[Path] = DataDirOpt,
    chroma_url: Optional[str] = ChromaUrlOpt,
    embedder: Optional[str] = EmbedderOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Adapt the embedder to COLLECTION's own words, with no LLM: mine (query, passage) pairs from its headings,
    titles, links, sentences and conversations' questions, fine-tune MiniLM on the CPU, and compare it with the shipped one."""
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
    for line in _summary_lines(result):
        typer.echo(line)


__all__ = ["embedder_cmd"]
