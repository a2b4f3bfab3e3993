"""A Slack workspace export is indexed as a chat log: one document a message, names for ids, each
turn searched with the turn before it in the same channel and day (real Chroma, real BM25)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from sieve.retriever import CorpusIndex, RetrieverConfig
from sieve.retriever.ingest import IngestReport, iter_documents
from sieve.retriever.turns import is_turn_context
from sieve.train.task_io import all_chunks

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


def test_an_export_reads_as_one_turn_a_message_with_names_for_ids(tmp_path):
    root = _export(tmp_path)
    (root / "general" / "2024-01-03.json").write_text('[{"ts": ', encoding="utf-8")  # cut short
    (root / "package.json").write_text("{}", encoding="utf-8")  # no day file: ignored by type, as before
    report = IngestReport()
    docs = list(iter_documents(root, report))
    assert [(d.doc_id, d.title) for d in docs] == [
        ("general/2024-01-02/1704186060.0002", "#general 2024-01-02"),
        ("general/2024-01-02/1704186120.0003", "#general 2024-01-02"),
        ("general/2024-01-02/1704186180.0004", "#general 2024-01-02"),
    ]  # the join notice is no one's words
    assert [d.text for d in docs] == [
        "[09:01] Ana Lima: Where is the staging database password kept now?",
        "[09:02] Bo: In the vault under #ops. Ask @Ana Lima if @here need access: vault UI (https://vault.example.com)",
        "[09:03] Ana Lima: [file: Staging runbook]",
    ]
    assert docs[0].source == str(root / "general" / "2024-01-02.json")
    ((where, reason),) = report.skipped
    assert where.endswith("2024-01-03.json") and reason.startswith("unreadable Slack day file (JSONDecodeError")
    assert sorted(p.rsplit("/", 1)[-1] for p in report.ignored) == ["channels.json", "package.json", "users.json"]


def test_an_indexed_export_gives_each_turn_the_one_before_it_and_lists_a_deleted_day(tmp_path, embedder):
    root = _export(tmp_path)
    (root / "general" / "2024-01-03.json").write_text(json.dumps(GENERAL[1:2]), encoding="utf-8")
    index = CorpusIndex.open(RetrieverConfig(data_dir=tmp_path / "data"), "team-chat", create=True, embedder=embedder)
    assert index.writer.index_path(root, progress=False).ingest.documents == 4
    by_id = {c.doc_id: c for c in all_chunks(index)}
    answer = by_id["general/2024-01-02/1704186120.0003"]
    assert is_turn_context(answer) and answer.heading_path.endswith("Where is the staging database password kept now?")
    assert index.writer.index_path(root, progress=False).unchanged == 4  # read again: nothing changed
    (root / "general" / "2024-01-02.json").unlink()
    assert len(index.writer.index_path(root, progress=False).gone) == 3  # the day's messages, not removed unasked
