"""Prometheus metrics of one app, in a registry of its own (never the process-global one).

A per-app ``CollectorRegistry`` lets tests start several apps in one process and read exact
counts from each; ``/metrics`` renders it in the Prometheus text format.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

if TYPE_CHECKING:
    from sieve.agent import Trace

# Seconds; retrieval is ~10-100 ms, agent episodes up to tens of seconds.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class Metrics:
    """The counters and histograms the server records.

    Example:
        >>> m = Metrics()
        >>> m.requests.labels(method="GET", route="/healthz", status="200").inc()
        >>> b"sieve_http_requests_total" in m.render()
        True
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "sieve_http_requests", "HTTP requests served.", ["method", "route", "status"], registry=r
        )
        self.latency = Histogram(
            "sieve_http_request_duration_seconds",
            "Time to the response's last byte.",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.in_flight = Gauge("sieve_http_requests_in_flight", "Requests being served.", registry=r)
        self.queries = Counter("sieve_retrieve_queries", "Queries answered by plain retrieval.", ["mode"], registry=r)
        self.agent_runs = Counter("sieve_agent_runs", "Agent episodes finished.", ["policy", "stop_reason"], registry=r)
        self.agent_turns = Histogram(
            "sieve_agent_turns", "Turns per agent episode.", buckets=(1, 2, 4, 8, 16, 32, 64, 128), registry=r
        )
        self.agent_tokens = Histogram(
            "sieve_agent_tokens",
            "Tokens processed per agent episode.",
            buckets=(256, 1024, 4096, 8192, 16384, 32768, 65536, 131072),
            registry=r,
        )
        self.agent_tool_calls = Counter("sieve_agent_tool_calls", "Agent tool calls.", ["tool"], registry=r)
        self.agent_seconds = Histogram(
            "sieve_agent_episode_seconds", "Wall time per agent episode.", buckets=LATENCY_BUCKETS, registry=r
        )
        self.agent_cancelled = Counter(
            "sieve_agent_cancelled",
            "Episodes the server cancelled while they ran "
            "(disconnect: the client left; timeout: past the request limit).",
            ["reason"],
            registry=r,
        )
        self.rejected = Counter(
            "sieve_admission_rejected", "Requests refused with 503 overloaded.", ["gate"], registry=r
        )
        self.admission_running = Gauge("sieve_admission_running", "Jobs holding a place.", ["gate"], registry=r)
        self.admission_queued = Gauge("sieve_admission_queued", "Requests waiting for a place.", ["gate"], registry=r)

    def observe_trace(self, trace: Trace) -> None:
        self.agent_runs.labels(policy=trace.policy or "unknown", stop_reason=trace.stop_reason).inc()
        self.agent_turns.observe(len(trace.turns))
        self.agent_tokens.observe(trace.tokens_total)
        self.agent_seconds.observe(trace.wall_ms / 1000.0)
        for call in trace.tool_calls:
            self.agent_tool_calls.labels(tool=call.name if not call.malformed else "malformed").inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


__all__ = ["LATENCY_BUCKETS", "Metrics"]
