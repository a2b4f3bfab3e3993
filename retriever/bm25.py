"""BM25 over chunk texts: a sparse inverted-index scorer that matches rank-bm25 exactly.

rank-bm25's ``BM25Okapi`` is the reference (it scores every document in Python for each query
term, ~O(N·|q|) per query, too slow at 100k chunks). :class:`SparseBM25` keeps an inverted
index (a CSC term-frequency matrix), so a query costs one column slice per query term.
``tests/retriever/test_bm25.py`` checks the scores are identical to rank-bm25.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
import zipfile
from array import array
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import scipy.sparse as sp

from sieve.core.defaults import MAX_DEPTH
from sieve.retriever.base import ScoredIdsRetriever
from sieve.retriever.types import passage_text

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Sequence

    from sieve.retriever.store_api import Store
    from sieve.retriever.types import Where

BM25_FILE = "bm25.npz"
_TOKEN_RE = re.compile(r"\w+", re.UNICODE)
# A short English stop list: BM25 IDF already down-weights these, but they dominate query
# length for natural-language questions and cost a column slice each.
STOPWORDS = frozenset(
    "a an and are as at be by for from has have he her his in is it its of on or she that the their "
    "they this to was were which who whom what when where why how with did does do".split()
)


def term_counts(vocab: dict[str, int], query_tokens: Sequence[str]) -> dict[int, int]:
    """Term id -> how often the query holds it (terms outside ``vocab`` dropped): a term repeated in the
    query counts again, as rank-bm25 scores it.

    Example:
        >>> term_counts({"paris": 0, "city": 1}, ["paris", "city", "paris", "zzz"])
        {0: 2, 1: 1}
    """
    counts: dict[int, int] = {}
    for t in query_tokens:
        j = vocab.get(t)
        if j is not None:
            counts[j] = counts.get(j, 0) + 1
    return counts


def rarity(share: float) -> float:
    """How much a word weighs by its share of the corpus's chunks (:meth:`SparseBM25.doc_share`):
    ``log(1 + 1/share)``, 0 for a word the corpus lacks. The agent's question cover and keyphrases
    weigh words with it, so "revenue" in a filing or "npm" in npm's docs counts for little.

    Example:
        >>> round(rarity(0.01), 2), round(rarity(0.5), 2), rarity(0.0)
        (4.62, 1.1, 0.0)
    """
    return math.log1p(1.0 / share) if share > 0 else 0.0


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens without stop words.

    Example:
        >>> tokenize("The Eiffel Tower, in Paris!")
        ['eiffel', 'tower', 'paris']
    """
    return [t for t in _TOKEN_RE.findall(text.lower()) if t not in STOPWORDS]


def passage_terms(title: str, text: str, heading_path: str = "") -> list[str]:
    """A chunk's terms as BM25 indexes them: :func:`tokenize` of its title, heading path and text
    (:func:`~sieve.retriever.types.passage_text`). The index and the agent's word counts (question
    cover, feedback words) read chunks through this one function, so both see the same words.

    Example:
        >>> passage_terms("Paris", "The capital of France.")
        ['paris', 'capital', 'france']
    """
    return tokenize(passage_text(title, text, heading_path))


class BM25Builder:
    """Accumulates documents one at a time into term-frequency arrays (no token lists kept).

    Memory is ~8 bytes per distinct (document, term) pair plus the vocabulary, so a collection
    can be streamed from Chroma page by page instead of held as texts and token lists.
    """

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.vocab: dict[str, int] = {}
        self._cols = array("i")  # term id of each (doc, term) pair, doc by doc (CSR order)
        self._tf = array("f")  # its count in the doc (integers: exact in float32)
        self._indptr = array("q", [0])
        self._doc_len = array("d")

    def add(self, doc_id: str, tokens: Sequence[str]) -> None:
        vocab = self.vocab
        for term, count in Counter(tokens).items():
            self._cols.append(vocab.setdefault(term, len(vocab)))
            self._tf.append(count)
        self._indptr.append(len(self._cols))
        self._doc_len.append(len(tokens))
        self.ids.append(doc_id)

    def take(self) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Hand the accumulated (ids, term ids, counts, row pointers, lengths) over without copying,
        leaving the builder empty (the vocabulary stays: the term ids refer to it)."""
        out = (
            self.ids,
            np.frombuffer(self._cols, dtype=np.int32),
            np.frombuffer(self._tf, dtype=np.float32),
            np.frombuffer(self._indptr, dtype=np.int64),
            np.frombuffer(self._doc_len, dtype=np.float64),
        )
        self.ids, self._cols, self._tf = [], array("i"), array("f")
        self._indptr, self._doc_len = array("q", [0]), array("d")
        return out

    def build(self, *, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25) -> SparseBM25:
        n, n_terms = len(self.ids), len(self.vocab)
        tf = sp.csr_matrix(
            (
                np.frombuffer(self._tf, dtype=np.float32),
                np.frombuffer(self._cols, dtype=np.int32),
                np.frombuffer(self._indptr, dtype=np.int64),
            ),
            shape=(n, n_terms),
        ).tocsc()
        self._cols, self._tf, self._indptr = array("i"), array("f"), array("q", [0])  # free before CSC lives on
        doc_len = np.frombuffer(self._doc_len, dtype=np.float64).copy()
        # Chunks made only of stop words have no tokens; keep the maths finite for them.
        avgdl = max(doc_len.sum() / n, 1.0) if n else 1.0
        df = np.diff(tf.indptr).astype(np.float64)
        # Same IDF as rank_bm25.BM25Okapi._calc_idf: negative values floored at eps * mean idf.
        idf = np.log(n - df + 0.5) - np.log(df + 0.5)
        if len(idf):  # the mean summed exactly, so that segmented indexes (bm25_segments) match bit for bit
            idf[idf < 0] = epsilon * (math.fsum(idf.tolist()) / len(idf))
        norm = k1 * (1 - b + b * doc_len / avgdl)
        return SparseBM25(ids=self.ids, vocab=self.vocab, tf=tf, idf=idf, norm=norm, k1=k1, b=b, epsilon=epsilon)


@dataclass
class SparseBM25:
    """BM25Okapi (k1, b, epsilon as rank-bm25) over a fixed list of tokenised documents.

    Holds term frequencies (CSC, float32: they are integers) with per-term IDF and per-document
    length norms, and computes a query term's weights from its column when asked, in float64 as
    rank-bm25 does: 8 bytes per posting instead of 12 for precomputed float64 weights.
    Build with :meth:`from_tokens` or :class:`BM25Builder`; persist with :meth:`save` / :meth:`load`.
    """

    ids: list[str]
    vocab: dict[str, int]
    tf: sp.csc_matrix  # (n_docs, n_terms) count of term t in doc d
    idf: np.ndarray  # (n_terms,) float64
    norm: np.ndarray  # (n_docs,) float64: k1 * (1 - b + b * len(d) / avgdl)
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25
    _pos: dict[str, int] | None = field(default=None, repr=False)

    @classmethod
    def from_tokens(
        cls,
        ids: Sequence[str],
        corpus: Sequence[Sequence[str]],
        *,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
    ) -> SparseBM25:
        builder = BM25Builder()
        for cid, toks in zip(ids, corpus):
            builder.add(cid, toks)
        return builder.build(k1=k1, b=b, epsilon=epsilon)

    def __len__(self) -> int:
        return len(self.ids)

    def doc_share(self, term: str) -> float:
        """Share of the chunks that hold ``term`` (lower-cased; a stop word counts as everywhere, 1.0).

        Query writers use it to tell a distinctive word from a common one on *this* corpus, with no
        word list: "Make" in a manual or "Typically" in a report is common, "Lindbergh" is not.

        Example:
            >>> bm = SparseBM25.from_tokens(["a", "b"], [["paris", "city"], ["city"]])
            >>> bm.doc_share("city"), bm.doc_share("paris"), bm.doc_share("the"), bm.doc_share("zzz")
            (1.0, 0.5, 1.0, 0.0)
        """
        t = term.lower()
        if t in STOPWORDS:
            return 1.0
        j = self.vocab.get(t)
        if j is None or not len(self.ids):
            return 0.0
        return float(self.tf.indptr[j + 1] - self.tf.indptr[j]) / len(self.ids)

    def scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every document, in ``ids`` order (repeated query terms count again)."""
        out = np.zeros(len(self.ids), dtype=np.float64)
        counts = term_counts(self.vocab, query_tokens)
        k1p1 = self.k1 + 1
        for j, mult in counts.items():
            lo, hi = self.tf.indptr[j], self.tf.indptr[j + 1]
            rows = self.tf.indices[lo:hi]
            tf = self.tf.data[lo:hi].astype(np.float64)
            out[rows] += mult * (self.idf[j] * (tf * k1p1) / (tf + self.norm[rows]))  # rows of a column are unique
        return out

    def ids_with_all(self, tokens: Sequence[str]) -> list[str]:
        """Ids of the documents that hold every one of ``tokens`` (an intersection of posting lists), in ``ids`` order."""
        rows: np.ndarray | None = None
        for t in dict.fromkeys(tokens):
            j = self.vocab.get(t)
            if j is None:
                return []
            col = self.tf.indices[self.tf.indptr[j] : self.tf.indptr[j + 1]]
            rows = col if rows is None else np.intersect1d(rows, col, assume_unique=True)
            if not len(rows):
                return []
        return [] if rows is None else [self.ids[i] for i in np.sort(rows)]

    def top_k(
        self, query_tokens: Sequence[str], k: int, *, allowed: np.ndarray | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` best (id, score) pairs with a positive score; ``allowed`` masks documents."""
        return top_k_of(self.scores(query_tokens), self.ids, k, allowed)

    def mask(self, ids: Sequence[str] | set[str], *, exclude: bool = False) -> np.ndarray:
        if self._pos is None:  # built on first use: ~100 bytes per chunk that plain searches never need
            self._pos = {cid: i for i, cid in enumerate(self.ids)}
        m = np.zeros(len(self.ids), dtype=bool)
        idx = [self._pos[i] for i in ids if i in self._pos]
        m[idx] = True
        return ~m if exclude else m

    def save(self, folder: Path, *, fingerprint: str) -> None:
        """Write one file atomically (temp file + rename): a reader sees the old index or the new, never a mix."""
        folder.mkdir(parents=True, exist_ok=True)
        meta = {"k1": self.k1, "b": self.b, "epsilon": self.epsilon, "fingerprint": fingerprint, "format": 2}
        fd, tmp = tempfile.mkstemp(prefix="bm25.", suffix=".tmp", dir=folder)  # unique per writer
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(
                    f,
                    data=self.tf.data,
                    indices=self.tf.indices,
                    indptr=self.tf.indptr,
                    shape=np.asarray(self.tf.shape, dtype=np.int64),
                    idf=self.idf,
                    norm=self.norm,
                    ids=_json_bytes(self.ids),
                    vocab=_json_bytes(list(self.vocab)),
                    meta=_json_bytes(meta),
                )
            os.replace(tmp, folder / BM25_FILE)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, folder: Path) -> tuple[SparseBM25, str] | None:
        """The saved index and its fingerprint, or None when absent or unreadable."""
        try:
            with np.load(folder / BM25_FILE, allow_pickle=False) as z:
                meta = json.loads(z["meta"].tobytes())
                ids = json.loads(z["ids"].tobytes())
                terms = json.loads(z["vocab"].tobytes())
                shape = tuple(int(x) for x in z["shape"])
                tf = sp.csc_matrix((z["data"], z["indices"], z["indptr"]), shape=shape)
                idf, norm = z["idf"], z["norm"]
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError):
            return None
        if shape != (len(ids), len(terms)) or len(idf) != len(terms) or len(norm) != len(ids):
            return None
        index = cls(
            ids=ids,
            vocab={t: i for i, t in enumerate(terms)},
            tf=tf,
            idf=idf,
            norm=norm,
            k1=meta["k1"],
            b=meta["b"],
            epsilon=meta["epsilon"],
        )
        return index, meta["fingerprint"]


def top_k_of(s: np.ndarray, ids: Sequence[str], k: int, allowed: np.ndarray | None = None) -> list[tuple[str, float]]:
    """The ``k`` best (id, score) pairs of the scores ``s`` with a positive score, ``allowed`` rows only.

    Example:
        >>> top_k_of(np.array([0.5, 0.0, 2.0]), ["a", "b", "c"], 5)
        [('c', 2.0), ('a', 0.5)]
    """
    if allowed is not None:
        s = np.where(allowed, s, 0.0)
    nz = np.flatnonzero(s > 0)
    if not len(nz) or k <= 0:
        return []
    k = min(k, len(nz))
    top = nz[np.argpartition(-s[nz], k - 1)[:k]]
    top = top[np.lexsort((top, -s[top]))]  # score desc, then insertion order for ties
    return [(ids[i], float(s[i])) for i in top]


def _json_bytes(value: object) -> np.ndarray:
    return np.frombuffer(json.dumps(value, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)


class BM25Index(Protocol):
    """What :class:`BM25Retriever` asks of an index: :class:`SparseBM25` and the segmented one alike."""

    def top_k(
        self, query_tokens: Sequence[str], k: int, *, allowed: np.ndarray | None = None
    ) -> list[tuple[str, float]]: ...
    def mask(self, ids: Collection[str], *, exclude: bool = False) -> np.ndarray: ...


class BM25Retriever(ScoredIdsRetriever):
    """Keyword retrieval over the collection's chunks; scores are BM25 scores.

    ``index_provider`` returns the current :class:`SparseBM25` (the owner rebuilds it when the
    store changed), so this class never holds a stale index.
    """

    mode = "bm25"

    def __init__(self, store: Store, index_provider: Callable[[], BM25Index], *, max_k: int = MAX_DEPTH) -> None:
        self.store = store
        self.index_provider = index_provider
        self.max_k = max_k

    def scored_ids(
        self, query: str, k: int, *, where: Where | None = None, exclude: Collection[str] | None = None
    ) -> list[tuple[str, float]]:
        index = self.index_provider()
        allowed = None
        if where is not None:
            allowed = index.mask(self.store.ids_where(where))
        if exclude:
            ex = index.mask(set(exclude), exclude=True)
            allowed = ex if allowed is None else allowed & ex
        return index.top_k(tokenize(query), k, allowed=allowed)


__all__ = [
    "BM25Builder",
    "BM25Index",
    "BM25Retriever",
    "BM25_FILE",
    "STOPWORDS",
    "SparseBM25",
    "passage_terms",
    "rarity",
    "term_counts",
    "tokenize",
    "top_k_of",
]
