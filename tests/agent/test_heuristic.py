"""The no-LLM heuristic policy on the real sample index (no fake: real embedder, Chroma, BM25)."""

from __future__ import annotations

from sieve.agent import AgentConfig, SearchAgent, make_policy


def _searches(turns):
    """The search queries of each turn, in order."""
    return tuple(
        tuple(sorted(c.arguments.get("query") or "" for c in t.tool_calls if c.name == "search")) for t in turns
    )


def _recall(docs, gold):
    return len(set(docs) & set(gold)) / len(gold)


def test_heuristic_episode_is_valid_and_bridges(sample_index, sample_tasks):
    config = AgentConfig(k=10)
    agent = SearchAgent(sample_index, make_policy("heuristic", config), config)
    agent_recall = hybrid_recall = 0.0
    for task in sample_tasks[:6]:
        trace = agent.run(task["question"])
        assert trace.stop_reason in ("finished", "converged")
        assert 0 < len(trace.returned) <= 10 and trace.n_malformed == 0
        assert set(trace.returned_chunk_ids) <= set(trace.seen_chunk_ids)
        assert not set(trace.returned_chunk_ids) & set(trace.pruned_chunk_ids)
        assert trace.n_searches >= 2  # it reformulated at least once
        assert trace.peak_context_tokens <= config.budget_tokens
        agent_recall += _recall(trace.returned_doc_ids[:10], task["gold_ids"])
        hits = sample_index.search(task["question"], 50)
        hybrid_recall += _recall(list(dict.fromkeys(h.doc_id for h in hits))[:10], task["gold_ids"])
    assert agent_recall >= hybrid_recall - 1e-9  # at least single-shot hybrid at the same set size


def test_heuristic_is_deterministic_and_fused_rollouts_differ(sample_index, sample_tasks):
    config = AgentConfig(k=5)
    agent = SearchAgent(sample_index, make_policy("heuristic", config), config)
    q = sample_tasks[0]["question"]
    a, b = agent.run(q), agent.run(q)
    assert a.returned_chunk_ids == b.returned_chunk_ids
    fused = agent.run_fused(q, rollouts=3)
    assert len(fused.returned) == 5 and len(fused.meta["rollouts"]) == 3
    # Fused turns are the rollouts' turns one after another: cut them back into per-rollout searches.
    per_rollout, start = [], 0
    for rollout in fused.meta["rollouts"]:
        per_rollout.append(_searches(fused.turns[start : start + rollout["turns"]]))
        start += rollout["turns"]
    assert start == len(fused.turns)
    assert per_rollout[0] == _searches(a.turns)  # rollout 0 runs with seed 0, as a single episode does
    assert len(set(per_rollout)) > 1  # other seeds choose other bridging names
