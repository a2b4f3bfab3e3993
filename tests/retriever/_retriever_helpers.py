"""Test data and invariants shared by the retriever tests (imported by name: tests/ has no packages)."""

from __future__ import annotations

import random

from sieve.retriever import CorpusIndex, Document

# Long enough at chunk_tokens=32 to give each document several chunks; every document has one
# word no other document has, so BM25 and grep results can be predicted exactly.
_SENTENCES = [
    "The lighthouse keeper climbed the spiral stairs every evening to light the great lamp.",
    "Ships passing the rocky headland relied on its beam during winter storms and thick fog.",
    "In spring the keeper painted the iron railings and repaired the salt-damaged windows.",
    "A small garden behind the cottage grew potatoes, onions and a stubborn row of cabbages.",
    "Visitors rarely came, but the supply boat brought letters, flour and oil once a month.",
    "After the lamp was automated, the tower became a museum about coastal navigation.",
]
MULTI_DOCS = [
    Document(
        doc_id="lighthouse",
        title="Lighthouse",
        source="synthetic",
        text=" ".join(_SENTENCES) + " Its last keeper was named Obadiah Quillfeather.",
        metadata={"topic": "coast", "year": 1890},
    ),
    Document(
        doc_id="orchard",
        title="Orchard",
        source="synthetic",
        text=(
            "The orchard on the hill held apple, pear and plum trees planted by three generations. "
            "Each autumn the harvest was pressed into cider in a wooden barn beside the brook. "
            "Frost in late April could ruin the blossom, so the growers lit smudge pots at night. "
            "The oldest tree, a gnarled Bramley, was said to be older than the village church. "
            "Its cider was sold under the label Zephyrine Reserve."
        ),
        metadata={"topic": "farm", "year": 1920},
    ),
    Document(
        doc_id="observatory",
        title="Observatory",
        source="synthetic",
        text=(
            "The observatory dome opened on clear nights so the astronomers could photograph comets. "
            "Its brass refractor telescope was ground by hand from a single disc of crown glass. "
            "Students logged variable stars in thick ledgers that still line the library shelves. "
            "The director discovered the asteroid Vellichor while searching for a lost comet."
        ),
        metadata={"topic": "science", "year": 1890},
    ),
]


def assert_consistent(index: CorpusIndex) -> None:
    """Chroma and BM25 hold the same chunk ids, and every document has all of its chunks."""
    chroma_ids = {cid for cid, _t, _m in index.store.scan(include_text=False)}
    bm25_ids = set(index.bm25_index().ids)
    assert bm25_ids == chroma_ids, (
        f"BM25 and Chroma disagree: only in BM25 {sorted(bm25_ids - chroma_ids)[:5]}, "
        f"only in Chroma {sorted(chroma_ids - bm25_ids)[:5]}"
    )
    incomplete = {d: s for d, s in index.store.doc_states().items() if not s.complete}
    assert not incomplete, f"incomplete documents: {incomplete}"


_WORDS = (
    "harbour lantern granite meadow comet violin ledger orchard glacier canyon parchment compass "
    "falcon marble cinder tundra quartz saffron beacon willow ember lagoon"
).split()

# Settings of the resume test; the child process and the test must chunk identically.
RESUME_CONFIG = dict(chunk_tokens=32, chunk_overlap=8, index_batch_size=16)


def synthetic_docs(n: int, *, seed: int = 7) -> list[Document]:
    """``n`` deterministic documents of ~30 words (two 32-token chunks each), one unique word apiece."""
    rng = random.Random(seed)
    return [
        Document(
            doc_id=f"syn-{i:04d}",
            title=f"Synthetic {i}",
            text=" ".join(rng.choice(_WORDS) for _ in range(30)) + f" uniqueword{i}",
            metadata={"shard": i % 4},
        )
        for i in range(n)
    ]


__all__ = ["MULTI_DOCS", "RESUME_CONFIG", "assert_consistent", "synthetic_docs"]
