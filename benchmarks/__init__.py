"""Benchmarks and the load test: scripts run with ``python -m sieve.benchmarks.<name>``, never imported by the library."""

__all__: list[str] = []
