"""Metadata filters are bounded before any store call (issue 42: a 9,000-condition ``$and`` ended the
server with SIGSEGV inside Chroma), and what the store still refuses is our ``InvalidInput``."""

from __future__ import annotations

import pytest

from sieve.core.errors import InvalidInput
from sieve.retriever.filters import FILTER_LIMITS, FilterLimits, validate_where
from sieve.retriever.store import filter_checked


def _and(n: int, op: str = "$and") -> dict:
    return {op: [{"title": {"$ne": f"t{i}"}} for i in range(n)]}


def _nested(depth: int) -> dict:
    where: dict = {"title": "t0"}
    for _ in range(depth):
        where = {"$and": [where, {"title": {"$ne": "x"}}]}
    return where


def test_filters_at_every_limit_pass_unchanged() -> None:
    lim = FILTER_LIMITS
    at_limits = [
        _and(lim.max_conditions),
        _nested(lim.max_depth),
        {"title": {"$in": ["x" * lim.max_value_chars] * lim.max_list_values}},
        # max_total_values spread over lists of the largest size
        {"$or": [{"k": {"$nin": list(range(lim.max_list_values))}}] * (lim.max_total_values // lim.max_list_values)},
    ]
    for where in at_limits:
        assert validate_where(where) is where


@pytest.mark.parametrize(
    ("where", "named"),
    [
        (_and(FILTER_LIMITS.max_conditions + 1), "101 clauses under one '$and'"),
        (_and(9000, "$or"), "9000 clauses under one '$or'"),
        ({"$and": [_and(60), _and(60)]}, "more than 100 conditions"),  # the total, not only one list
        (_nested(FILTER_LIMITS.max_depth + 1), "nested more than 8 deep"),
        (_nested(5000), "nested more than 8 deep"),
        ({"title": {"$in": list(range(100_000))}}, "100000 values in the list of 'title.$in'"),
        ({"$or": [{"k": {"$in": list(range(1000))}}] * 11}, "more than 10000 list values in all"),
        ({"title": "x" * (FILTER_LIMITS.max_value_chars + 1)}, "a string of 10001 characters"),
        ({"title": {"$eq": {"deeper": [1]}}}, "a nested dict as the value of 'title.$eq'"),
    ],
)
def test_a_filter_past_a_limit_is_refused_naming_it_and_the_limits(where: dict, named: str) -> None:
    with pytest.raises(InvalidInput) as err:
        validate_where(where)
    assert named in err.value.message
    assert FILTER_LIMITS.describe() in err.value.message


@pytest.mark.parametrize(
    ("where", "named"),
    [
        ([{"a": 1}], "Expected a metadata filter object, got list"),
        ({"$and": {"a": 1}}, "Expected a list of filter objects under '$and'"),
        ({"$or": ["a"]}, "Expected a metadata filter object, got str"),
    ],
)
def test_a_filter_of_the_wrong_shape_is_refused(where: object, named: str) -> None:
    with pytest.raises(InvalidInput, match=named.replace("$", r"\$")):
        validate_where(where)


def test_limits_can_be_tightened_for_a_caller() -> None:
    with pytest.raises(InvalidInput, match="more than 2 conditions"):
        validate_where({"a": 1, "b": 2, "c": 3}, FilterLimits(max_conditions=2))


def test_sqlite_limits_the_store_reports_become_invalid_input() -> None:
    """Chroma passes SQLite's refusals on as InternalError (a 500 before issue 42); other internal errors stay."""
    from chromadb.errors import InternalError

    sqlite = "Error executing plan: Internal error: error returned from database: (code: 1) too many SQL variables"
    with (
        pytest.raises(InvalidInput, match="the store rejects \\(.*too many SQL variables\\)"),
        filter_checked({"a": 1}),
    ):
        raise InternalError(sqlite)
    with pytest.raises(InternalError), filter_checked({"a": 1}):
        raise InternalError("disk I/O error")
    with pytest.raises(InternalError), filter_checked(None):  # no filter: nothing of the caller's to blame
        raise InternalError(sqlite)


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_the_store_refuses_the_filters_that_crashed_it(sample_index, mode: str) -> None:
    """9,000 and 20,000 conditions ended the process inside Chroma's Rust layer; 1,000 was SQLite's 500."""
    for where in (_and(1000), _and(9000), _and(20_000, "$or"), {"title": {"$in": list(map(str, range(100_000)))}}):
        with pytest.raises(InvalidInput, match="within Sieve's limits"):
            sample_index.search("Lindbergh", 3, mode=mode, where=where)
    assert sample_index.search("Lindbergh", 3, mode=mode, where=_and(FILTER_LIMITS.max_conditions))
