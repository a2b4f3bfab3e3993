"""Sieve's public Python API.

``from sieve import Sieve`` for the library; ``from sieve.client import SieveClient`` for the HTTP
server; ``sieve.adapters`` for LangChain and LlamaIndex retrievers. Heavy modules load lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sieve.errors import SieveError
from sieve.retriever.config import RetrieverConfig
from sieve.retriever.types import Chunk, Document, Hit
from sieve.facade import Sieve

if TYPE_CHECKING:
    from sieve.agent import AgentConfig, Trace

__all__ = ["AgentConfig", "Chunk", "Document", "Hit", "RetrieverConfig", "Sieve", "SieveError", "Trace"]


def __getattr__(name: str) -> Any:
    # The agent package pulls in the tool machinery; import it only when asked for.
    if name in ("AgentConfig", "Trace"):
        from sieve import agent
        return getattr(agent, name)
    raise AttributeError(f"module 'sieve' has no attribute {name!r}")
