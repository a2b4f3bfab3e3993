"""Schema-driven fuzzing (schemathesis) of the live server: no input may produce a 5xx.

Bounded here (a few cases per operation and mode); ``python tests/server/fuzz_server.py`` runs
many more and prints the count.
"""

from __future__ import annotations

import pytest
import schemathesis  # noqa: F401  (a test extra: a missing one fails the run)
from live_server import TINY, TINY_DOCS, start_server

from sieve.retriever.filters import FILTER_LIMITS

EXAMPLES = 6


@pytest.fixture()
def fuzz_target(tmp_path, embedder):
    # Its own data folder: fuzzing creates and deletes arbitrary collections.
    from sieve.retriever.types import Document

    srv = start_server(embedder, tmp_path, collection=TINY)
    srv.state.index(TINY, create=True).writer.index_documents(
        [Document(doc_id=d["id"], text=d["text"], title=d["title"], metadata=d["metadata"]) for d in TINY_DOCS],
        progress=False,
    )
    yield srv
    srv.stop()


def test_fuzzing_finds_no_server_errors(fuzz_target) -> None:
    from fuzzing import fuzz

    report = fuzz(fuzz_target.url, max_examples=EXAMPLES, seed=1)
    assert not report.failures, "\n".join(report.failures)
    # Every documented operation was exercised, with both accepted and rejected inputs.
    assert len(report.by_operation) >= 11
    assert report.cases >= len(report.by_operation) * 2
    assert any(200 <= s < 300 for s in report.by_status) and report.by_status[422] > 0


# -- filters (issue 42): schemathesis sees `filters` as any object; these are shaped like Chroma's grammar
_FIELDS = ["title", "country", "doc_id", "position", "", "$bad"]
_OPS = ["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$contains", "$not_contains", "$regex", "$x"]


def _filter_strategy():
    from hypothesis import strategies as st

    scalar = st.one_of(
        st.text(max_size=30),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        st.booleans(),
        st.none(),
    )
    operand = st.one_of(scalar, st.lists(scalar, max_size=30))
    # Large flat lists and clause counts cross the limits; kept under ~2,000 so that a regression
    # shows as a 5xx here (SQLite's refusal), not as a crash of this test process.
    big_list = st.sampled_from([0, 1, 999, 1000, 1001, 2000]).map(lambda n: list(range(n)))  # around the list limit
    leaf = st.builds(
        lambda f, op, v: {f: v if op is None else {op: v}},
        st.sampled_from(_FIELDS),
        st.one_of(st.none(), st.sampled_from(_OPS)),
        st.one_of(operand, big_list),
    )
    many = st.builds(
        lambda op, n: {op: [{"title": {"$ne": f"t{i}"}} for i in range(n)]},
        st.sampled_from(["$and", "$or"]),
        st.sampled_from([0, 1, 2, 99, 100, 101, 999, 2000]),  # around the clause limit, and SQLite's depth
    )
    tree = st.recursive(
        st.one_of(leaf, many),
        lambda kids: st.builds(
            lambda op, xs: {op: xs}, st.sampled_from(["$and", "$or", "$not"]), st.lists(kids, max_size=4)
        ),
        max_leaves=30,
    )
    return st.one_of(tree, st.lists(leaf, max_size=3), scalar)


def _past_the_limits(where: object) -> bool:
    """Whether ``where`` holds more field conditions, or one $and/$or more clauses, than FILTER_LIMITS allows."""
    conditions, stack = 0, [where]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            for key, value in node.items():
                if key in ("$and", "$or") and isinstance(value, list):
                    if len(value) > FILTER_LIMITS.max_conditions:
                        return True
                    stack.extend(value)
                else:
                    conditions += 1
    return conditions > FILTER_LIMITS.max_conditions


def test_filter_shaped_fuzzing_finds_no_server_errors(fuzz_target) -> None:
    import httpx
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    statuses: dict[int | str, int] = {}
    with httpx.Client(base_url=fuzz_target.url, timeout=60) as client:

        @settings(
            max_examples=60,
            deadline=None,
            database=None,
            derandomize=True,  # the same cases on every run: CI is not a lottery
            suppress_health_check=list(HealthCheck),
        )
        @given(
            where=_filter_strategy(),
            path=st.sampled_from(["/v1/retrieve", "/v1/search"]),
            mode=st.sampled_from(["bm25", "dense", "hybrid"]),
        )
        def run(where, path, mode) -> None:
            body = {"query": "capital", "collection": TINY, "filters": where}
            body.update({"mode": mode} if path == "/v1/retrieve" else {"policy": "heuristic", "max_turns": 2})
            r = client.post(path, json=body)
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
            assert r.status_code < 500, (path, r.text[:300], str(where)[:300])
            if isinstance(where, dict) and _past_the_limits(where):  # refused at the edge, naming the limits
                statuses["past the limits"] = statuses.get("past the limits", 0) + 1
                assert r.status_code == 422 and "within Sieve's limits" in r.text, r.text[:300]

        run()
    assert statuses.get(422, 0) > 0 and statuses.get("past the limits", 0) > 0, statuses
