"""A Slack workspace export read as chat logs: one document a channel's day, a turn a line.

Slack's export (Workspace settings > Import/Export) unzips to a folder holding ``users.json``,
``channels.json`` and a folder a channel of day files (``general/2024-01-02.json``), each a JSON list
of messages whose text names people and channels by id (``<@U024BE7LH>``, ``<#C024BE7LB|general>``).
Read as they are, none of them is a document Sieve reads (``.json`` is no text format). Read here,
a day file becomes the session it is, titled ``#general 2024-01-02``, each message a line in the
form Sieve's conversation handling knows (:mod:`~sieve.retriever.turns`): its time stamp and its
author's name first (``[09:15] Ana Lima: ...``), ids written as the names they stand for, links as
their text. A session a document, not a message a document: on locomo-dev's conversations chunks of
several turns find more of the asked-for turns at the same k (agent span recall@10 0.848 one
document a session against recall@10 0.780 one turn a document; ``docs/experiments/speakers.md``).

What is left out: notices that are no one's words (joins, leaves, topic and purpose changes, pins),
and messages with neither text nor a file. Times are UTC (the export's ``ts`` is a UNIX time).

Example:
    >>> users = {"U1": "Ana Lima"}
    >>> turn({"user": "U1", "ts": "1704200100.000200", "text": "Ask <@U1> or see <https://x.io|the runbook> &amp; <#C9|ops>"}, users)
    '[12:55] Ana Lima: Ask @Ana Lima or see the runbook (https://x.io) & #ops'
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

_DAY_FILE = re.compile(r"\d{4}-\d{2}-\d{2}\.json")
_EXPORT_FILES = ("users.json", "channels.json")
# Notices Slack writes into a channel that are no one's words.
_NOTICES = frozenset(
    "channel_join channel_leave channel_topic channel_purpose channel_name channel_archive channel_unarchive "
    "group_join group_leave group_topic group_purpose group_name group_archive group_unarchive pinned_item "
    "unpinned_item bot_add bot_remove reminder_add".split()
)
_USER = re.compile(r"<@([A-Z0-9]+)(?:\|([^>]*))?>")
_CHANNEL = re.compile(r"<#[A-Z0-9]+\|([^>]*)>")
_SPECIAL = re.compile(r"<!(?:subteam\^[A-Z0-9]+\|)?@?([^>|]*)(?:\|[^>]*)?>")
_LINK = re.compile(r"<((?:https?|mailto|tel):[^>|]*)(?:\|([^>]*))?>")


def is_slack_day(path: Path) -> bool:
    """Whether ``path`` is a day file of a Slack export: ``<channel>/YYYY-MM-DD.json`` in a folder
    that also holds the export's ``users.json`` and ``channels.json``."""
    return bool(_DAY_FILE.fullmatch(path.name)) and all((path.parent.parent / f).is_file() for f in _EXPORT_FILES)


def read_slack_day(path: Path) -> tuple[str, str]:
    """A day file as a session: its title (``#general 2024-01-02``) and its messages, a turn a line.

    Raises:
        ValueError: the file is not a JSON list of messages.
        UnicodeDecodeError: the file is not UTF-8.
    """
    raw = json.loads(path.read_bytes().decode("utf-8"))
    if not isinstance(raw, list):
        raise ValueError("expected a Slack day file: a JSON list of messages")
    users = _users(path.parent.parent / "users.json")
    turns = [turn(message, users) for message in raw if isinstance(message, dict)]
    return f"#{path.parent.name} {path.stem}", "\n".join(t for t in turns if t)


def turn(message: dict, users: dict[str, str]) -> str:
    """One message as a turn, ``[HH:MM] Name: text``; ``""`` for a notice or a message with nothing in it."""
    if message.get("subtype") in _NOTICES:
        return ""
    text = _plain(str(message.get("text") or ""), users)
    files = [str(f.get("title") or f.get("name")) for f in message.get("files") or [] if isinstance(f, dict)]
    text = " ".join([text, *(f"[file: {name}]" for name in files)]).strip()
    if not text:
        return ""
    author = users.get(str(message.get("user"))) or _name(message.get("user_profile") or {})
    author = author or str(message.get("username") or (message.get("bot_profile") or {}).get("name") or "Someone")
    try:
        stamp = datetime.fromtimestamp(float(message.get("ts", "")), tz=timezone.utc).strftime("[%H:%M] ")
    except (TypeError, ValueError):
        stamp = ""
    return f"{stamp}{_capitalised(author)}: {text}"


def _plain(text: str, users: dict[str, str]) -> str:
    """Slack's markup as a reader sees it: ids as names, links as their text and address, entities decoded."""
    text = _USER.sub(lambda m: "@" + (users.get(m.group(1)) or m.group(2) or m.group(1)), text)
    text = _CHANNEL.sub(lambda m: "#" + m.group(1), text)
    text = _LINK.sub(lambda m: f"{m.group(2)} ({m.group(1)})" if m.group(2) else m.group(1), text)
    text = _SPECIAL.sub(lambda m: "@" + m.group(1), text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").strip()


@lru_cache(maxsize=8)
def _users_at(path: Path, mtime_ns: int) -> dict[str, str]:
    del mtime_ns  # part of the cache key only: an export unzipped again is read again
    try:
        listed = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return (
        {str(u["id"]): _name(u) for u in listed if isinstance(u, dict) and "id" in u}
        if isinstance(listed, list)
        else {}
    )


def _users(path: Path) -> dict[str, str]:
    """User id -> the name people call them by, from the export's ``users.json`` (read once per export)."""
    try:
        return _users_at(path, path.stat().st_mtime_ns)
    except OSError:
        return {}


def _name(user: dict) -> str:
    """A person's name as a turn opens with it: the real name first (a display handle is often lower case)."""
    profile = user.get("profile")
    if not isinstance(profile, dict):
        profile = user
    for value in (profile.get("real_name"), user.get("real_name"), profile.get("display_name"), user.get("name")):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _capitalised(name: str) -> str:
    """``name`` with each word opening in a capital, so a handle ("ana.lima") reads as a speaker."""
    return " ".join(w[:1].upper() + w[1:] for w in name.split())


__all__ = ["is_slack_day", "read_slack_day", "turn"]
