"""Check an evaluation's agent traces: no search a person would not write.

A query of one capitalised word lifted from a chunk ("Adding", "Make", "Next", "Typically") finds
everything and nothing; "my", "Now", "Congratulations" or "2020" read as noise in the step log; a
single token held by one chunk of the corpus ("UCAVs") can find only the chunk it was read in. The
query writers refuse all of these (:func:`sieve.agent.policies.entities.query_problem`, judged by
the corpus's own document shares as the keyphrases are); this reads a ``sieve eval`` report back
and counts, by the same rules, what got through::

    python -m sieve.eval.query_check --data ../shared/eval/locomo-dev --report report/locomo-dev

Exits 1 when any agent search had a problem, and lists them by kind. The question itself, searched
as asked, is never counted: the agent did not write it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sieve.agent.policies.entities import COMMON_SHARE, held_once, normalise, opens_only, query_problem
from sieve.eval.evaluator import RESULTS_FILE


@dataclass
class QueryCheck:
    """What the agent searched in one report: all searches, single-word ones, and the bad ones by problem."""

    searches: int = 0
    single_word: int = 0
    bad: dict[str, list[str]] = field(default_factory=dict)  # problem -> the queries that had it

    @property
    def common(self) -> list[str]:
        """Single words common on the corpus (the first check this tool made)."""
        return self.bad.get("a common word of the corpus", [])

    @property
    def n_bad(self) -> int:
        return sum(len(v) for v in self.bad.values())


def agent_searches(results: Path) -> Iterator[tuple[str, str]]:
    """``(question, query)`` for every ``search`` of every agent row of a ``results.jsonl`` (baseline
    rows have no trace)."""
    with results.open(encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            trace = json.loads(line).get("trace") or {}
            question = str(trace.get("question") or "")
            for turn in trace.get("turns", []):
                for call in turn.get("tool_calls", []):
                    if call.get("name") == "search" and isinstance(call.get("arguments", {}).get("query"), str):
                        yield question, call["arguments"]["query"]


def agent_queries(results: Path) -> Iterator[str]:
    """Every ``search`` query of every agent row of a ``results.jsonl``."""
    return (q for _, q in agent_searches(results))


def check_queries(
    queries: Iterable[str | tuple[str, str]],
    share: Callable[[str], float],
    max_share: float = COMMON_SHARE,
    chunks: int | None = None,
    opening_only: Callable[[str], bool] | None = None,
) -> QueryCheck:
    """Sort the searches (each a query, or ``(question, query)``) by :func:`query_problem` on a corpus of
    ``chunks`` chunks whose words hold the shares ``share``; a single word above ``max_share`` is common.
    ``opening_only(word)``: whether the corpus holds a word only where it opens a sentence or line;
    a single word of one chunk, not the question's, that it holds so is a sentence-opening word.

    Example:
        >>> share = {"make": 0.3, "lindbergh": 0.001}
        >>> check_queries(iter(["Make", "Lindbergh", "Spirit of St. Louis", "2020"]), lambda w: share.get(w, 0.0)).bad
        {'a common word of the corpus': ['Make'], 'a bare number': ['2020']}
    """
    out = QueryCheck()
    for item in queries:
        question, q = item if isinstance(item, tuple) else ("", item)
        if question and normalise(q) == normalise(question):
            continue  # the question as asked: not a query the agent wrote
        out.searches += 1
        words = normalise(q).split()
        if len(words) == 1:
            out.single_word += 1
        problem = query_problem(q, share, chunks, question)
        if problem is None and len(words) == 1 and share(words[0]) > max_share:
            problem = "a common word of the corpus"
        if (
            problem is None
            and opening_only is not None
            and len(q.split()) == 1
            and held_once(words, share, chunks)
            and not set(words) <= set(normalise(question).split())
            and opening_only(q.strip())
        ):
            problem = "a sentence-opening word of one chunk"
        if problem is not None:
            out.bad.setdefault(problem, []).append(q)
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
    bm25 = index.bm25_index()

    def opening_only(word: str) -> bool:
        # The one chunk holding the word is BM25's first hit for it.
        hits = index.search(word, 1, mode="bm25")
        return bool(hits) and opens_only(word.strip("\"'“”‘’()[]{},.;:!?«»*`"), hits[0].chunk.text)

    result = check_queries(
        agent_searches(args.report / RESULTS_FILE), bm25.doc_share, chunks=len(bm25), opening_only=opening_only
    )
    sys.stdout.write(
        f"{args.data.name}: {result.searches} searches written by the agent, {result.single_word} of one word, "
        f"{result.n_bad} no search a person would write\n"
    )
    for problem, queries in sorted(result.bad.items()):
        shown = ", ".join(sorted(set(queries))[:20])
        sys.stdout.write(f"  {len(queries)} {problem}: {shown}\n")
    return 1 if result.n_bad else 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["QueryCheck", "agent_queries", "agent_searches", "check_queries", "main"]
