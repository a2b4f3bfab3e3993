"""Sieve's public Python API.

``from sieve import Sieve`` for the library; ``from sieve.client import SieveClient`` for the HTTP
server; ``sieve.adapters`` for LangChain and LlamaIndex retrievers.

Importing ``sieve`` (which every ``sieve.*`` module does first) loads nothing heavy: the names
below resolve on first access (PEP 562), so ``sieve --help`` never pays for numpy, scipy or torch.
"""

from __future__ import annotations

import pkgutil
from typing import TYPE_CHECKING

from sieve.core.lazy import lazy_getattr

# In a checkout, sieve/agent etc. are relative links to the top-level folders (../agent), so the
# source tree resolves `sieve.agent` by itself, for Python and for static tools alike. Where links do
# not survive (a Windows checkout without symlink support), `sieve` from the checkout's root holds
# only the top layer and the sub-packages live in the installed tree (a wheel, or the strict editable
# install's link tree): extend_path adds every other `sieve` folder on sys.path, so `sieve.agent` is
# found there. Installed alone, it is a no-op.
__path__ = pkgutil.extend_path(__path__, __name__)

from sieve.core.errors import SieveError  # noqa: E402  (after __path__ is complete)

if TYPE_CHECKING:
    from sieve.agent import AgentConfig, Trace
    from sieve.facade import Sieve
    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.types import Chunk, Document, Hit

__all__ = ["AgentConfig", "Chunk", "Document", "Hit", "RetrieverConfig", "Sieve", "SieveError", "Trace"]

_LAZY = {
    "AgentConfig": "sieve.agent",
    "Trace": "sieve.agent",
    "Sieve": "sieve.facade",
    "RetrieverConfig": "sieve.retriever.config",
    "Chunk": "sieve.retriever.types",
    "Document": "sieve.retriever.types",
    "Hit": "sieve.retriever.types",
}


__getattr__ = lazy_getattr(__name__, _LAZY)
