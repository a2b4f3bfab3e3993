"""The context state of one episode: ordered messages plus a registry of every chunk shown.

The model sees :meth:`ContextState.view`, in which pruned chunks are reduced to a one-line
placeholder and only the latest budget notice is kept; :meth:`ContextState.full` renders the
same messages unpruned, the trajectory kept for scoring. Token counts are kept per message and
per chunk so the budget is known without re-tokenising the whole prompt every turn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from threading import RLock
from typing import TYPE_CHECKING, Any, Literal

from sieve.pruning.tokens import MESSAGE_OVERHEAD

if TYPE_CHECKING:
    from collections.abc import Iterable

    from sieve.pruning.tokens import TokenCounter
    from sieve.retriever.types import Chunk

MessageKind = Literal["system", "user", "assistant", "tool", "notice"]
_HANDLE_RE = re.compile(r"^\[?\s*(c\d+)\s*\]?$", re.IGNORECASE)


@dataclass
class ChunkEntry:
    """A chunk shown to the model, under its short episode-stable handle (``c17``)."""

    handle: str
    chunk: Chunk
    tokens: int  # tokens of the rendered block
    relevance: float = 0.0  # similarity to the question (what automatic pruners read)
    score: float = 0.0  # the producing tool's score
    tool: str = ""
    query: str = ""
    turn: int = 0
    pruned: bool = False

    @property
    def chunk_id(self) -> str:
        return self.chunk.chunk_id

    @property
    def doc_id(self) -> str:
        return self.chunk.doc_id


@dataclass
class Message:
    """One chat message; tool results hold chunk handles so pruning can hide their text."""

    role: str
    kind: MessageKind
    content: str = ""
    chunk_handles: list[str] = field(default_factory=list)  # rendered after ``content``
    suffix: str = ""
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    fixed_tokens: int = 0  # everything but the chunk blocks
    # An assistant turn's reasoning, sent back to the model under ``reasoning_field`` (the name its
    # server gave it: ``reasoning_content`` or ``reasoning``) so a reasoning model keeps its thread
    # between the tool calls of an episode.
    reasoning: str = ""
    reasoning_field: str = "reasoning_content"


def render_chunk(entry: ChunkEntry) -> str:
    """How a chunk appears to the model: handle, ids, title and source on one line, then the text."""
    c = entry.chunk
    head = f"[{entry.handle}] id={c.chunk_id}"
    if c.title:
        head += f" | {c.title}"
    if c.source:
        head += f" | {c.source}"
    return f"{head}\n{c.text}"


def render_pruned(entry: ChunkEntry) -> str:
    return f"[{entry.handle}] (pruned)"


class ContextState:
    """Messages and chunks of one episode. Mutations are serialised by a lock."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.messages: list[Message] = []
        self.chunks: dict[str, ChunkEntry] = {}  # handle -> entry, in the order shown
        self._by_id: dict[str, str] = {}  # chunk id -> handle
        self._pruned_order: list[str] = []
        self._lock = RLock()

    # -- messages -----------------------------------------------------------------------------
    def add(
        self,
        role: str,
        content: str = "",
        *,
        kind: MessageKind | None = None,
        chunk_handles: Iterable[str] = (),
        suffix: str = "",
        tool_calls: list[dict[str, Any]] | None = None,
        tool_call_id: str | None = None,
        name: str | None = None,
        reasoning: str = "",
        reasoning_field: str = "reasoning_content",
    ) -> Message:
        msg = Message(
            role=role,
            kind=kind or role,  # type: ignore[arg-type]
            content=content,
            chunk_handles=list(chunk_handles),  # type: ignore[arg-type]
            suffix=suffix,
            tool_calls=tool_calls,
            tool_call_id=tool_call_id,
            name=name,
            reasoning=reasoning,
            reasoning_field=reasoning_field,
        )
        fixed = (
            MESSAGE_OVERHEAD + self.counter.count(content) + self.counter.count(suffix) + self.counter.count(reasoning)
        )
        for call in tool_calls or ():
            fn = call.get("function", {})
            fixed += self.counter.count(str(fn.get("name", ""))) + self.counter.count(str(fn.get("arguments", "")))
        msg.fixed_tokens = fixed
        with self._lock:
            self.messages.append(msg)
        return msg

    def _visible(self) -> list[Message]:
        last_notice = max((i for i, m in enumerate(self.messages) if m.kind == "notice"), default=-1)
        # Only the newest budget notice stays in view; older ones are history, not context.
        return [m for i, m in enumerate(self.messages) if m.kind != "notice" or i == last_notice]

    def _render(self, msg: Message, *, pruned_view: bool) -> dict[str, Any]:
        blocks = []
        for h in msg.chunk_handles:
            entry = self.chunks[h]
            blocks.append(render_pruned(entry) if pruned_view and entry.pruned else render_chunk(entry))
        parts = [p for p in (msg.content, "\n\n".join(blocks), msg.suffix) if p]
        out: dict[str, Any] = {"role": msg.role, "content": "\n\n".join(parts)}
        if msg.reasoning:
            out[msg.reasoning_field] = msg.reasoning
        if msg.tool_calls:
            out["tool_calls"] = msg.tool_calls
        if msg.tool_call_id is not None:
            out["tool_call_id"] = msg.tool_call_id
        if msg.name is not None and msg.role == "tool":
            out["name"] = msg.name
        return out

    def view(self) -> list[dict[str, Any]]:
        """The chat messages the model sees: pruned chunks hidden, latest notice only."""
        with self._lock:
            return [self._render(m, pruned_view=True) for m in self._visible()]

    def full(self) -> list[dict[str, Any]]:
        """Every message unpruned, every notice kept: the trajectory for scoring."""
        with self._lock:
            return [self._render(m, pruned_view=False) for m in self.messages]

    def tokens(self) -> int:
        """Tokens of :meth:`view` (per-message template overhead included)."""
        with self._lock:
            total = 0
            for m in self._visible():
                total += m.fixed_tokens
                for h in m.chunk_handles:
                    e = self.chunks[h]
                    total += self._pruned_tokens(e) if e.pruned else e.tokens
            return total

    def _pruned_tokens(self, entry: ChunkEntry) -> int:
        return self.counter.count(render_pruned(entry))

    # -- chunks -------------------------------------------------------------------------------
    def register(
        self,
        chunk: Chunk,
        *,
        relevance: float = 0.0,
        score: float = 0.0,
        tool: str = "",
        query: str = "",
        turn: int = 0,
        text: str | None = None,
    ) -> ChunkEntry:
        """Give ``chunk`` the next handle (``c1``, ``c2``...). A chunk already registered keeps its entry."""
        with self._lock:
            if chunk.chunk_id in self._by_id:
                return self.chunks[self._by_id[chunk.chunk_id]]
            handle = f"c{len(self.chunks) + 1}"
            if text is not None and text != chunk.text:
                from dataclasses import replace

                chunk = replace(chunk, text=text)  # truncated to fit the budget
            entry = ChunkEntry(
                handle=handle,
                chunk=chunk,
                tokens=0,
                relevance=relevance,
                score=score,
                tool=tool,
                query=query,
                turn=turn,
            )
            entry.tokens = self.counter.count(render_chunk(entry)) + 2  # the blank line between blocks
            self.chunks[handle] = entry
            self._by_id[chunk.chunk_id] = handle
            return entry

    def block_tokens(self, chunk: Chunk, handle: str = "c000") -> int:
        """Tokens ``chunk`` would take if registered now (for packing before registering)."""
        probe = ChunkEntry(handle=handle, chunk=chunk, tokens=0)
        return self.counter.count(render_chunk(probe)) + 2

    def next_handle(self) -> str:
        return f"c{len(self.chunks) + 1}"

    def is_seen(self, chunk_id: str) -> bool:
        return chunk_id in self._by_id

    def resolve(self, ref: str) -> ChunkEntry | None:
        """The entry for a handle (``c17``, ``[c17]``) or a chunk id shown this episode."""
        ref = str(ref).strip()
        m = _HANDLE_RE.match(ref)
        if m and m.group(1).lower() in self.chunks:
            return self.chunks[m.group(1).lower()]
        handle = self._by_id.get(ref)
        return self.chunks[handle] if handle else None

    def prune(self, refs: Iterable[str]) -> tuple[list[ChunkEntry], list[str], list[ChunkEntry]]:
        """Hide chunks from the view. Returns (newly pruned, unknown refs, already pruned)."""
        done: list[ChunkEntry] = []
        unknown: list[str] = []
        already: list[ChunkEntry] = []
        with self._lock:
            for ref in refs:
                entry = self.resolve(ref)
                if entry is None:
                    unknown.append(str(ref))
                elif entry.pruned:
                    already.append(entry)
                else:
                    entry.pruned = True
                    self._pruned_order.append(entry.chunk_id)
                    done.append(entry)
        return done, unknown, already

    @property
    def seen_ids(self) -> list[str]:
        """Every chunk id ever shown, in order (pruned ones included)."""
        return [e.chunk_id for e in self.chunks.values()]

    @property
    def pruned_ids(self) -> list[str]:
        return list(self._pruned_order)

    def active(self) -> list[ChunkEntry]:
        """Chunks currently in view."""
        return [e for e in self.chunks.values() if not e.pruned]


__all__ = ["ChunkEntry", "ContextState", "Message", "MessageKind", "render_chunk", "render_pruned"]
