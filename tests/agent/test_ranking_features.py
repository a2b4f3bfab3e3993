"""The closing ranker's pool and features (pure functions, by hand)."""

from __future__ import annotations

import pytest

from sieve.agent.ranking.features import (
    FEATURES,
    RankingFeatures,
    agreement,
    features,
    pool,
    question_cover,
)
from sieve.agent.trace import Evidence
from sieve.retriever.types import Chunk


def ev(cid: str) -> Evidence:
    return Evidence(chunk_id=cid, doc_id=cid.split("#")[0], score=0.0, rank=0)


def test_pool_is_the_union_with_both_ranks():
    items = pool([ev("a#0"), ev("x#0")], [ev("b#0"), ev("a#0")])
    assert [(it.evidence.chunk_id, it.policy_rank, it.hybrid_rank) for it in items] == [
        ("a#0", 0, 1),
        ("x#0", 1, None),
        ("b#0", None, 0),
    ]


def test_features_by_hand():
    items = pool([ev("a#0"), ev("x#0")], [ev("a#1"), ev("a#0"), ev("b#0")])
    agree = agreement([ev("a#0"), ev("x#0")], [ev("a#1"), ev("a#0"), ev("b#0")])
    x = features(items, [0.5, 0.2, 0.6, 0.4], agree, [0.0, 0.0, 0.0, 0.0])
    f = dict(zip(FEATURES, x[0]))  # a#0: policy rank 0, hybrid rank 1
    assert f["policy_rr"] == 1.0 and f["hybrid_rr"] == 0.5 and f["both"] == 1.0 and f["policy_only"] == 0.0
    assert f["agreement"] == 0.5 and f["policy_rr_x_agreement"] == 0.5  # a#0 of the policy's a#0, x#0
    assert f["cos_gap"] == pytest.approx(0.5 - 0.6)
    fx = dict(zip(FEATURES, x[1]))  # x#0: the policy's own find
    assert fx["policy_only"] == 1.0 and fx["in_hybrid"] == 0.0 and fx["policy_rr"] == 0.5
    assert f["cover"] == 0.0 and f["policy_cover_lead"] == 0.0
    with pytest.raises(ValueError, match="one per pool item"):
        features(items, [0.5, 0.2], agree, [0.0, 0.0, 0.0, 0.0])


def test_cover_features_and_the_policy_lead_by_hand():
    """Pool a#0 (policy 1st, hybrid 2nd), x#0 (policy 2nd), a#1 (hybrid 1st), b#0 (hybrid 3rd)."""
    items = pool([ev("a#0"), ev("x#0")], [ev("a#1"), ev("a#0"), ev("b#0")])
    cos, cover = [0.5, 0.2, 0.6, 0.4], [0.8, 0.1, 1.0, 0.5]
    x = features(items, cos, 0.5, cover)
    rows = [dict(zip(FEATURES, r)) for r in x]
    assert [r["cover"] for r in rows] == cover
    assert rows[1]["cover_gap"] == pytest.approx(0.1 - 1.0)
    # per episode: the policy's top (a#0, x#0) against hybrid's top (a#1, a#0, b#0), the same on every row
    assert [r["policy_cos_lead"] for r in rows] == pytest.approx([(0.5 + 0.2) / 2 - (0.6 + 0.5 + 0.4) / 3] * 4)
    assert [r["policy_cover_lead"] for r in rows] == pytest.approx([(0.8 + 0.1) / 2 - (1.0 + 0.8 + 0.5) / 3] * 4)


def _chunk(cid: str, text: str, title: str = "") -> Chunk:
    return Chunk(chunk_id=cid, doc_id=cid.split("#")[0], position=0, text=text, title=title)


def test_question_cover_weighs_rare_words_and_reads_titles():
    chunks = {
        "amcor#3": _chunk("amcor#3", "Adjusted EBITDA rose in fiscal 2023.", title="AMCOR 2023 10K"),
        "pfizer#9": _chunk("pfizer#9", "Adjusted EBITDA rose in fiscal 2023.", title="Pfizer 2023 10K"),
        "amcor#4": _chunk("amcor#4", "Cash paid for interest.", title="AMCOR 2023 10K"),
    }
    share = {"amcor": 0.05, "adjusted": 0.4, "ebitda": 0.3, "2023": 0.6, "fiscal": 0.9}
    cover = question_cover("What was AMCOR's adjusted EBITDA in 2023?", chunks, lambda t: share.get(t, 0.0))
    assert cover["amcor#3"] == pytest.approx(1.0)  # every word of the question, the company from the title
    assert cover["pfizer#9"] < cover["amcor#4"] < 1.0  # the rare company name outweighs two common words
    assert all(0.0 <= v <= 1.0 for v in cover.values())
    # words the corpus lacks weigh nothing; a question of only those covers nothing
    assert question_cover("zzz qqq", chunks, lambda t: 0.0) == {cid: 0.0 for cid in chunks}


def test_agreement_is_counted_in_chunks():
    """Inside one long filing every chunk shares its document with hybrid's: only chunks tell agreement."""
    assert agreement([ev("f#1"), ev("f#2")], [ev("f#7"), ev("f#2")]) == 0.5
    assert agreement([], [ev("f#7")]) == 0.0


def test_a_feature_row_is_the_named_record():
    """The columns are the record's fields, in its order: a new feature is one field and its value."""
    assert FEATURES == RankingFeatures._fields
    items = pool([ev("a#0")], [ev("a#0"), ev("b#0")])
    row = RankingFeatures(*features(items, [0.5, 0.7], 1.0, [0.2, 0.1])[0])
    assert row.both == 1.0 and row.cos == 0.5 and row.cos_gap == pytest.approx(-0.2) and row.cover_gap == 0.0
