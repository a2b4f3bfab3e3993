"""One agentic search, resolved once: :class:`AgentRequest`.

Three doors lead to the search agent: the HTTP API (``POST /v1/search``, Context-1's ``POST
/search`` and the MCP ``search`` tool, all through ``server/agent_runner.py``), ``sieve search`` and
``Sieve.search``. Each turns what its caller asked for into one ``AgentRequest``: the policy named
(and, where settings decide, checked runnable), the :class:`~sieve.agent.config.AgentConfig`
resolved from settings, flags or keyword overrides (``k``, budget, caps, rollouts, grouping), and
``k`` checked against the cap, here and nowhere else on the way. The runner
(:func:`sieve.agent.loop.run_request`) takes the request as it is: nothing past the door reads
settings, resolves a config or checks ``k`` again.

Example:
    >>> from sieve.agent.config import AgentConfig
    >>> AgentRequest("Who built it?", "heuristic", AgentConfig(k=5), "docs").k
    5
    >>> AgentRequest("Who built it?", "heuristic", AgentConfig(k=500), "docs")
    Traceback (most recent call last):
    ...
    sieve.core.errors.InvalidInput: Expected k between 1 and 100, got 500
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass
from typing import TYPE_CHECKING

from sieve.core.defaults import MAX_K
from sieve.retriever.base import validate_k

if TYPE_CHECKING:
    from sieve.agent.config import AgentConfig
    from sieve.retriever.types import Where


@dataclass(frozen=True)
class AgentRequest:
    """What one agentic search runs, every choice made.

    Args:
        query: the question.
        policy: the registered name of the policy to run.
        config: the episode's settings as resolved (``k``, budget, caps, ``rollouts``, ``group_by_doc``).
        collection: the collection searched.
        where: a metadata filter applied to every search of the episode.
        max_k: the cap ``config.k`` is checked against (a server's ``SIEVE_MAX_REQUEST_K``; default
            :data:`~sieve.core.defaults.MAX_K`). Checked on construction, not kept.

    Raises:
        InvalidInput: ``config.k`` is not between 1 and ``max_k``.
    """

    query: str
    policy: str
    config: AgentConfig
    collection: str
    where: Where | None = None
    max_k: InitVar[int] = MAX_K

    def __post_init__(self, max_k: int) -> None:
        validate_k(self.config.k, max_k)

    @property
    def k(self) -> int:
        """Evidence items to return (the config's: one home)."""
        return self.config.k


__all__ = ["AgentRequest"]
