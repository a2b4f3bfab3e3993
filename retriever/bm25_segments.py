"""BM25 in segments: one immutable segment per index run, statistics recomputed over all of them.

A full rebuild of BM25 streams every chunk back from Chroma (~40 minutes at 1M chunks). Instead
each write run adds one *segment* (the term frequencies of the chunks it wrote) and marks the rows
of the chunks it replaced or deleted as dead; readers load a *manifest*, the list of complete
segments, which the writer replaces atomically once the run is over. So a reader always serves the
last complete set of segments, and adding 1,000 chunks costs 1,000 chunks of work plus a
recomputation of the global statistics from the segments' stored counts.

How scores stay those of a full rebuild (:class:`~sieve.retriever.bm25.SparseBM25` over the live
chunks, in segment order):

* the term ids are **global**: a segment records only the terms it added to the vocabulary (in id
  order) and its columns use global ids, so the vocabulary is the concatenation of the segments' new
  terms and never needs rewriting;
* the statistics are recomputed from per-segment integers on every load: ``N`` (live rows), the
  total length (an exact integer sum), and each term's document frequency as the sum of the
  segments' live document frequencies (stored per segment; a segment with dead rows stores them
  recounted over its live rows). IDF follows rank-bm25 over the terms with a live document (what
  a rebuild's vocabulary holds), its negative-value floor from an exactly summed mean (``fsum``),
  so neither the order of terms nor the split into segments changes a bit of any score;
* dead rows score 0 and are masked out of every result. Only ties between equal scores can order
  differently from a rebuild (a rebuild orders rows as Chroma returns them).

Segments are merged by :meth:`SegmentedBM25.merged` (the newest ones, when there are more than
:data:`MAX_SEGMENTS`, at the end of a write; all of them with ``sieve index --optimize``, which also
drops dead rows and terms no live chunk holds).
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
import uuid
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from sieve.retriever.bm25 import STOPWORDS, term_counts, top_k_of

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from sieve.retriever.bm25 import BM25Builder

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
SEGMENTS = "segments"
FORMAT = 3
MAX_SEGMENTS = 8  # more after a write: the newest ones are merged into one


@dataclass
class Segment:
    """One run's chunks: term frequencies over global term ids, lengths, and which rows are still live."""

    name: str
    ids: list[str]
    tf: sp.csc_matrix  # (rows, terms known when it was written), float32 counts
    doc_len: np.ndarray  # (rows,) int64 token counts
    new_terms: list[str]  # the terms this segment added to the global vocabulary, in id order
    live: np.ndarray | None = None  # (rows,) bool; None: every row is live
    live_file: str | None = None  # where ``live`` is saved
    _df: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_terms(self) -> int:
        return self.tf.shape[1]

    @property
    def n_live(self) -> int:
        return len(self.ids) if self.live is None else int(self.live.sum())

    def df(self) -> np.ndarray:
        """Live document frequency of each term id below :attr:`n_terms` (computed once per live mask)."""
        if self._df is None:
            df = np.diff(self.tf.indptr).astype(np.int64)
            if self.live is not None:
                # Subtract the dead rows' postings, found by position: no per-posting column array.
                dead_at = np.flatnonzero(~self.live[self.tf.indices])
                cols = np.searchsorted(self.tf.indptr, dead_at, side="right") - 1
                df -= np.bincount(cols, minlength=self.n_terms)
            self._df = df
        return self._df

    def live_len(self) -> int:
        return int(self.doc_len.sum() if self.live is None else self.doc_len[self.live].sum())


def segment_from_builder(builder: BM25Builder, vocab: dict[str, int]) -> Segment:
    """A segment of the builder's documents, its columns mapped to global ids (``vocab`` is extended in place).

    The builder's arrays are handed over (:meth:`BM25Builder.take`, no copies), so a run's postings
    exist at most twice while the column-ordered matrix is built, as in a rebuild.
    """
    n_before = len(vocab)
    to_global = np.fromiter(
        (vocab.setdefault(t, len(vocab)) for t in builder.vocab), dtype=np.int32, count=len(builder.vocab)
    )
    new_terms = list(vocab)[n_before:] if len(vocab) > n_before else []
    ids, local, counts, indptr, lens = builder.take()
    tf = sp.csr_matrix((counts, to_global[local] if len(local) else local, indptr), shape=(len(ids), len(vocab)))
    del local
    return Segment(
        name=uuid.uuid4().hex[:12], ids=ids, tf=tf.tocsc(), doc_len=lens.astype(np.int64), new_terms=new_terms
    )


@dataclass
class SegmentedBM25:
    """BM25Okapi over the live rows of several segments, with the query API of :class:`SparseBM25`.

    ``row_ids`` lists every row, dead ones included, in segment order (what :meth:`scores` indexes);
    ``ids`` and ``len()`` the live ones only. Build with :meth:`from_segments`; persist with
    :meth:`save` / :meth:`load`.
    """

    segments: list[Segment]
    vocab: dict[str, int]
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25
    row_ids: list[str] = field(default_factory=list, repr=False)  # every row, dead ones included
    idf: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    norm: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    df: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    live: np.ndarray | None = field(default=None, repr=False)
    n_live: int = 0
    _offsets: list[int] = field(default_factory=list, repr=False)
    _pos: dict[str, int] | None = field(default=None, repr=False)
    _live_ids: list[str] | None = field(default=None, repr=False)

    @property
    def ids(self) -> list[str]:
        """The live chunk ids, in row order (equal to :attr:`row_ids` while no row is dead)."""
        if self.live is None:
            return self.row_ids
        if self._live_ids is None:
            self._live_ids = [cid for cid, ok in zip(self.row_ids, self.live.tolist()) if ok]
        return self._live_ids

    @classmethod
    def from_segments(
        cls,
        segments: list[Segment],
        vocab: dict[str, int] | None = None,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
    ) -> SegmentedBM25:
        """The index over ``segments``; ``vocab`` defaults to the concatenation of their new terms."""
        if vocab is None:
            vocab = {}
            for seg in segments:
                for t in seg.new_terms:
                    vocab[t] = len(vocab)
        index = cls(segments=segments, vocab=vocab, k1=k1, b=b, epsilon=epsilon)
        index._finish()
        return index

    def _finish(self) -> None:
        """Recompute the global statistics from the segments (integers, summed exactly)."""
        n_terms = len(self.vocab)
        df = np.zeros(n_terms, dtype=np.int64)
        total_len, any_dead = 0, False
        offsets: list[int] = []
        ids: list[str] = []
        lives: list[np.ndarray] = []
        for seg in self.segments:
            offsets.append(len(ids))
            ids.extend(seg.ids)
            df[: seg.n_terms] += seg.df()
            total_len += seg.live_len()
            any_dead |= seg.live is not None
            lives.append(np.ones(len(seg.ids), dtype=bool) if seg.live is None else seg.live)
        n = sum(seg.n_live for seg in self.segments)
        self.row_ids, self._offsets, self.df, self.n_live, self._pos, self._live_ids = ids, offsets, df, n, None, None
        self.live = np.concatenate(lives) if any_dead else None
        avgdl = max(total_len / n, 1.0) if n else 1.0
        present = df > 0
        idf = np.zeros(n_terms, dtype=np.float64)
        idf[present] = np.log(n - df[present] + 0.5) - np.log(df[present] + 0.5)
        if present.any():  # rank-bm25's floor, its mean summed exactly: the same bits in any term order
            floor = self.epsilon * (math.fsum(idf[present].tolist()) / int(present.sum()))
            idf[present & (idf < 0)] = floor
        self.idf = idf
        doc_len = np.concatenate([s.doc_len for s in self.segments]) if self.segments else np.zeros(0, np.int64)
        self.norm = self.k1 * (1 - self.b + self.b * doc_len.astype(np.float64) / avgdl)

    # -- the query API of SparseBM25 -------------------------------------------------------------
    def __len__(self) -> int:
        return self.n_live

    @property
    def nnz(self) -> int:
        return sum(int(s.tf.nnz) for s in self.segments)

    def doc_share(self, term: str) -> float:
        """Share of the live chunks that hold ``term`` (a stop word counts as everywhere, 1.0)."""
        t = term.lower()
        if t in STOPWORDS:
            return 1.0
        j = self.vocab.get(t)
        if j is None or not self.n_live:
            return 0.0
        return float(self.df[j]) / self.n_live

    def scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every row, in ``row_ids`` order (dead rows 0; repeated query terms count again)."""
        out = np.zeros(len(self.row_ids), dtype=np.float64)
        counts = term_counts(self.vocab, query_tokens)
        k1p1 = self.k1 + 1
        for j, mult in counts.items():
            if not self.df[j]:
                continue
            for seg, off in zip(self.segments, self._offsets):
                if j >= seg.n_terms:
                    continue
                lo, hi = seg.tf.indptr[j], seg.tf.indptr[j + 1]
                rows = seg.tf.indices[lo:hi] + off
                tf = seg.tf.data[lo:hi].astype(np.float64)
                out[rows] += mult * (self.idf[j] * (tf * k1p1) / (tf + self.norm[rows]))
        if self.live is not None:
            out[~self.live] = 0.0
        return out

    def top_k(
        self, query_tokens: Sequence[str], k: int, *, allowed: np.ndarray | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` best live (id, score) pairs with a positive score; ``allowed`` masks rows."""
        return top_k_of(self.scores(query_tokens), self.row_ids, k, allowed)

    def ids_with_all(self, tokens: Sequence[str]) -> list[str]:
        """Ids of the live rows that hold every one of ``tokens``, in row order."""
        out: list[str] = []
        found = [self.vocab.get(t) for t in dict.fromkeys(tokens)]
        if not found or any(j is None for j in found):
            return []
        terms = [j for j in found if j is not None]
        for seg, off in zip(self.segments, self._offsets):
            rows: np.ndarray | None = None
            for j in terms:
                col = seg.tf.indices[seg.tf.indptr[j] : seg.tf.indptr[j + 1]] if j < seg.n_terms else np.zeros(0, int)
                rows = col if rows is None else np.intersect1d(rows, col, assume_unique=True)
                if not len(rows):
                    break
            if rows is not None and len(rows):
                out.extend(self.row_ids[off + i] for i in np.sort(rows) if seg.live is None or seg.live[i])
        return out

    def mask(self, ids: Collection[str], *, exclude: bool = False) -> np.ndarray:
        """A mask over ``row_ids`` of the live rows with these ids (or of every row but them, with ``exclude``)."""
        if self._pos is None:  # live rows only: a replaced chunk's dead row shares its id
            live = self.live
            self._pos = {cid: i for i, cid in enumerate(self.row_ids) if live is None or live[i]}
        m = np.zeros(len(self.row_ids), dtype=bool)
        m[[self._pos[i] for i in ids if i in self._pos]] = True
        return ~m if exclude else m

    # -- changes: each returns a new index and leaves this one to the readers that hold it ---------
    def rows_of_docs(self, doc_ids: Collection[str]) -> list[int]:
        """Live rows whose chunk id belongs to one of ``doc_ids`` (chunk ids are ``doc#position``)."""
        docs = set(doc_ids)
        live = self.live
        return [i for i, cid in enumerate(self.row_ids) if cid.rpartition("#")[0] in docs and (live is None or live[i])]

    def rows_of_ids(self, chunk_ids: Collection[str]) -> list[int]:
        wanted = set(chunk_ids)
        live = self.live
        return [i for i, cid in enumerate(self.row_ids) if cid in wanted and (live is None or live[i])]

    def changed(self, added: BM25Builder | None, dead_rows: Sequence[int]) -> SegmentedBM25:
        """This index with ``dead_rows`` marked dead and ``added`` as a new segment, merged down to
        :data:`MAX_SEGMENTS`."""
        vocab = dict(self.vocab)  # readers of this index keep its vocabulary as it is
        segments = [_with_dead(seg, off, dead_rows) for seg, off in zip(self.segments, self._offsets)]
        if added is not None and added.ids:
            segments.append(segment_from_builder(added, vocab))
        if len(segments) > MAX_SEGMENTS:
            tail = len(segments) - MAX_SEGMENTS + 1
            segments = segments[:-tail] + [_merge(segments[-tail:], len(vocab))]
        return SegmentedBM25.from_segments(segments, vocab, k1=self.k1, b=self.b, epsilon=self.epsilon)

    def merged(self) -> SegmentedBM25:
        """One segment of the live rows only, over the terms they hold (what ``sieve index --optimize`` saves)."""
        whole = _merge(self.segments, len(self.vocab))
        keep = np.flatnonzero(whole.df() > 0)
        terms = list(self.vocab)
        seg = Segment(
            name=whole.name,
            ids=whole.ids,
            tf=whole.tf[:, keep].tocsc(),
            doc_len=whole.doc_len,
            new_terms=[terms[j] for j in keep],
        )
        return SegmentedBM25.from_segments([seg], k1=self.k1, b=self.b, epsilon=self.epsilon)

    # -- persistence ---------------------------------------------------------------------------------
    def save(self, folder: Path, *, fingerprint: str) -> None:
        """Write the new segments, then the manifest (atomically: the commit point), then remove
        the files no manifest names any more."""
        seg_dir = folder / SEGMENTS
        seg_dir.mkdir(parents=True, exist_ok=True)
        entries = []
        for seg in self.segments:
            path = seg_dir / f"{seg.name}.npz"
            if not path.exists():
                _atomic(
                    path,
                    lambda f, s=seg: np.savez(
                        f,
                        data=s.tf.data,
                        indices=s.tf.indices,
                        indptr=s.tf.indptr,
                        shape=np.asarray(s.tf.shape, dtype=np.int64),
                        doc_len=s.doc_len,
                        ids=_json_bytes(s.ids),
                        new_terms=_json_bytes(s.new_terms),
                    ),
                )
            if seg.live is not None and seg.live_file is None:
                seg.live_file = f"{seg.name}.live-{uuid.uuid4().hex[:8]}.npy"
                _atomic(seg_dir / seg.live_file, lambda f, s=seg: np.save(f, s.live))
            entries.append({"name": seg.name, "live": seg.live_file})
        manifest = {
            "format": FORMAT,
            "fingerprint": fingerprint,
            "k1": self.k1,
            "b": self.b,
            "epsilon": self.epsilon,
            "segments": entries,
        }
        _atomic(folder / MANIFEST, lambda f: f.write(json.dumps(manifest).encode()))
        named = {f"{e['name']}.npz" for e in entries} | {e["live"] for e in entries if e["live"]}
        for p in seg_dir.iterdir():
            if p.name not in named and not p.name.endswith(".tmp"):
                p.unlink(missing_ok=True)
        (folder / "bm25.npz").unlink(missing_ok=True)  # a single-file index of an older Sieve

    @classmethod
    def load(cls, folder: Path, reuse: SegmentedBM25 | None = None) -> tuple[SegmentedBM25, str] | None:
        """The saved index and its fingerprint, or None when absent or unreadable; segments already
        held by ``reuse`` are taken from it, not read again."""
        try:
            manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
            if manifest.get("format") != FORMAT:
                return None
            held = {s.name: s for s in (reuse.segments if reuse is not None else [])}
            segments = []
            for entry in manifest["segments"]:
                seg = held.get(entry["name"])
                if seg is None:
                    seg = _load_segment(folder / SEGMENTS / f"{entry['name']}.npz", entry["name"])
                if seg.live_file != entry["live"]:
                    live = np.load(folder / SEGMENTS / entry["live"]) if entry["live"] else None
                    seg = Segment(seg.name, seg.ids, seg.tf, seg.doc_len, seg.new_terms, live, entry["live"])
                segments.append(seg)
        except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, EOFError) as exc:
            logger.debug("BM25 manifest in %s unreadable: %s", folder, exc)
            return None
        index = cls.from_segments(segments, k1=manifest["k1"], b=manifest["b"], epsilon=manifest["epsilon"])
        return index, str(manifest["fingerprint"])


def read_fingerprint(folder: Path) -> str | None:
    """The fingerprint (store generation) of the saved manifest, or None when there is none readable."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        return str(manifest["fingerprint"]) if manifest.get("format") == FORMAT else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _with_dead(seg: Segment, offset: int, dead_rows: Sequence[int]) -> Segment:
    local = [r - offset for r in dead_rows if offset <= r < offset + len(seg.ids)]
    if not local:
        return seg
    live = np.ones(len(seg.ids), dtype=bool) if seg.live is None else seg.live.copy()
    live[local] = False
    return Segment(seg.name, seg.ids, seg.tf, seg.doc_len, seg.new_terms, live, None)


def _merge(segments: Sequence[Segment], n_terms: int) -> Segment:
    """One segment of the live rows of consecutive ``segments`` (their new terms concatenated)."""
    parts: list[sp.csr_matrix] = []
    ids: list[str] = []
    lens: list[np.ndarray] = []
    new_terms: list[str] = []
    for seg in segments:
        csr = seg.tf.tocsr()
        csr.resize((csr.shape[0], n_terms))
        keep = np.arange(len(seg.ids)) if seg.live is None else np.flatnonzero(seg.live)
        parts.append(csr[keep])
        ids.extend(seg.ids[i] for i in keep)
        lens.append(seg.doc_len[keep])
        new_terms.extend(seg.new_terms)
    tf = sp.vstack(parts, format="csr") if parts else sp.csr_matrix((0, n_terms), dtype=np.float32)
    return Segment(
        name=uuid.uuid4().hex[:12],
        ids=ids,
        tf=tf.astype(np.float32).tocsc(),
        doc_len=np.concatenate(lens) if lens else np.zeros(0, np.int64),
        new_terms=new_terms,
    )


def _load_segment(path: Path, name: str) -> Segment:
    with np.load(path, allow_pickle=False) as z:
        shape = tuple(int(x) for x in z["shape"])
        tf = sp.csc_matrix((z["data"], z["indices"], z["indptr"]), shape=shape)
        ids = json.loads(z["ids"].tobytes())
        new_terms = json.loads(z["new_terms"].tobytes())
        doc_len = z["doc_len"]
    if len(ids) != shape[0] or len(doc_len) != shape[0]:
        raise ValueError(f"Expected {shape[0]} ids and lengths in {path}, got {len(ids)} and {len(doc_len)}")
    return Segment(name=name, ids=ids, tf=tf, doc_len=doc_len, new_terms=new_terms)


def _atomic(path: Path, write: object) -> None:
    """Write through a temp file renamed into place: a reader sees the old file or the new, never a mix."""
    fd, tmp = tempfile.mkstemp(prefix=f"{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)  # type: ignore[operator]
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _json_bytes(value: object) -> np.ndarray:
    return np.frombuffer(json.dumps(value, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)


__all__ = ["MAX_SEGMENTS", "Segment", "SegmentedBM25", "read_fingerprint", "segment_from_builder"]
