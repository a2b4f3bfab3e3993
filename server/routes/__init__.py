"""HTTP routes, one ``APIRouter`` per theme."""

from sieve.server.routes import agent, documents, health, search

__all__ = ["agent", "documents", "health", "search"]
