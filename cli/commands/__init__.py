"""CLI command groups; each module exposes ``register(app)``."""

__all__: list[str] = []
