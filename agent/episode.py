"""What a policy sees of an episode: :class:`Episode`, handed to ``Policy.start`` and every ``step``.

The loop (``loop.py``) owns the episode's machinery (the toolbox, the token budget, the trace,
the caps); a policy gets only what it decides from:

* ``question``, ``config`` (the agent's settings: ``k``, caps, sampling), ``tools`` (the tool
  schemas an LLM is shown), ``seed`` and ``rollout`` (fused rollouts vary by them), ``turn``;
* ``context``: the model's context state: the messages (``view()`` is exactly what a model is
  shown) and every chunk seen, with its handle, its cosine ``relevance`` to the question, the
  producing tool's ``score`` and whether it was pruned. Policies read it; only the loop and the
  tools write it;
* ``last_outcomes``: what the previous turn's tool calls did (handles shown, errors, pruned ids);
* ``cancel``: the episode's :class:`~sieve.agent.cancel.CancelToken` when it can be stopped from
  outside (a backend able to abort a call in flight watches it), else None;
* ``vectors``: read access to the passage vectors and query-chunk cosines of the agent's shared
  :class:`~sieve.agent.vector_cache.VectorCache`, as a :class:`~sieve.agent.vector_cache.VectorView`
  (no index, no writes);
* ``term_share``: the share of the corpus's chunks holding a word (BM25's document frequency),
  so queries are judged distinctive or common on *this* corpus; ``corpus_chunks``: how many chunks
  that share is of (a word of one chunk is ``1 / corpus_chunks``).

Why the vectors come through the episode rather than through the policy's constructor: a
policy is built by name before any index is known (``make_policy(name, config)``, used alike
by the CLI, the server, evaluation and training), while the cache belongs to the agent that
runs it over one index and is shared by all that agent's episodes and its tools. A policy that
scores chunks itself (a learned one, reading embeddings and relevances) thus reaches the same
cache the tools filled, with no second copy and no change to how policies are made.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from sieve.agent.cancel import CancelToken
    from sieve.agent.config import AgentConfig
    from sieve.agent.tools import ToolOutcome
    from sieve.agent.vector_cache import VectorView
    from sieve.pruning.context import ContextState


@dataclass
class Episode:
    """Everything a policy may look at while deciding a turn (the loop updates ``turn`` and ``last_outcomes``)."""

    question: str
    config: AgentConfig
    context: ContextState
    tools: list[dict[str, Any]]
    vectors: VectorView
    seed: int = 0
    rollout: int = 0
    turn: int = 0
    last_outcomes: list[ToolOutcome] = field(default_factory=list)
    cancel: CancelToken | None = None  # a backend that can abort a call in flight watches it
    # Share of the corpus's chunks that hold a lower-cased word (BM25 document frequency): how
    # query writers tell a distinctive word from a common one on this corpus, with no word list.
    term_share: Callable[[str], float] | None = None
    corpus_chunks: int | None = None  # the chunks term_share counts in


__all__ = ["Episode"]
