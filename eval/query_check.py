"""Check an evaluation's agent traces: no search query may be a single word that is common on its corpus.

A query of one capitalised word lifted from a chunk ("Adding", "Make", "Next", "Typically") finds
everything and nothing. The query writers refuse such words by their share of the corpus's chunks
(:func:`sieve.agent.policies.entities.searchable`); this reads a ``sieve eval`` report back and
counts what got through::

    python -m sieve.eval.query_check --data ../shared/eval/locomo-dev --report report/locomo-dev

Exits 1 when any agent search was a single common word, and lists them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sieve.agent.policies.entities import COMMON_SHARE, normalise
from sieve.eval.evaluator import RESULTS_FILE


@dataclass
class QueryCheck:
    """What the agent searched in one report: all searches, single-word ones, and the common ones among them."""

    searches: int = 0
    single_word: int = 0
    common: list[str] = field(default_factory=list)


def agent_queries(results: Path) -> Iterator[str]:
    """Every ``search`` query of every agent row of a ``results.jsonl`` (baseline rows have no trace)."""
    with results.open(encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            trace = json.loads(line).get("trace") or {}
            for turn in trace.get("turns", []):
                for call in turn.get("tool_calls", []):
                    if call.get("name") == "search" and isinstance(call.get("arguments", {}).get("query"), str):
                        yield call["arguments"]["query"]


def check_queries(queries: Iterator[str], share: Callable[[str], float], max_share: float = COMMON_SHARE) -> QueryCheck:
    """Count single-word queries whose word is in more than ``max_share`` of the corpus's chunks.

    Example:
        >>> share = {"make": 0.3, "lindbergh": 0.001}
        >>> check_queries(iter(["Make", "Lindbergh", "Spirit of St. Louis"]), lambda w: share.get(w, 0.0)).common
        ['Make']
    """
    out = QueryCheck()
    for q in queries:
        out.searches += 1
        words = normalise(q).split()
        if len(words) == 1:
            out.single_word += 1
            if share(words[0]) > max_share:
                out.common.append(q)
    return out


def main(argv: list[str] | None = None) -> int:
    from sieve.eval.data import collection_name, load_sets
    from sieve.retriever import CorpusIndex
    from sieve.settings import load_settings

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="The data dir the report was made from.")
    ap.add_argument("--report", type=Path, required=True, help="The report folder (holds results.jsonl).")
    args = ap.parse_args(argv)
    config = load_settings().retriever_config()
    sets, _ = load_sets([args.data])
    index = CorpusIndex.open(config, collection_name(sets, config))
    result = check_queries(agent_queries(args.report / RESULTS_FILE), index.bm25_index().doc_share)
    sys.stdout.write(
        f"{args.data.name}: {result.searches} searches, {result.single_word} of one word, "
        f"{len(result.common)} a common word of the corpus{': ' if result.common else ''}"
        f"{', '.join(sorted(set(result.common))[:20])}\n"
    )
    return 1 if result.common else 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["QueryCheck", "agent_queries", "check_queries", "main"]
