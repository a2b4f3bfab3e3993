"""The floor under every policy (real sample index, real hybrid search; the policies are FAKE models)."""

from __future__ import annotations

import pytest
from _agent_fakes import ScriptedBackend, call, text_turn, turn

from sieve.agent import AgentConfig, SearchAgent, make_policy
from sieve.agent.config import FloorConfig
from sieve.agent.ranking.floor import fuse_with_floor
from sieve.agent.trace import Evidence
from sieve.eval.metrics import recall_at_k


class GarbagePolicy:
    """FAKE model: searches something unrelated to every question and returns all it saw, in order."""

    def chat(self, messages, tools, **kw):
        if any(m["role"] == "tool" for m in messages):
            return turn(call("finish", ids=[f"c{i}" for i in range(1, 11)]))
        return turn(call("search", query="quarterly tax tariff regulation of shipping insurance", k=10))


def _recall(doc_ids, task, k):
    return recall_at_k(list(dict.fromkeys(doc_ids)), task["gold_ids"], k)


def test_garbage_policy_keeps_hybrid_recall(sample_index, sample_tasks):
    k = 5
    floored = SearchAgent(
        sample_index, make_policy("openai", AgentConfig(k=k), backend=GarbagePolicy()), AgentConfig(k=k)
    )
    off_cfg = AgentConfig(k=k, floor=FloorConfig(enabled=False))
    raw = SearchAgent(sample_index, make_policy("openai", off_cfg, backend=GarbagePolicy()), off_cfg)
    sums = {"hybrid": 0.0, "floor": 0.0, "raw": 0.0}
    for task in sample_tasks:
        hybrid = [h.doc_id for h in sample_index.search_documents(task["question"], k)]
        trace = floored.run(task["question"])
        sums["hybrid"] += _recall(hybrid, task, k)
        sums["floor"] += _recall(trace.returned_doc_ids, task, k)
        sums["raw"] += _recall(raw.run(task["question"]).returned_doc_ids, task, k)
        assert trace.meta["floor"] is True and len(trace.meta["policy_returned"]) == k
        scores = [e.score for e in trace.returned]
        assert scores == sorted(scores, reverse=True) and scores[-1] > 0
    n = len(sample_tasks)
    assert sums["raw"] / n < sums["hybrid"] / n - 0.3  # the policy really is garbage
    assert sums["floor"] / n >= sums["hybrid"] / n - 0.02  # yet the floor keeps hybrid-level recall


def test_merge_keeps_hybrids_head_and_a_policy_only_find():
    ev = lambda d: Evidence(chunk_id=f"{d}#0", doc_id=d, score=0.0, rank=0)  # noqa: E731
    hybrid = [ev(d) for d in "abcdefgh"]
    # A policy that keeps the question's first hits and adds a second hop ("x") hybrid missed:
    # agreement 2/3 (>= full_agreement 0.5), so x at policy rank 2 takes place 2, ahead of hybrid's "c".
    fused = fuse_with_floor([ev("a"), ev("x"), ev("b")], hybrid, FloorConfig(full_agreement=0.5), 5)
    assert [e.doc_id for e in fused] == ["a", "b", "x", "c", "d"]
    # Standing = agreement = 2/3 (full_agreement 1, power 1): x's place is 2 / (2/3) = 3, after hybrid's "c".
    linear = FloorConfig(full_agreement=1.0, agreement_power=1.0)
    assert [e.doc_id for e in fuse_with_floor([ev("a"), ev("x"), ev("b")], hybrid, linear, 5)] == [
        "a",
        "b",
        "c",
        "x",
        "d",
    ]
    assert [e.rank for e in fused] == [1, 2, 3, 4, 5]
    # Whatever the policy ranks, at most half of any top k comes from outside hybrid's ranking; without
    # corroboration the top k keeps hybrid's top ceil(k / 2), with it (c) hybrid's top floor(k (1 - c) / 2).
    policy = [ev(d) for d in ["h", "p", "q", "r", "g", "s", "f", "t", "u", "e", "v"]]
    hybrid_ids = {e.doc_id for e in hybrid}
    for corr in (0.0, 0.25, 0.5):
        for k in range(1, 12):
            head = [
                e.doc_id
                for e in fuse_with_floor(policy, hybrid, FloorConfig(full_agreement=0.1, corroboration=corr), k)
            ]
            assert len([d for d in head if d not in hybrid_ids]) <= k // 2
            protected = (k + 1) // 2 if corr == 0 else int(k * (1 - corr) / 2)
            assert {e.doc_id for e in hybrid[:protected]} <= set(head)
    # Half the agreement needed for full standing (power 1): one policy place is worth two of hybrid's;
    # with power 2 it is worth four, so x (place 8) falls out of the top 6.
    half = fuse_with_floor(
        [ev("a"), ev("x"), ev("y"), ev("z")], hybrid, FloorConfig(full_agreement=0.5, agreement_power=1.0), 6
    )
    assert [e.doc_id for e in half] == ["a", "b", "c", "d", "x", "e"]  # x: place 2 / 0.5 = 4, after d on the tie
    squared = fuse_with_floor(
        [ev("a"), ev("x"), ev("y"), ev("z")], hybrid, FloorConfig(full_agreement=0.5, agreement_power=2.0), 6
    )
    assert [e.doc_id for e in squared] == list("abcdef")
    # A ranking sharing nothing with the question's: hybrid's, untouched.
    assert [e.doc_id for e in fuse_with_floor([ev("p"), ev("q")], hybrid, FloorConfig(), 5)] == list("abcde")
    # Without the agreement scaling the same garbage takes slots: the switch is what protects the floor.
    assert "p" in [e.doc_id for e in fuse_with_floor([ev("p"), ev("q")], hybrid, FloorConfig(agreement=False), 5)]
    # Corroboration: "f" (hybrid 6, policy 2) and "e" (hybrid 5, policy 3) are held by both. Their places
    # 1/(1/6 + 1/2) = 1.5 and 1/(1/5 + 1/3) = 1.9 are capped at 3/4 of the better one (1.5 and 2.25),
    # so f moves ahead of hybrid's "b" and e ahead of "c", but neither over hybrid's "a".
    both = [ev("x"), ev("f"), ev("e")]
    plain = fuse_with_floor(both, hybrid, FloorConfig(full_agreement=0.5, corroboration=0.0), 6)
    corroborated = fuse_with_floor(both, hybrid, FloorConfig(full_agreement=0.5, corroboration=0.25), 6)
    assert [e.doc_id for e in plain] == ["a", "x", "b", "f", "c", "e"]
    assert [e.doc_id for e in corroborated] == ["a", "x", "f", "b", "e", "c"]
    assert [e.score for e in corroborated] == sorted((e.score for e in corroborated), reverse=True)
    with pytest.raises(Exception, match="Expected floor corroboration in"):
        FloorConfig(corroboration=1.0)
    with pytest.raises(Exception, match="Expected floor full_agreement in"):
        FloorConfig(full_agreement=0)
    with pytest.raises(Exception, match="Expected floor agreement_power > 0"):
        FloorConfig(agreement_power=0)


def test_scores_fall_with_rank_and_mean_something(sample_index):
    question = "Which city was the Spirit of St. Louis named after?"
    for floor in (True, False):
        config = AgentConfig(k=8, floor=FloorConfig(enabled=floor))
        trace = SearchAgent(sample_index, make_policy("heuristic", config), config).run(question)
        scores = [e.score for e in trace.returned]
        assert len(scores) == 8 and scores == sorted(scores, reverse=True) and scores[-1] > 0
        assert scores != [round(1 / r, 6) for r in range(1, 9)]  # not the old placeholder 1/rank
        if not floor:  # the heuristic's own evidence scores, as its finish step gave them
            assert all(e.metadata.get("relevance") is not None for e in trace.returned)
        else:
            assert all("hybrid_rank" in e.metadata and "policy_rank" in e.metadata for e in trace.returned)
    assert set(trace.returned_chunk_ids) <= set(trace.seen_chunk_ids)


def test_a_policy_writing_no_tool_call_says_so_and_gets_the_floor(sample_index, caplog):
    question = "Which city was the Spirit of St. Louis named after?"
    config = AgentConfig(k=5)
    agent = SearchAgent(
        sample_index,
        make_policy("openai", config, backend=ScriptedBackend([text_turn("It was named after Paris.")])),
        config,
    )
    with caplog.at_level("WARNING"):
        trace = agent.run(question)
    assert trace.stop_reason == "no_tool_call" and trace.answer is None  # no evidence, so no answer
    assert len(trace.warnings) == 1 and "wrote no tool call" in trace.warnings[0]
    assert "wrote no tool call" in caplog.text
    # Nothing of the policy's: the fusion model ranks hybrid's own pool (30 chunks) by its question
    # signals alone, so the evidence is hybrid's chunks, led by hybrid's best.
    hybrid = [h.chunk_id for h in sample_index.search(question, 30, mode="hybrid")]
    assert trace.meta["policy_returned"] == [] and len(trace.returned) == 5
    assert set(trace.returned_chunk_ids) <= set(hybrid) and trace.returned_chunk_ids[0] == hybrid[0]
    assert all(e.metadata["policy_rank"] is None for e in trace.returned)
