"""ContextState, TokenBudget and the pruners on hand-built chunks (no index, no model)."""

from __future__ import annotations

import pytest

from sieve.pruning import (
    ApproxTokenCounter,
    BudgetPressurePruner,
    ContextState,
    ModelPruner,
    PruningConfig,
    ScoreThresholdPruner,
    TokenBudget,
    make_pruner,
)
from sieve.pruning.tokens import MESSAGE_OVERHEAD, HFTokenCounter, count_messages
from sieve.retriever.types import Chunk


def _chunk(i: int, text: str = "word " * 40) -> Chunk:
    return Chunk(chunk_id=f"d{i}#0", doc_id=f"d{i}", position=0, text=text, title=f"Title {i}")


def _ctx(n: int = 4) -> ContextState:
    ctx = ContextState(ApproxTokenCounter())
    ctx.add("system", "You search.")
    handles = [ctx.register(_chunk(i), relevance=i / 10).handle for i in range(n)]
    ctx.add("tool", "search 'x': results", kind="tool", chunk_handles=handles, tool_call_id="t1", name="search")
    return ctx


def test_handles_are_stable_and_resolvable():
    ctx = _ctx()
    assert list(ctx.chunks) == ["c1", "c2", "c3", "c4"]
    assert ctx.resolve("c2").chunk_id == "d1#0" and ctx.resolve("[C2]").chunk_id == "d1#0"
    assert ctx.resolve("d3#0").handle == "c4" and ctx.resolve("c99") is None
    assert ctx.register(_chunk(0)).handle == "c1"  # re-registering keeps the handle


def test_token_count_matches_the_rendered_view():
    ctx = _ctx()
    counter = ApproxTokenCounter()
    rendered = count_messages(counter, ctx.view())
    assert abs(ctx.tokens() - rendered) <= 2 * len(ctx.chunks) + 2  # blank lines between blocks


def test_prune_hides_text_in_view_but_not_in_full_and_frees_tokens():
    ctx = _ctx()
    before = ctx.tokens()
    done, unknown, already = ctx.prune(["c1", "c3", "zz"])
    assert [e.handle for e in done] == ["c1", "c3"] and unknown == ["zz"] and not already
    assert ctx.tokens() < before - 40
    view, full = ctx.view()[-1]["content"], ctx.full()[-1]["content"]
    assert "[c1] (pruned)" in view and "Title 0" not in view and "Title 0" in full
    assert ctx.pruned_ids == ["d0#0", "d2#0"] and ctx.seen_ids == ["d0#0", "d1#0", "d2#0", "d3#0"]
    _, _, already = ctx.prune(["c1"])
    assert [e.handle for e in already] == ["c1"]
    assert [e.handle for e in ctx.active()] == ["c2", "c4"]


def test_only_latest_notice_in_view():
    ctx = _ctx()
    ctx.add("user", "[Token usage: 1/2]", kind="notice")
    ctx.add("user", "[Token usage: 2/2]", kind="notice")
    contents = [m["content"] for m in ctx.view()]
    assert "[Token usage: 2/2]" in contents and "[Token usage: 1/2]" not in contents
    assert len(ctx.full()) == len(ctx.view()) + 1


def test_budget_lines_and_rejection():
    b = TokenBudget.from_config(32768, PruningConfig())
    assert b.usage_line(14203) == "[Token usage: 14,203/32,768]"
    assert b.state(100) == "ok" and b.state(16384) == "soft" and b.state(29492) == "hard"
    assert b.notice(100) == "[Token usage: 100/32,768]"
    assert "prune" in b.notice(20000).lower()
    assert b.rejection("search", 30000) and b.rejection("prune", 30000) is None
    assert b.rejection("finish", 30000) is None and b.rejection("search", 100) is None
    assert b.remaining(29000) == b.hard - 29000 and b.remaining(10**6) == 0
    with pytest.raises(ValueError, match="budget"):
        TokenBudget.from_config(10, PruningConfig())


def test_config_validation():
    with pytest.raises(ValueError, match="soft_fraction"):
        PruningConfig(soft_fraction=0.95, hard_fraction=0.9)
    with pytest.raises(ValueError, match="auto"):
        PruningConfig(auto="sometimes")  # type: ignore[arg-type]


def test_pruners():
    budget = TokenBudget.from_config(512, PruningConfig())
    ctx = _ctx(6)  # relevance 0.0 .. 0.5
    assert ModelPruner().select(ctx, budget) == []
    assert ScoreThresholdPruner(0.25, keep_min=2).select(ctx, budget) == ["c3", "c2", "c1"]
    assert ScoreThresholdPruner(0.9, keep_min=2).select(ctx, budget) == ["c4", "c3", "c2", "c1"]
    used = ctx.tokens()
    assert used > budget.soft
    chosen = BudgetPressurePruner(0.3, keep_min=1).select(ctx, budget)
    assert chosen[:2] == ["c1", "c2"]  # least relevant first
    ctx.prune(chosen)
    assert ctx.tokens() <= int(512 * 0.3) or len(ctx.active()) == 1
    assert BudgetPressurePruner(0.3).select(_ctx(1), budget) == []  # under the soft limit
    assert isinstance(make_pruner(PruningConfig(auto="pressure")), BudgetPressurePruner)
    assert isinstance(make_pruner(PruningConfig(auto="threshold")), ScoreThresholdPruner)


def test_token_counters():
    assert ApproxTokenCounter().count("") == 0 and ApproxTokenCounter(2).count("abcd") == 2

    class Tok:
        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": text.split()}

    assert HFTokenCounter(Tok()).count("a b c") == 3
    assert count_messages(ApproxTokenCounter(), [{"role": "user", "content": "abcd"}]) == MESSAGE_OVERHEAD + 1
