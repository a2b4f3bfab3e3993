"""The systems compared: single-shot retrieval baselines and the Sieve agent, behind one protocol.

Every system answers one question with a ranked, doc-de-duplicated list of at least ``depth``
documents where the corpus allows (``depth`` = the largest k scored), so all systems are cut at
the same returned-set size. On sets whose tasks carry ``gold_spans`` the unit is the chunk
(``run(question, unit="chunks")``): every system returns its ``depth`` best *chunks*, several of
one document when they are the best, and the span metrics score them. Build them from spec strings with :func:`make_system`:
``dense``, ``bm25``, ``hybrid``, ``agent`` (the default policy), ``agent:<policy>`` or
``agent:<policy>:nofloor`` (without the floor).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from sieve.agent.factory import POLICIES as AGENT_POLICIES
from sieve.retriever.modes import MODES
from sieve.core.defaults import DEFAULT_POLICY
from sieve.core.errors import InvalidInput

if TYPE_CHECKING:
    from sieve.retriever.index import CorpusIndex
    from sieve.retriever.types import Chunk, SearchMode

logger = logging.getLogger(__name__)

# Every retrieval mode is a baseline system (the registry itself: a registered mode is one too).
BASELINES = MODES
NO_FLOOR = "nofloor"  # agent:<policy>:nofloor scores the policy's own ranking
Unit = Literal["docs", "chunks"]


@dataclass
class SystemOutput:
    """What one system returned for one question.

    With ``unit="docs"`` ``doc_ids`` is ranked and de-duplicated (first occurrence); ``chunk_ids[i]``
    is the chunk that put ``doc_ids[i]`` in the list and ``chunk_tokens[i]`` its size (what a reader
    model would pay). With ``unit="chunks"`` the lists are the ranked chunks, ``doc_ids[i]`` the
    document of chunk ``i`` (repeats allowed), and ``chunk_ranges[i]`` its ``(start, end)``
    characters in that document.
    """

    doc_ids: list[str]
    chunk_ids: list[str]
    scores: list[float]
    chunk_tokens: list[int]
    wall_ms: float
    seen_doc_ids: list[str] = field(default_factory=list)  # agents: all docs shown on the way; baselines: doc_ids
    tool_call_counts: dict[str, int] = field(default_factory=dict)
    answer: str = ""
    trace: dict[str, Any] | None = None  # agents only: Trace.to_dict()
    unit: Unit = "docs"
    chunk_ranges: list[tuple[int, int]] = field(default_factory=list)


@runtime_checkable
class System(Protocol):
    """A retrieval system under evaluation; ``name`` is unique within a run (it keys the results)."""

    name: str

    def run(self, question: str, unit: Unit = "docs") -> SystemOutput:
        """The ranked documents for ``question`` (``unit="chunks"``: the ranked chunks)."""
        ...


def _chunk_output(chunks: list[Chunk], scores: list[float], wall_ms: float, **extra: Any) -> SystemOutput:
    """A ``unit="chunks"`` output: the ranked chunks as they are, with their character ranges."""
    return SystemOutput(
        doc_ids=[c.doc_id for c in chunks],
        chunk_ids=[c.chunk_id for c in chunks],
        scores=scores,
        chunk_tokens=[c.n_tokens for c in chunks],
        wall_ms=wall_ms,
        unit="chunks",
        chunk_ranges=[(c.char_start, c.char_end) for c in chunks],
        **extra,
    )


def _first_per_doc(items: list[tuple[str, str, float, int]]) -> tuple[list[str], list[str], list[float], list[int]]:
    seen: set[str] = set()
    docs, chunks, scores, toks = [], [], [], []
    for chunk_id, doc_id, score, n_tok in items:
        if doc_id in seen:
            continue
        seen.add(doc_id)
        docs.append(doc_id)
        chunks.append(chunk_id)
        scores.append(score)
        toks.append(n_tok)
    return docs, chunks, scores, toks


class RetrievalSystem:
    """One search per question (``mode``: a registered retrieval mode), de-duplicated by document
    (:meth:`~sieve.retriever.index.CorpusIndex.search_documents`, the ranking the agent's floor uses too)."""

    def __init__(self, index: CorpusIndex, mode: SearchMode, depth: int) -> None:
        if mode not in BASELINES:
            raise InvalidInput(f"Expected a baseline mode in {tuple(BASELINES)}, got {mode!r}")
        self.index = index
        self.mode = mode
        self.depth = depth
        self.name = mode

    def run(self, question: str, unit: Unit = "docs") -> SystemOutput:
        t0 = time.perf_counter()
        if unit == "chunks":
            hits = self.index.search(question, self.depth, mode=self.mode)
            return _chunk_output(
                [h.chunk for h in hits],
                [h.score for h in hits],
                (time.perf_counter() - t0) * 1000,
                seen_doc_ids=list(dict.fromkeys(h.doc_id for h in hits)),
                tool_call_counts={"search": 1},
            )
        hits = self.index.search_documents(question, self.depth, mode=self.mode)
        docs, chunks, scores, toks = _first_per_doc([(h.chunk_id, h.doc_id, h.score, h.chunk.n_tokens) for h in hits])
        wall_ms = (time.perf_counter() - t0) * 1000
        return SystemOutput(
            doc_ids=docs,
            chunk_ids=chunks,
            scores=scores,
            chunk_tokens=toks,
            wall_ms=wall_ms,
            seen_doc_ids=list(docs),
            tool_call_counts={"search": 1},
        )


class AgentSystem:
    """The Sieve search agent (``agent.SearchAgent``) with a given policy, returning ``depth`` evidence items.

    ``with_floor=False`` (spec ``agent:<policy>:nofloor``) scores the policy's own ranking, without the
    fusion with the question's hybrid ranking. A policy whose backend fails raises
    :class:`~sieve.core.errors.BackendError`: the run stops rather than score the floor's results as the model's.
    """

    def __init__(
        self, index: CorpusIndex, policy: str, depth: int, *, with_floor: bool = True, **agent_overrides: Any
    ) -> None:
        from dataclasses import replace

        from sieve.agent import AgentConfig, SearchAgent

        if policy not in AGENT_POLICIES:
            raise InvalidInput(f"Expected an agent policy in {tuple(AGENT_POLICIES)}, got {policy!r}")
        self.index = index
        self.policy_name = policy
        self.depth = depth
        self.name = f"agent:{policy}" + ("" if with_floor else f":{NO_FLOOR}")
        config = AgentConfig(k=depth, **{"models_dir": index.config.models_dir, **agent_overrides})
        self.config = replace(config, floor=replace(config.floor, enabled=config.floor.enabled and with_floor))
        self.agent = SearchAgent.with_policy(index, policy, self.config)

    def run(self, question: str, unit: Unit = "docs") -> SystemOutput:
        from sieve.core.errors import BackendError

        t0 = time.perf_counter()
        # Scored by document, the agent is asked for ``depth`` documents (its best chunk of each);
        # scored by chunk, for its ``depth`` best chunks, as a user gets them.
        trace = self.agent.run(question, group_by_doc=unit == "docs")
        wall_ms = (time.perf_counter() - t0) * 1000
        if trace.stop_reason == "backend_error":
            raise BackendError(f"{self.name}: {trace.meta.get('error') or 'the backend failed'}")
        counts: dict[str, int] = {}
        for call in trace.tool_calls:
            counts[call.name] = counts.get(call.name, 0) + 1
        # Evidence carries text, not token counts or offsets: look the chunks up once.
        got = {c.chunk_id: c for c in self.index.get_chunks(trace.returned_chunk_ids)} if trace.returned else {}
        if unit == "chunks":
            chunks_ = [got[e.chunk_id] for e in trace.returned if e.chunk_id in got][: self.depth]
            return _chunk_output(
                chunks_,
                [e.score for e in trace.returned if e.chunk_id in got][: self.depth],
                wall_ms,
                seen_doc_ids=list(dict.fromkeys(trace.seen_doc_ids)),
                tool_call_counts=counts,
                answer=trace.answer or "",
                trace=trace.to_dict(),
            )
        n_tok = {cid: c.n_tokens for cid, c in got.items()}
        docs, chunks, scores, toks = _first_per_doc(
            [(e.chunk_id, e.doc_id, e.score, n_tok.get(e.chunk_id, 0)) for e in trace.returned]
        )
        return SystemOutput(
            doc_ids=docs[: self.depth],
            chunk_ids=chunks[: self.depth],
            scores=scores[: self.depth],
            chunk_tokens=toks[: self.depth],
            wall_ms=wall_ms,
            seen_doc_ids=list(dict.fromkeys(trace.seen_doc_ids)),
            tool_call_counts=counts,
            answer=trace.answer or "",
            trace=trace.to_dict(),
        )


def systems_help() -> str:
    """``"dense, bm25, hybrid, agent[:heuristic|learned|openai|local[:nofloor]]"``: the system names the
    registries allow now (every retrieval mode, the agent with every policy), for a help text."""
    return f"{', '.join(BASELINES)}, agent[:{'|'.join(AGENT_POLICIES)}[:{NO_FLOOR}]]"


def parse_systems(spec: str) -> list[str]:
    """Split and validate ``"dense,bm25,hybrid,agent:heuristic"``; ``agent`` alone means Sieve's default policy.

    ``agent:<policy>:nofloor`` is the policy's own ranking, without the floor (see :mod:`sieve.agent.ranking`).

    Example:
        >>> parse_systems("bm25, agent, agent:heuristic:nofloor")
        ['bm25', 'agent:learned', 'agent:heuristic:nofloor']
    """
    out: list[str] = []
    for raw in spec.split(","):
        name = raw.strip()
        if not name:
            continue
        if name == "agent":
            name = f"agent:{DEFAULT_POLICY}"
        base, _, rest = name.partition(":")
        policy, _, variant = rest.partition(":")
        valid = name in BASELINES or (base == "agent" and policy in AGENT_POLICIES and variant in ("", NO_FLOOR))
        if not valid:
            raise InvalidInput(f"Expected systems from {systems_help()}, got {name!r}")
        if name not in out:
            out.append(name)
    if not out:
        raise InvalidInput(f"Expected at least one system, got {spec!r}")
    return out


def make_system(spec: str, index: CorpusIndex, depth: int, **agent_overrides: Any) -> System:
    """A system from one validated spec string (see :func:`parse_systems`)."""
    (name,) = parse_systems(spec)
    if name in BASELINES:
        return RetrievalSystem(index, name, depth)
    _, policy, variant = (name.split(":") + [""])[:3]
    return AgentSystem(index, policy, depth, with_floor=variant != NO_FLOOR, **agent_overrides)


__all__ = [
    "AGENT_POLICIES",
    "AgentSystem",
    "BASELINES",
    "NO_FLOOR",
    "RetrievalSystem",
    "System",
    "SystemOutput",
    "Unit",
    "make_system",
    "parse_systems",
    "systems_help",
]
