"""Defaults that several layers name, each written once here (this module imports nothing).

``DEFAULT_POLICY`` is what `sieve search`, `sieve demo`, `Sieve.search`, the server and the
playground run when no policy is asked for: the best policy measured (the shipped learned
checkpoint, with the learned fusion ranker under it; see ``docs/experiments``).
"""

from __future__ import annotations

DEFAULT_POLICY = "learned"

__all__ = ["DEFAULT_POLICY"]
