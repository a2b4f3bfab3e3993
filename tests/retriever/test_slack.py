"""A Slack workspace export is indexed as chat logs: one document a channel's day, a turn a line,
names for ids (real Chroma, real BM25)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from sieve.retriever import CorpusIndex, RetrieverConfig
from sieve.retriever.ingest import IngestReport, iter_documents
from sieve.retriever.turns import speakers

if TYPE_CHECKING:
    from pathlib import Path

USERS = [
    {"id": "U01", "name": "ana.lima", "profile": {"real_name": "Ana Lima", "display_name": "ana"}},
    {"id": "U02", "name": "bo", "profile": {"real_name": "", "display_name": "bo"}},
]
GENERAL = [
    {"type": "message", "subtype": "channel_join", "user": "U02", "text": "<@U02> has joined", "ts": "1704186000.0001"},
    {
        "type": "message",
        "user": "U01",
        "text": "Where is the staging database password kept now?",
        "ts": "1704186060.0002",
    },
    {
        "type": "message",
        "user": "U02",
        "text": "In the vault under <#C02|ops>. Ask <@U01> if <!here> need access: <https://vault.example.com|vault UI>",
        "ts": "1704186120.0003",
    },
    {"type": "message", "user": "U01", "text": "", "files": [{"title": "Staging runbook"}], "ts": "1704186180.0004"},
]


def _export(tmp_path: Path) -> Path:
    root = tmp_path / "slack"
    (root / "general").mkdir(parents=True)
    (root / "users.json").write_text(json.dumps(USERS), encoding="utf-8")
    (root / "channels.json").write_text(json.dumps([{"id": "C01", "name": "general"}]), encoding="utf-8")
    (root / "general" / "2024-01-02.json").write_text(json.dumps(GENERAL), encoding="utf-8")
    return root


def test_a_channel_s_day_reads_as_a_session_a_turn_a_line_with_names_for_ids(tmp_path):
    root = _export(tmp_path)
    (root / "general" / "2024-01-03.json").write_text('[{"ts": ', encoding="utf-8")  # cut short
    (root / "package.json").write_text("{}", encoding="utf-8")  # no day file: ignored by type, as before
    report = IngestReport()
    (doc,) = list(iter_documents(root, report))
    assert (doc.doc_id, doc.title, doc.source) == (
        "general/2024-01-02.json",
        "#general 2024-01-02",
        str(root / "general" / "2024-01-02.json"),
    )
    assert doc.text == (  # the join notice is no one's words
        "[09:01] Ana Lima: Where is the staging database password kept now?\n"
        "[09:02] Bo: In the vault under #ops. Ask @Ana Lima if @here need access: vault UI (https://vault.example.com)\n"
        "[09:03] Ana Lima: [file: Staging runbook]"
    )
    assert speakers(doc.text) == {"Ana Lima", "Bo"}  # a conversation to the closing ranking's speaker rule
    ((where, reason),) = report.skipped
    assert where.endswith("2024-01-03.json") and reason.startswith("unreadable .json file (JSONDecodeError")
    assert sorted(p.rsplit("/", 1)[-1] for p in report.ignored) == ["channels.json", "package.json", "users.json"]


def test_an_indexed_export_is_searchable_and_a_deleted_day_is_listed(tmp_path, embedder):
    root = _export(tmp_path)
    (root / "general" / "2024-01-03.json").write_text(json.dumps(GENERAL[1:2]), encoding="utf-8")
    index = CorpusIndex.open(RetrieverConfig(data_dir=tmp_path / "data"), "team-chat", create=True, embedder=embedder)
    assert index.writer.index_path(root, progress=False).ingest.documents == 2
    hits = index.search("who gives access to the vault", k=1)
    assert hits[0].doc_id == "general/2024-01-02.json"
    assert index.writer.index_path(root, progress=False).unchanged == 2  # read again: nothing changed
    (root / "general" / "2024-01-02.json").unlink()
    assert index.writer.index_path(root, progress=False).gone == ["general/2024-01-02.json"]
