"""HTTP routes, one ``APIRouter`` per theme."""

from sieve.server.routes import agent, documents, health, playground, search

__all__ = ["agent", "documents", "health", "playground", "search"]
