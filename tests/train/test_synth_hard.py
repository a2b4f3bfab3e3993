"""The hard task writer (``sieve train synth --generator hard``) on a small documentation corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from sieve.retriever.bm25 import SparseBM25, tokenize
from sieve.train.synth_facts import quoted_content_words
from sieve.train.synth_hard import HardConfig, keyphrases, question_for, synthesize_hard


@pytest.fixture(scope="module")
def hard_tasks(docs_index, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    out = tmp_path_factory.mktemp("hard") / "tasks.jsonl"
    run = synthesize_hard(docs_index, out, HardConfig(n=40, seed=0), progress=False)
    return out, run.tasks


def test_keyphrases_are_runs_of_uncommon_content_words():
    # "block cache" sits in 2 of 6 chunks: a keyphrase. "restore command" sits in 1 (a lexical give-away),
    # so the shorter "restore" (2 chunks) is kept instead; stop words, "size" and "snapshots" (in none) never are.
    texts = [
        "the block cache keeps hashes",
        "a block cache in memory",
        "the restore command",
        "passphrase prompt",
        "clock drift",
        "restore folder",
    ]
    bm = SparseBM25.from_tokens([str(i) for i in range(len(texts))], [tokenize(t) for t in texts])
    phrases = keyphrases("Raising the block cache size helps; the restore command lists snapshots.", bm, HardConfig())
    assert [p.text for p in phrases] == ["block cache", "restore"]
    assert [p.df for p in phrases] == [2, 2]


def test_a_one_word_keyphrase_names_a_thing_not_a_common_verb():
    """In a small folder "takes" is as rare as "pyenv"; "What do opt-in and takes have in common?" (a task
    pipx's docs gave) is no question. A common word passes only as a noun, right after a determiner."""
    texts = ["it takes long", "it takes time", "the battery lasts", "a battery pack", "pyenv shims", "pyenv root"]
    bm = SparseBM25.from_tokens([str(i) for i in range(len(texts))], [tokenize(t) for t in texts])
    text = "Use pyenv; it takes the battery down."
    common = frozenset({"take", "battery", "down"})  # an embedder's whole words (Embedder.whole_words)
    assert sorted(p.text for p in keyphrases(text, bm, HardConfig(), common)) == ["battery", "pyenv"]
    assert sorted(p.text for p in keyphrases(text, bm, HardConfig())) == ["battery", "pyenv", "takes"]


def test_the_embedders_whole_words_are_its_general_vocabulary(embedder):
    words = embedder.whole_words()
    assert {"take", "battery", "the"} <= words and not {"pyenv", "freebsd", "##s"} & words


def test_the_writer_writes_verified_tasks_from_documentation(docs_index, hard_tasks):
    _, tasks = hard_tasks
    assert len(tasks) >= 5, "the docs fixture should give several tasks"
    chunks = {c.chunk_id: c for d in docs_index.documents() for c in docs_index.read_document(d)}
    bm25 = docs_index.bm25_index()
    for t in tasks:
        gold = [chunks[c] for c in t["meta"]["gold_chunk_ids"]]
        # paraphrase rule: no run of more than 4 content words copied from the gold text
        assert quoted_content_words(t["question"], [c.text for c in gold]) <= 4, t["question"]
        assert t["gold_ids"] == list(dict.fromkeys(c.doc_id for c in gold))
        for phrase in t["meta"]["phrases"]:
            assert phrase in t["question"]
        if t["meta"]["kind"] == "bridge":  # the answer is the link only the two gold chunks share
            link = tokenize(t["answers"][0])
            assert bm25.ids_with_all(link) == sorted(t["meta"]["gold_chunk_ids"])
            assert t["answers"][0] not in t["question"]
        if t["meta"]["kind"] == "single":
            # no ambiguity: only the gold chunk holds every word of the phrases and the context
            words = [w for p in [*t["meta"]["phrases"], t["meta"]["context"]] for w in tokenize(p)]
            assert bm25.ids_with_all(words) == t["meta"]["gold_chunk_ids"]
            assert bm25.top_k(tokenize(t["question"]), 1)[0][0] != gold[0].chunk_id  # not the lexical top hit


def test_span_tasks_carry_the_span_gold_of_two_consecutive_chunks(hard_tasks):
    _, tasks = hard_tasks
    spans = [t for t in tasks if t["meta"]["kind"] == "span"]
    assert spans, "a corpus of multi-chunk pages should give span tasks"
    for t in spans:
        a, b = t["meta"]["gold_chunk_ids"]
        doc_a, pos_a = a.split("#")
        doc_b, pos_b = b.split("#")
        assert doc_a == doc_b and int(pos_b) == int(pos_a) + 1
        assert [s["doc_id"] for s in t["gold_spans"]] == [doc_a, doc_a]
        assert all(s["end"] > s["start"] for s in t["gold_spans"])
        assert t["question"].startswith("In ")  # the document is named: one chunk of a long page needs it


def test_the_writer_is_deterministic_and_resumable(docs_index, hard_tasks, tmp_path):
    path, tasks = hard_tasks
    again = synthesize_hard(docs_index, tmp_path / "again.jsonl", HardConfig(n=40, seed=0), progress=False)
    assert [t["id"] for t in again.tasks] == [t["id"] for t in tasks]
    resumed = synthesize_hard(docs_index, path, HardConfig(n=len(tasks), seed=0), progress=False)
    assert resumed.tasks == []  # everything wanted is already in the file


def test_questions_read_as_questions_whatever_the_source():
    assert (
        question_for("single", "Caroline", ["support group"], speaker=True)
        == "What did Caroline say about support group?"
    )
    assert (
        question_for("single", "npm-audit", ["severity"], long_doc=True) == "In npm-audit, what is said about severity?"
    )
    assert (
        question_for("span", "Amcor 2022 8K", ["indentures", "notes"])
        == "In Amcor 2022 8K, what is said about indentures, and about notes?"
    )
    assert question_for("bridge", "", ["zstd", "media"]) == "What do zstd and media have in common?"


def test_bad_settings_fail_clearly():
    from sieve.core.errors import InvalidInput

    with pytest.raises(InvalidInput, match="kinds"):
        HardConfig(kinds=("single", "poem"))
    with pytest.raises(InvalidInput, match="n >= 1"):
        HardConfig(n=0)
