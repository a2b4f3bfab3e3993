"""What the learned policy sees: feature vectors of chunks, candidate actions and the episode state.

Every number here is a function of the episode as the harness shows it — the question, the
chunks shown (their cosine with the question, the searches that returned them and at which
rank, their titles and text), the queries already issued and the budget — never of gold labels.
Features are small, scale-free and corpus-agnostic on purpose (ranks, cosines, shares, flags;
no raw embeddings), so a policy trained on one corpus transfers to another.

``CHUNK_FEATURES`` describe a chunk *during* the episode, for the network to choose the next search
or read; they are not the closing ranker's features (:mod:`sieve.agent.ranking.features`), which
describe each chunk of the pool once the episode is over, against the question's own hybrid
search, to rank what is returned.

Candidate actions are the searches the policy may issue next and the chunks it may read:

* ``question``: the question itself; ``entity``: a name the question mentions;
* ``mention``: a name mentioned by a chunk found so far (the bridge of a multi-hop question);
* ``bridge``: that name plus the question's remaining content words (a bridge substitution);
* ``title``: the title of a chunk found so far (finds pages that mention it: reverse bridges);
* ``read``: the neighbours of a chunk that looks cut off (a longer document);
* ``feedback``: the question again with the words that set the best chunks apart
  (:mod:`~sieve.agent.policies.feedback`), offered once the question has been searched, taken at
  most once per episode. The network reads it in the ``question`` column of the kind one-hot (it
  is the question, reworded in the corpus's terms), so checkpoints keep their inputs. The shipped
  one, trained before it existed, takes it mostly on conversations (66 of locomo's 150 tuning
  questions) and almost never on multi-hop questions or claims.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, field
from threading import Lock
from typing import TYPE_CHECKING

import numpy as np

from sieve.agent.config import HeuristicConfig
from sieve.agent.policies.entities import (
    mentions,
    name_match,
    normalise,
    query_problem,
    question_names,
    searchable,
    words_match,
)
from sieve.agent.policies.feedback import feedback_query
from sieve.agent.policies.heuristic import BridgeHit, Features, NameHit, score_features

if TYPE_CHECKING:
    from collections.abc import Callable

    from sieve.agent.episode import Episode
    from sieve.agent.policies.entities import Mention
    from sieve.pruning.context import ChunkEntry

KINDS = ("question", "entity", "mention", "bridge", "title", "read")
# Candidate kinds the network reads in another kind's column of the one-hot.
_READ_AS = {"feedback": "question"}
CHUNK_FEATURES = (
    "cos_q",
    "cos_gap",
    "cos_rank",
    "q_rank",
    "in_q_search",
    "best_rank",
    "n_hits",
    "tool_score",
    "hscore",
    "hscore_gap",
    "hscore_rank",
    "by_question",
    "by_entity",
    "by_bridge",
    "by_other",
    "name_match",
    "parent_cos",
    "parent_hscore",
    "title_in_question",
    "title_entity_match",
    "mentioned_by",
    "mentioned_by_n",
    "has_q_entity",
    "q_overlap",
    "turn_found",
    "lead_chunk",
)
CANDIDATE_FEATURES = (
    *(f"kind_{k}" for k in KINDS),
    "parent_cos",
    "parent_hscore",
    "parent_rank",
    "parent_q_rank",
    "order_prior",
    "relation",
    "numeric",
    "n_words",
    "have_page",
    "frequency",
    "entity_match",
    "q_overlap",
    "parent_by_bridge",
    "parent_title_in_question",
    "early_mention",
    "in_question",
)
STATE_FEATURES = (
    "turn",
    "n_searches",
    "budget_used",
    "n_active",
    "added_top",
    "new_last",
    "max_cos",
    "n_candidates",
    "first_turn",
    "last_turn",
    "n_entities",
    "top_cos",
    "empty_last",
    "hscore_top",
)
# Words of a question that carry no content (kept out of overlap features and bridge queries).
_Q_STOP = frozenset(
    """a an the of in on at to for from by with and or but is are was were be been being which who whom
whose what when where why how that this these those did do does has have had it its as than both same also either
neither not other another more most less least many much any some there their they them he she his her him""".split()
)
_NUMERIC = re.compile(r"^[\d\s.,/-]+$")
# A chunk that stops mid-sentence was cut by the chunker: its document continues in a next chunk.
_SENTENCE_END = (".", "!", "?", '"', "”", ")", "'")


def content_words(text: str) -> list[str]:
    """Lower-cased words of ``text`` that carry content (no stop words, at least 3 characters).

    Example:
        >>> content_words("Who is the father of the director of film Polish Wedding?")
        ['father', 'director', 'film', 'polish', 'wedding']
    """
    return [w for w in normalise(text).split() if len(w) > 2 and w not in _Q_STOP]


@dataclass(frozen=True)
class Candidate:
    """One action the policy may take: a search query (or a chunk to read) and where it came from."""

    kind: str
    text: str  # the query, or the handle to read
    name: str = ""  # the entity searched for ("" for the question)
    parent: str | None = None  # chunk id whose text suggested it
    order: int = 0  # mention order in the parent's text
    relation: bool = False  # a question word right before the mention ("directed by X" for "director")
    early: bool = False  # mentioned in the parent's first sentence


@dataclass
class ChunkRecord:
    """What the episode knows about one chunk shown."""

    entry: ChunkEntry
    turn: int
    hits: list[tuple[str, int]] = field(default_factory=list)  # (candidate kind, rank in that search)
    names: list[float] = field(default_factory=list)  # title match of the name searched, per search
    parents: list[str] = field(default_factory=list)  # chunk ids whose mentions led here
    heuristic: Features | None = None


@dataclass(frozen=True)
class ChunkText:
    """Derived text of one chunk: normalised title, padded normalised title + text, title words, mentions."""

    title: str
    text: str  # " title words text words " (space-padded, for whole-word containment tests)
    title_words: frozenset[str]
    mentions: list[Mention]


class TextCache:
    """Per-chunk derived text (normalised text, mentions), shared by the episodes of one policy (LRU)."""

    def __init__(self, max_size: int = 20_000) -> None:
        self.max_size = max_size
        self._items: OrderedDict[str, ChunkText] = OrderedDict()
        self._lock = Lock()

    def get(self, entry: ChunkEntry) -> ChunkText:
        """The :class:`ChunkText` of a chunk."""
        key = entry.chunk_id
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit
        c = entry.chunk
        title = normalise(c.title)
        value = ChunkText(title, f" {title} {normalise(c.text)} ", frozenset(title.split()), mentions(c.text))
        with self._lock:
            self._items[key] = value
            while len(self._items) > self.max_size:
                self._items.popitem(last=False)
        return value


class EpisodeFeatures:
    """Bookkeeping of one episode and the feature vectors built from it.

    ``absorb`` records what the last turn's calls showed; ``chunk_matrix``, ``candidates`` and
    ``state_vector`` build the inputs of the policy network for the next decisions.
    """

    def __init__(
        self,
        question: str,
        texts: TextCache,
        *,
        k: int,
        max_turns: int,
        seed_chunks: int,
        mentions_per_chunk: int,
        max_candidates: int,
    ) -> None:
        self.question = question
        self.q_norm = f" {normalise(question)} "
        self.q_words = set(content_words(question))
        self.q_entities = [m.text for m in mentions(question) if normalise(m.text) != normalise(question)]
        self.share: Callable[[str], float] | None = None  # the corpus's term shares (set by the policy per episode)
        self.chunks: int | None = None  # the chunks those shares are of (set with them)
        self._q_names: list[str] | None = None
        self.q_entity_words = [frozenset(normalise(n).split()) for n in self.q_entities]
        self.texts = texts
        self.k = k
        self.max_turns = max_turns
        self.seed_chunks = seed_chunks
        self.mentions_per_chunk = mentions_per_chunk
        self.max_candidates = max_candidates
        self.h = HeuristicConfig()
        self.records: dict[str, ChunkRecord] = {}
        self.hscores: dict[str, float] = {}
        self.queried: set[str] = set()
        self.read_done: set[str] = set()
        self.pending: dict[str, Candidate] = {}
        self.n_searches = 0
        self.fed_back = False  # the feedback search ran (once per episode)
        self.added_top = 0
        self.new_last = 0
        self.empty_last = 0.0

    # -- bookkeeping ----------------------------------------------------------------------------
    def issue(self, call_id: str, cand: Candidate) -> None:
        """Remember that ``cand`` runs under ``call_id`` this turn."""
        self.pending[call_id] = cand
        if cand.kind == "read":
            self.read_done.add(cand.text)
        else:
            self.fed_back |= cand.kind == "feedback"
            self.queried.add(normalise(cand.text))
            self.n_searches += 1

    def absorb(self, episode: Episode) -> None:
        """Record the chunks the last turn's calls showed and re-score the pool."""
        before = set(self.top_ids(self.k))
        new = 0
        empty = 0
        searched = 0
        for o in episode.last_outcomes:
            cand = self.pending.get(o.call.call_id)
            if cand is None:
                continue
            searched += 1
            empty += not o.handles
            for rank, handle in enumerate(o.handles):
                entry = episode.context.chunks[handle]
                rec = self.records.get(entry.chunk_id)
                if rec is None:
                    rec = self.records[entry.chunk_id] = ChunkRecord(
                        entry=entry, turn=episode.turn, heuristic=Features(cos=entry.relevance)
                    )
                    new += 1
                rec.hits.append((cand.kind, rank))
                match = name_match(cand.name, entry.chunk.title) if cand.name else 0.0
                rec.names.append(match)
                f = rec.heuristic or Features(cos=entry.relevance)
                if cand.kind == "question":
                    f.q_rank = rank if f.q_rank is None else min(f.q_rank, rank)
                elif cand.kind == "entity":
                    f.named.append(NameHit(match, rank))
                elif cand.parent is not None and cand.kind in ("mention", "bridge"):
                    f.bridges.append(BridgeHit(cand.parent, match, rank, order_prior(cand, self.h)))
                    rec.parents.append(cand.parent)
        self.pending = {}
        # Parents are always recorded before their children, so one pass in insertion order suffices.
        for cid, rec in self.records.items():
            self.hscores[cid] = score_features(rec.heuristic, self.hscores, self.h)  # type: ignore[arg-type]
        self.added_top = len(set(self.top_ids(self.k)) - before)
        self.new_last = new
        self.empty_last = empty / searched if searched else 0.0

    def top_ids(self, n: int) -> list[str]:
        return [cid for cid, _ in sorted(self.hscores.items(), key=lambda kv: -kv[1])[:n]]

    # -- chunks ---------------------------------------------------------------------------------
    def chunk_matrix(self, entries: list[ChunkEntry]) -> np.ndarray:
        """One row of :data:`CHUNK_FEATURES` per entry."""
        if not entries:
            return np.zeros((0, len(CHUNK_FEATURES)), dtype=np.float32)
        cos = np.array([e.relevance for e in entries], dtype=np.float64)
        hs = np.array([self.hscores.get(e.chunk_id, 0.0) for e in entries], dtype=np.float64)
        cos_rank = _ranks(-cos)
        hs_rank = _ranks(-hs)
        texts = [self.texts.get(e) for e in entries]
        q_entities = [normalise(n) for n in self.q_entities]
        rows = []
        for i, e in enumerate(entries):
            rec = self.records.get(e.chunk_id)
            title, text = texts[i].title, texts[i].text
            hits = rec.hits if rec else []
            q_ranks = [r for kind, r in hits if kind == "question"]
            kinds = {kind for kind, _ in hits}
            parents = [self.records[p] for p in (rec.parents if rec else []) if p in self.records]
            # Chunks whose text names this chunk's title: this chunk is likely the page they point to.
            padded = f" {title} "
            by = [hs[j] for j in range(len(entries)) if j != i and padded in texts[j].text] if len(title) >= 4 else []
            rows.append(
                [
                    e.relevance,
                    e.relevance - cos.max(),
                    1.0 / (1.0 + cos_rank[i]),
                    1.0 / (1.0 + min(q_ranks) / 4.0) if q_ranks else 0.0,
                    float(bool(q_ranks)),
                    1.0 / (1.0 + min((r for _, r in hits), default=20)),
                    np.log1p(len(hits)),
                    e.score,
                    hs[i],
                    hs[i] - hs.max(),
                    1.0 / (1.0 + hs_rank[i]),
                    float("question" in kinds),
                    float("entity" in kinds),
                    float(bool(kinds & {"mention", "bridge"})),
                    float(bool(kinds & {"title", "read", "feedback"})),
                    max(rec.names, default=0.0) if rec else 0.0,
                    max((p.entry.relevance for p in parents), default=0.0),
                    max((self.hscores.get(p.entry.chunk_id, 0.0) for p in parents), default=0.0),
                    float(len(title) >= 4 and f" {title} " in self.q_norm),
                    max((words_match(n, texts[i].title_words) for n in self.q_entity_words), default=0.0),
                    max(by, default=0.0),
                    np.log1p(len(by)),
                    sum(f" {n} " in text for n in q_entities) / max(1, len(q_entities)),
                    _overlap(self.q_words, text),
                    (rec.turn if rec else 0) / max(1, self.max_turns),
                    float(e.chunk.position == 0),
                ]
            )
        return np.asarray(rows, dtype=np.float32)

    # -- candidates -----------------------------------------------------------------------------
    def _question_names(self) -> list[str]:
        """The question's names worth a search on this corpus (the term shares are fixed for an episode: once)."""
        if self._q_names is None:
            self._q_names = question_names(self.question, self.share)
        return self._q_names

    def candidates(self, active: list[ChunkEntry]) -> list[Candidate]:
        """The searches (and reads) the policy may issue next, best prior first, at most ``max_candidates``."""
        out: dict[str, tuple[float, Candidate]] = {}

        def add(prior: float, cand: Candidate) -> None:
            key = normalise(cand.text) if cand.kind != "read" else f"read:{cand.text}"
            if not key or key in self.queried or (cand.kind == "read" and cand.text in self.read_done):
                return
            if key not in out or out[key][0] < prior:
                out[key] = (prior, cand)

        add(10.0, Candidate("question", self.question))
        for i, name in enumerate(self._question_names()):
            add(9.0 - 0.1 * i, Candidate("entity", name, name))
        seeds = sorted(active, key=lambda e: -self.hscores.get(e.chunk_id, 0.0))[: self.seed_chunks]
        if seeds and not self.fed_back and normalise(self.question) in self.queried:
            query = feedback_query(self.question, [e.chunk for e in seeds], self.share)
            if query is not None:
                add(9.5, Candidate("feedback", query))
        for e in seeds:
            ct = self.texts.get(e)
            title, found = ct.title, ct.mentions
            parent_score = self.hscores.get(e.chunk_id, 0.0)
            cleaned = [c for c in (searchable(m, self.share, self.chunks) for m in found) if c is not None]
            fresh = _fresh_mentions(cleaned, title, self.q_norm)
            for order, m in enumerate(fresh[: self.mentions_per_chunk]):
                relation = any(
                    w.lower()[:5] in {q[:5] for q in self.q_words if len(q) > 3} for w in m.context.split()[-3:]
                )
                base = Candidate("mention", m.text, m.text, e.chunk_id, order, relation, m.start < 150)
                prior = parent_score * order_prior(base, self.h)
                add(prior, base)
                rest = [
                    w
                    for w in content_words(self.question)
                    if w not in set(title.split()) and w not in set(normalise(m.text).split())
                ][:4]
                if rest:
                    add(
                        prior * 0.9,
                        Candidate(
                            "bridge", f"{m.text} {' '.join(rest)}", m.text, e.chunk_id, order, relation, m.start < 150
                        ),
                    )
            if (
                len(title) >= 4
                and f" {title} " not in self.q_norm
                and query_problem(e.chunk.title, self.share, self.chunks, self.question) is None
            ):
                add(parent_score * 0.5, Candidate("title", e.chunk.title, e.chunk.title, e.chunk_id))
            if e.chunk.position > 0 or not e.chunk.text.rstrip().endswith(_SENTENCE_END):
                add(parent_score * 0.5, Candidate("read", e.handle, "", e.chunk_id))
        ranked = sorted(out.values(), key=lambda t: -t[0])[: self.max_candidates]
        return [c for _, c in ranked]

    def candidate_matrix(self, cands: list[Candidate], active: list[ChunkEntry]) -> np.ndarray:
        """One row of :data:`CANDIDATE_FEATURES` per candidate."""
        if not cands:
            return np.zeros((0, len(CANDIDATE_FEATURES)), dtype=np.float32)
        by_id = {e.chunk_id: e for e in active}
        order = [cid for cid in self.top_ids(len(self.hscores)) if cid in by_id]
        rank_of = {cid: r for r, cid in enumerate(order)}
        texts = [self.texts.get(e) for e in active]
        rows = []
        for c in cands:
            parent = self.records.get(c.parent) if c.parent else None
            name = normalise(c.name)
            words = frozenset(name.split())
            ptitle = self.texts.get(parent.entry).title if parent else ""
            q_ranks = [r for kind, r in (parent.hits if parent else []) if kind == "question"]
            kind = [float(_READ_AS.get(c.kind, c.kind) == k) for k in KINDS]
            rows.append(
                [
                    *kind,
                    parent.entry.relevance if parent else 0.0,
                    self.hscores.get(c.parent, 0.0) if c.parent else 0.0,
                    1.0 / (1.0 + rank_of[c.parent]) if c.parent in rank_of else 0.0,
                    1.0 / (1.0 + min(q_ranks) / 4.0) if q_ranks else 0.0,
                    order_prior(c, self.h) if c.parent else 1.0,
                    float(c.relation),
                    float(bool(_NUMERIC.match(c.name))) if c.name else 0.0,
                    len(c.text.split()) / 5.0,
                    max((words_match(words, t.title_words) for t in texts), default=0.0) if name else 0.0,
                    np.log1p(sum(f" {name} " in t.text for t in texts)) if name else 0.0,
                    max((words_match(words, n) for n in self.q_entity_words), default=0.0) if name else 0.0,
                    _overlap(self.q_words, f" {normalise(c.text)} "),
                    float(bool(parent and any(k in ("mention", "bridge") for k, _ in parent.hits))),
                    float(bool(parent and len(ptitle) >= 4 and f" {ptitle} " in self.q_norm)),
                    float(c.early),
                    float(bool(name) and f" {name} " in self.q_norm),
                ]
            )
        return np.asarray(rows, dtype=np.float32)

    # -- state ----------------------------------------------------------------------------------
    def state_vector(self, episode: Episode, active: list[ChunkEntry], n_candidates: int, used: int) -> np.ndarray:
        """The :data:`STATE_FEATURES` of the episode before a decision (``used``: context tokens in view)."""
        cos = sorted((e.relevance for e in active), reverse=True)
        used_share = used / max(1, episode.config.budget_tokens)
        top = self.top_ids(1)
        return np.asarray(
            [
                episode.turn / max(1, self.max_turns),
                self.n_searches / 10.0,
                used_share,
                len(active) / 50.0,
                self.added_top / max(1, self.k),
                self.new_last / 20.0,
                cos[0] if cos else 0.0,
                n_candidates / 40.0,
                float(episode.turn == 0),
                float(episode.turn >= self.max_turns - 1),
                len(self.q_entities) / 4.0,
                float(np.mean(cos[: self.k])) if cos else 0.0,
                self.empty_last,
                self.hscores.get(top[0], 0.0) if top else 0.0,
            ],
            dtype=np.float32,
        )


def order_prior(cand: Candidate, h: HeuristicConfig) -> float:
    """How likely a mentioned name is the bridge: earlier mentions, and names after a question word, more so."""
    prior = 1.0 / (1.0 + h.order_decay * cand.order)
    return min(1.0, prior * h.relation_boost) if cand.relation else prior


def _fresh_mentions(found: list[Mention], title: str, q_norm: str) -> list[Mention]:
    """Mentions worth searching: not the chunk's own title, not already in the question, de-duplicated."""
    out, seen = [], set()
    for m in found:
        key = normalise(m.text)
        if not key or key in seen or key == title or title.startswith(key) or f" {key} " in q_norm:
            continue
        seen.add(key)
        out.append(m)
    return out


def _overlap(words: set[str], text: str) -> float:
    """Share of ``words`` occurring in the (space-padded, normalised) ``text``."""
    if not words:
        return 0.0
    return sum(f" {w} " in text for w in words) / len(words)


def _ranks(values: np.ndarray) -> np.ndarray:
    """0-based rank of each value in ascending order (ties by position)."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.arange(len(values))
    return ranks


__all__ = [
    "CANDIDATE_FEATURES",
    "CHUNK_FEATURES",
    "KINDS",
    "STATE_FEATURES",
    "Candidate",
    "ChunkRecord",
    "ChunkText",
    "EpisodeFeatures",
    "TextCache",
    "content_words",
    "order_prior",
]
