"""Pseudo-relevance feedback: which words of the kept chunks reword the question, and who searches it.

The word rules are pure functions (a corpus's shares given by hand); both no-LLM policies are run
on the real sample index.
"""

from __future__ import annotations

from sieve.agent import AgentConfig, SearchAgent, make_policy
from sieve.agent.config import HeuristicConfig
from sieve.agent.policies.feedback import FEEDBACK_MAX_SHARE, feedback_query, feedback_terms
from sieve.agent.policies.learned.features import CANDIDATE_FEATURES, Candidate, EpisodeFeatures, TextCache
from sieve.pruning.context import ChunkEntry
from sieve.retriever.types import Chunk

SHARE = {
    "current": 0.03,
    "liabilities": 0.02,
    "assets": 0.04,
    "inventories": 0.01,  # rare, but held by one kept chunk only
    "company": 0.3,  # too common on this corpus to say anything of these chunks
    "amcor": 0.01,  # in the question already
    "2023": 0.01,  # a bare number
}


def share(word: str) -> float:
    return SHARE.get(word, 0.0)


KEPT = [
    Chunk("a#1", "a", 1, "Total current assets 2023; total current liabilities of the company", title="Amcor"),
    Chunk("a#2", "a", 2, "Current liabilities exceed current assets; the company; 2023", title="Amcor"),
    Chunk("a#3", "a", 3, "Inventories and current liabilities", title="Amcor"),
]


def test_feedback_words_are_rare_shared_and_new_to_the_question():
    assert FEEDBACK_MAX_SHARE < SHARE["company"]
    # "liabilities" (3 chunks, rarest) before "current" (3 chunks) before "assets" (2 chunks).
    assert feedback_terms("Has Amcor's quick ratio improved?", KEPT, share) == ["liabilities", "current", "assets"]
    assert feedback_terms("Amcor's current liabilities?", KEPT, share) == ["assets"]
    assert feedback_terms("Amcor?", KEPT, share, most=1) == ["liabilities"]


def test_no_feedback_without_shares_or_qualifying_words():
    assert feedback_terms("Amcor?", KEPT, None) == []
    assert feedback_terms("Amcor?", KEPT[:1], share) == []  # one chunk: nothing in common
    assert feedback_query("Amcor's current assets and liabilities?", KEPT, share) is None
    assert feedback_query("Amcor?", KEPT, share) == "Amcor? liabilities current assets"


def _feedback_searches(trace, question: str) -> list[tuple[int, str]]:
    return [
        (t.index, c.arguments["query"])
        for t in trace.turns
        for c in t.tool_calls
        if c.name == "search" and c.arguments["query"].startswith(question) and c.arguments["query"] != question
    ]


def test_heuristic_searches_the_feedback_query_on_its_first_hop(sample_index, sample_tasks):
    question = sample_tasks[0]["question"]
    config = AgentConfig(k=5, heuristic=HeuristicConfig(feedback=True))
    trace = SearchAgent(sample_index, make_policy("heuristic", config), config).run(question)
    searched = _feedback_searches(trace, question)
    assert len(searched) == 1 and searched[0][0] == 1  # once, on the turn after the question's own search
    assert len(searched[0][1].split()) > len(question.split())
    off = AgentConfig(k=5)  # the default: off (it costs multi-hop questions their bridge searches)
    assert (
        _feedback_searches(SearchAgent(sample_index, make_policy("heuristic", off), off).run(question), question) == []
    )


def test_learned_policy_is_offered_feedback_once_after_the_question(sample_index, sample_tasks):
    question = sample_tasks[0]["question"]
    f = EpisodeFeatures(question, TextCache(), k=5, max_turns=4, seed_chunks=5, mentions_per_chunk=5, max_candidates=32)
    f.share = sample_index.bm25_index().doc_share
    # The pool the policy holds after its first search, built without the harness.
    active = [ChunkEntry(h.chunk_id, h.chunk, 100, relevance=h.score) for h in sample_index.search(question, 10)]
    assert not [c for c in f.candidates(active) if c.kind == "feedback"]  # the question is not searched yet
    f.issue("q", Candidate("question", question))
    offered = [c for c in f.candidates(active) if c.kind == "feedback"]
    assert len(offered) == 1 and offered[0].text.startswith(question + " ")
    row = f.candidate_matrix(offered, active)[0]
    kinds = {name: row[i] for i, name in enumerate(CANDIDATE_FEATURES) if name.startswith("kind_")}
    assert kinds["kind_question"] == 1.0 and sum(kinds.values()) == 1.0  # read in the question's column
    f.issue("fb", offered[0])
    assert not [c for c in f.candidates(active) if c.kind == "feedback"]  # at most once per episode
