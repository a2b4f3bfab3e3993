"""Schema-driven fuzzing of a running server with schemathesis: every OpenAPI operation, valid and invalid data.

Used by ``test_http_fuzz.py`` (bounded) and by ``python tests/server/fuzz_server.py`` (many more
cases, printing the count). A case fails when the server answers 5xx; everything else (4xx
problem details included) is the server doing its job.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FuzzReport:
    cases: int = 0
    by_status: collections.Counter = field(default_factory=collections.Counter)
    by_operation: collections.Counter = field(default_factory=collections.Counter)
    failures: list[str] = field(default_factory=list)

    def summary(self) -> str:
        statuses = ", ".join(f"{s}: {n}" for s, n in sorted(self.by_status.items()))
        return (
            f"{self.cases} cases over {len(self.by_operation)} operations; statuses {statuses}; "
            f"{len(self.failures)} server errors"
        )


def fuzz(
    base_url: str, *, max_examples: int, seed: int = 0, headers: dict[str, str] | None = None, timeout: float = 120.0
) -> FuzzReport:
    """Run ``max_examples`` positive and as many negative cases per operation; count them and any 5xx."""
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, seed as hyp_seed, settings
    from hypothesis.errors import Unsatisfiable

    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    report = FuzzReport()
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):

            @hyp_seed(seed)
            @settings(
                max_examples=max_examples,
                deadline=None,
                database=None,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
                derandomize=False,
            )
            @given(case=operation.as_strategy(generation_mode=mode))
            def run(case: Any) -> None:
                response = case.call(base_url=base_url, headers=headers, timeout=timeout)
                report.cases += 1
                report.by_status[response.status_code] += 1
                report.by_operation[operation.label] += 1
                if response.status_code >= 500:
                    report.failures.append(
                        f"{response.status_code} {operation.label}: {response.text[:300]}\n  {case.as_curl_command()}"
                    )

            try:
                run()
            except Unsatisfiable:
                pass  # e.g. no invalid input exists for an operation without parameters
    return report


__all__ = ["FuzzReport", "fuzz"]
