"""Defaults and caps that several layers name, each written once here (this module imports
only ``typing``, so every layer may read it).

``DEFAULT_POLICY`` is what `sieve search`, `sieve demo`, `Sieve.search`, the server and the
playground run when no policy is asked for: the best policy measured (the shipped learned
checkpoint, with the learned fusion ranker under it; see ``docs/experiments``).

``MAX_K`` is the one cap on ``k`` a caller meets: the HTTP API (it is ``SIEVE_MAX_REQUEST_K``'s
default, the number docs/configuration.md gives), `sieve search`, `sieve retrieve` and ``Sieve``
all check ``k`` against it. ``MAX_DEPTH`` is not a cap on ``k``: it bounds how deep one search of
an index may rank (``RetrieverConfig.max_k``), so that internal pools (``search_documents``
asking for three chunks per document wanted, the agent's floor) may read past any ``k`` a caller
is allowed.
"""

from __future__ import annotations

from typing import Final

DEFAULT_POLICY: Final = "learned"
DEFAULT_K: Final = 10  # results (chunks, documents or evidence) a search returns when no k is asked for
MAX_K: Final = 100  # the largest k a caller may ask for
MAX_DEPTH: Final = 200  # the deepest ranking one search of an index returns (internal pools included)
DEFAULT_MODE: Final = "hybrid"  # the retrieval mode of a plain search when none is named
MAX_QUERY_CHARS: Final = 4000  # the longest query a search accepts
MIN_BUDGET_TOKENS: Final = 256  # the smallest context budget an episode may run with

__all__ = [
    "DEFAULT_K",
    "DEFAULT_MODE",
    "DEFAULT_POLICY",
    "MAX_DEPTH",
    "MAX_K",
    "MAX_QUERY_CHARS",
    "MIN_BUDGET_TOKENS",
]
