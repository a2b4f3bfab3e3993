"""BM25 over chunk texts: a sparse inverted-index scorer that matches rank-bm25 exactly.

rank-bm25's ``BM25Okapi`` is the reference (it scores every document in Python for each query
term, ~O(N·|q|) per query, too slow at 100k chunks). :class:`SparseBM25` precomputes the
per-(chunk, term) BM25 weight once into a CSC matrix, so a query costs one sparse column
slice and a sum. ``tests/retriever/test_bm25.py`` checks the scores are identical to rank-bm25.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from sieve.retriever.base import ScoredIdsRetriever

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Sequence

    from sieve.retriever.store import ChromaStore
    from sieve.retriever.types import Where

_TOKEN_RE = re.compile(r"\w+", re.UNICODE)
# A short English stop list: BM25 IDF already down-weights these, but they dominate query
# length for natural-language questions and cost a column slice each.
STOPWORDS = frozenset(
    "a an and are as at be by for from has have he her his in is it its of on or she that the their "
    "they this to was were which who whom what when where why how with did does do".split()
)


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens without stop words.

    Example:
        >>> tokenize("The Eiffel Tower, in Paris!")
        ['eiffel', 'tower', 'paris']
    """
    return [t for t in _TOKEN_RE.findall(text.lower()) if t not in STOPWORDS]


@dataclass
class SparseBM25:
    """BM25Okapi (k1, b, epsilon as rank-bm25) over a fixed list of tokenised documents.

    Build with :meth:`from_tokens`; persist with :meth:`save` / :meth:`load`.
    """

    ids: list[str]
    vocab: dict[str, int]
    weights: sp.csc_matrix  # (n_docs, n_terms) BM25 weight of term t in doc d
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25
    _pos: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._pos = {cid: i for i, cid in enumerate(self.ids)}

    @classmethod
    def from_tokens(
        cls, ids: Sequence[str], corpus: Sequence[Sequence[str]], *, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25
    ) -> SparseBM25:
        n = len(corpus)
        vocab: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        for d, toks in enumerate(corpus):
            for t in toks:
                rows.append(d)
                cols.append(vocab.setdefault(t, len(vocab)))
        if n == 0:
            return cls(ids=[], vocab={}, weights=sp.csc_matrix((0, 0), dtype=np.float64), k1=k1, b=b, epsilon=epsilon)
        tf = sp.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, len(vocab))).tocsr()
        tf.sum_duplicates()
        doc_len = np.array([len(toks) for toks in corpus], dtype=np.float64)
        # Chunks made only of stop words have no tokens; keep the maths finite for them.
        avgdl = max(doc_len.sum() / n, 1.0)
        df = np.bincount(tf.indices, minlength=len(vocab)).astype(np.float64)
        # Same IDF as rank_bm25.BM25Okapi._calc_idf: negative values floored at eps * mean idf.
        idf = np.log(n - df + 0.5) - np.log(df + 0.5)
        if len(idf):
            idf[idf < 0] = epsilon * (idf.sum() / len(idf))
        norm = k1 * (1 - b + b * doc_len / avgdl)
        coo = tf.tocoo()
        w = idf[coo.col] * (coo.data * (k1 + 1)) / (coo.data + norm[coo.row])
        weights = sp.csc_matrix((w, (coo.row, coo.col)), shape=tf.shape)
        return cls(ids=list(ids), vocab=vocab, weights=weights, k1=k1, b=b, epsilon=epsilon)

    def __len__(self) -> int:
        return len(self.ids)

    def scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every document, in ``ids`` order (repeated query terms count again)."""
        out = np.zeros(len(self.ids), dtype=np.float64)
        counts: dict[int, int] = {}
        for t in query_tokens:
            j = self.vocab.get(t)
            if j is not None:
                counts[j] = counts.get(j, 0) + 1
        if not counts or not len(self.ids):
            return out
        cols = np.fromiter(counts, dtype=np.int64)
        mult = np.fromiter(counts.values(), dtype=np.float64)
        out += np.asarray(self.weights[:, cols] @ mult).ravel()
        return out

    def top_k(self, query_tokens: Sequence[str], k: int, *, allowed: np.ndarray | None = None) -> list[tuple[str, float]]:
        """The ``k`` best (id, score) pairs with a positive score; ``allowed`` masks documents."""
        s = self.scores(query_tokens)
        if allowed is not None:
            s = np.where(allowed, s, 0.0)
        nz = np.flatnonzero(s > 0)
        if not len(nz):
            return []
        k = min(k, len(nz))
        top = nz[np.argpartition(-s[nz], k - 1)[:k]]
        top = top[np.lexsort((top, -s[top]))]  # score desc, then insertion order for ties
        return [(self.ids[i], float(s[i])) for i in top]

    def mask(self, ids: Sequence[str] | set[str], *, exclude: bool = False) -> np.ndarray:
        m = np.zeros(len(self.ids), dtype=bool)
        idx = [self._pos[i] for i in ids if i in self._pos]
        m[idx] = True
        return ~m if exclude else m

    def save(self, folder: Path, *, fingerprint: str) -> None:
        """Write atomically: a killed run leaves the previous index, never a torn one."""
        folder.mkdir(parents=True, exist_ok=True)
        tmp_npz = folder / "bm25.tmp.npz"
        sp.save_npz(tmp_npz, self.weights.tocsc(), compressed=False)
        meta = {"ids": self.ids, "vocab": self.vocab, "k1": self.k1, "b": self.b, "epsilon": self.epsilon,
                "fingerprint": fingerprint}
        tmp_json = folder / "bm25.tmp.json"
        tmp_json.write_text(json.dumps(meta), encoding="utf-8")
        tmp_npz.replace(folder / "bm25.npz")
        tmp_json.replace(folder / "bm25.json")

    @classmethod
    def load(cls, folder: Path) -> tuple[SparseBM25, str] | None:
        """The saved index and its fingerprint, or None when absent or unreadable."""
        try:
            meta = json.loads((folder / "bm25.json").read_text(encoding="utf-8"))
            weights = sp.load_npz(folder / "bm25.npz").tocsc()
        except (OSError, ValueError, KeyError):
            return None
        if weights.shape[0] != len(meta["ids"]):
            return None
        index = cls(ids=meta["ids"], vocab=meta["vocab"], weights=weights, k1=meta["k1"], b=meta["b"],
                    epsilon=meta["epsilon"])
        return index, meta["fingerprint"]


class BM25Retriever(ScoredIdsRetriever):
    """Keyword retrieval over the collection's chunks; scores are BM25 scores.

    ``index_provider`` returns the current :class:`SparseBM25` (the owner rebuilds it when the
    store changed), so this class never holds a stale index.
    """

    mode = "bm25"

    def __init__(self, store: ChromaStore, index_provider: Callable[[], SparseBM25], *, max_k: int = 200) -> None:
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


__all__ = ["BM25Retriever", "STOPWORDS", "SparseBM25", "tokenize"]
