"""Hybrid's and the default agent's top k, side by side, for questions on a user's own collection.

No gold is needed: the table shows what each returns (chunk ids and first words) so a person can
judge. The README's "Judge it on your own folder" section runs it (``questions.txt``: one question a
line)::

    sieve index my_docs/ -c mydocs
    python -m sieve.eval.side_by_side -c mydocs --questions questions.txt -k 5
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sieve.retriever.index import CorpusIndex


def _cell(chunk_id: str, text: str, words: int) -> str:
    first = " ".join(text.split()[:words]).replace("|", "\\|")
    return f"`{chunk_id}` {first}…"


def side_by_side(
    index: CorpusIndex, questions: list[str], k: int = 5, *, policy: str | None = None, words: int = 8
) -> str:
    """One markdown table per question: rank, hybrid's chunk, the agent's chunk."""
    from sieve.agent import AgentConfig, SearchAgent
    from sieve.core.defaults import DEFAULT_POLICY

    name = policy or DEFAULT_POLICY
    config = AgentConfig(k=k)
    agent = SearchAgent.with_policy(index, name, config)
    out: list[str] = []
    for q in questions:
        hybrid = index.search(q, k, mode="hybrid")
        trace = agent.run(q)
        out += [f"**{q}**", "", f"| # | hybrid | agent ({name}) |", "|---:|---|---|"]
        for i in range(k):
            h = _cell(hybrid[i].chunk_id, hybrid[i].chunk.text, words) if i < len(hybrid) else ""
            e = trace.returned[i] if i < len(trace.returned) else None
            a = _cell(e.chunk_id, e.text, words) if e is not None else ""
            out.append(f"| {i + 1} | {h} | {a} |")
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    from sieve.retriever import CorpusIndex
    from sieve.settings import load_settings

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-c", "--collection", required=True)
    ap.add_argument("--questions", type=Path, required=True, help="One question per line.")
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--policy", default=None)
    args = ap.parse_args(argv)
    questions = [q.strip() for q in args.questions.read_text(encoding="utf-8").splitlines() if q.strip()]
    s = load_settings()
    index = CorpusIndex.open(s.retriever_config(), args.collection)
    sys.stdout.write(side_by_side(index, questions, args.k, policy=args.policy) + "\n")


if __name__ == "__main__":
    main()


__all__ = ["main", "side_by_side"]
