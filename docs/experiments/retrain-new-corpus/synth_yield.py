"""What the template writer can read in a corpus, without an index: the precheck behind the corpus choice.

    python docs/experiments/retrain-new-corpus/synth_yield.py CORPUS.jsonl [CORPUS.jsonl ...]

The template writer (``sieve train synth``) needs lead passages whose subject it can read facts from
(:func:`sieve.train.synth_facts.read_subject`), and for bridge questions a passage that mentions
another document's title (:meth:`sieve.train.synth.CorpusView.title_mentions`). Each document's
first ~1,200 characters stand in for its lead chunk.
"""

from __future__ import annotations

import json
import sys
from collections import Counter

from sieve.retriever.types import Chunk
from sieve.train.synth import CorpusView
from sieve.train.synth_facts import read_subject


def corpus_yield(path: str) -> dict[str, object]:
    with open(path, encoding="utf-8") as f:
        docs = [json.loads(line) for line in f if line.strip()]
    chunks = [Chunk(f"{d['id']}#0", str(d["id"]), 0, d["text"][:1200], d.get("title", "")) for d in docs]
    view = CorpusView(chunks)
    kinds: Counter[str] = Counter()
    with_facts = 0
    for c in chunks:
        subject = read_subject(c.title, c.text)
        with_facts += bool(subject.facts)
        kinds.update(fact.kind for fact in subject.facts)
    return {
        "corpus": path,
        "documents": len(docs),
        "matchable_titles": len(view.titles),
        "passages_mentioning_a_title": sum(1 for c in chunks if view.title_mentions(c)),
        "leads_with_a_fact": with_facts,
        "fact_kinds": dict(kinds.most_common(6)),
    }


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(json.dumps(corpus_yield(p)))
