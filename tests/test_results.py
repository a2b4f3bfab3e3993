"""One record of evidence for every interface: ``sieve.results.Result``, made from a hit or an episode's evidence."""

from __future__ import annotations

from dataclasses import fields

from sieve.agent.trace import Evidence
from sieve.client import Result as ClientResult
from sieve.results import Result
from sieve.retriever.types import Chunk, Hit
from sieve.server.convert import evidence_out, hit_out
from sieve.server.schemas import EvidenceOut

CHUNK = Chunk(chunk_id="d#2", doc_id="d", position=2, text="Some text.", title="D", source="d.md", metadata={"a": 1})


def test_the_http_schema_has_exactly_the_records_fields() -> None:
    assert list(EvidenceOut.model_fields) == [f.name for f in fields(Result)]
    assert ClientResult is Result  # the client hands out the same record


def test_a_hit_and_an_evidence_item_become_the_same_record_on_every_interface() -> None:
    hit = Hit(chunk=CHUNK, score=0.25, rank=3, mode="bm25")
    from_hit = Result.from_hit(hit)
    assert from_hit == Result(
        id="d#2", doc_id="d", rank=3, score=0.25, title="D", text="Some text.", source="d.md", metadata={"a": 1}
    )
    assert hit_out(hit).model_dump() == from_hit.to_json()

    ev = Evidence(chunk_id="d#2", doc_id="d", score=0.5, rank=1, title="D", text="t", justification="why")
    from_ev = Result.from_evidence(ev)
    assert (from_ev.id, from_ev.score, from_ev.justification) == ("d#2", 0.5, "why")
    assert evidence_out(ev).model_dump() == from_ev.to_json()
    assert Result.from_json(from_ev.to_json()) == from_ev
