"""Issue 42's fuzz run: malformed requests on every route of a real ``sieve serve``; count 5xx and tracebacks.

    python tests/server/malformed_probe.py [--examples 20] [--seed 0]    # from the repo root

Starts the ``sieve`` console script (uvicorn, the ONNX embedder, embedded Chroma) on a loopback
port with a throw-away data folder, writes a few documents, then sends

* hand-written malformed requests to every route (bodies that are not JSON, not UTF-8, nested
  5,000 deep, wrong types, huge and negative numbers, NUL bytes, lone surrogates, ``../`` names,
  1 MB strings, the oversized filters that crashed it: ``$and``/``$or`` of 1,000, 9,000 and 20,000
  conditions, a 100,000-value ``$in``, wrong methods, junk to ``/mcp``), and
* schemathesis' generated cases (valid and invalid) for every OpenAPI operation,

and prints a table per route: requests, answers by class, answers >= 500, and the tracebacks in
the server's log. Exit status 1 if any answer was >= 500, any traceback was logged, or the server
died. Every request goes to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # tests/, for _server_process
from _server_process import sieve_command  # noqa: E402

from sieve.core.net import free_port, wait_until_healthy  # noqa: E402

NAME = "probe"
DOCS = [
    {"id": f"d{i}", "title": f"t{i}", "text": f"Document {i} tells of {w}.", "metadata": {"tag": w}}
    for i, w in enumerate(["rivers", "mountains", "lakes", "deserts", "forests"])
]
JSON = {"content-type": "application/json"}


def _conditions(n: int, op: str) -> dict:
    return {op: [{"title": {"$ne": f"t{i}"}} for i in range(n)]}


def _nested_text(depth: int) -> str:
    return '{"$and": [' * depth + '{"title": "t0"}' + ', {"title": {"$ne": "x"}}]}' * depth


FILTERS: list[object] = [
    _conditions(1000, "$and"),
    _conditions(9000, "$and"),
    _conditions(20_000, "$or"),
    _conditions(101, "$or"),
    {"title": {"$in": [f"t{i}" for i in range(100_000)]}},
    {"title": {"$nin": list(range(40_000))}},
    {"$and": "x"},
    {"$or": [1, 2]},
    {"title": {"$regex": 1}},
    {"title": {"$eq": {"a": [1]}}},
    {"title": "x" * 20_000},
    {"": None},
    {"$bogus": 1},
    [],
    "title=t0",
    {"title": {"$gt": "a", "$lt": 1e308}},
]
STRINGS = ["", " ", "\x00", "a\x00b", "\ud800", "../../etc/passwd", "..", "%2e%2e", "é" * 5000, "x" * 1_000_000]
NUMBERS = [-1, 0, 2**63, 10**30, 1e400, "5", True, None, [], {}]


def _bodies(base: dict) -> list[bytes | dict]:
    """Malformed variants of a valid JSON body ``base``: raw bytes, and dicts with one field spoiled."""
    raw: list[bytes | dict] = [
        b"",
        b"{",
        b"null",
        b"[]",
        b"\x00\x01",
        b'{"query": "\xff\xfe"}',
        b"[" * 100_000,
        ('{"a": ' * 5000 + "1" + "}" * 5000).encode(),
        json.dumps(base).encode() + b"garbage",
    ]
    spoiled: list[bytes | dict] = []
    for key in base:
        spoiled += [{**base, key: v} for v in [*STRINGS, *NUMBERS]]
        spoiled += [{**base, key: [v]} for v in [*STRINGS[:6], *NUMBERS]]  # the same, one list deeper
    spoiled.append({**base, "unknown_field": 1})
    return raw + spoiled


def _content(body: bytes | dict) -> dict:
    # json.dumps, not httpx's json=: NaN and Infinity go out as written (invalid JSON, a malformed case).
    return {"content": body if isinstance(body, bytes) else json.dumps(body).encode(), "headers": JSON}


def _cases(collection: str) -> list[tuple[str, str, dict]]:
    """(method, path, httpx keyword arguments) of every hand-written malformed request."""
    cases: list[tuple[str, str, dict]] = []

    def post(path: str, base: dict) -> None:
        for body in _bodies(base):
            cases.append(("POST", path, _content(body)))
        for ctype in (
            "text/plain",
            "multipart/form-data",
            "application/x-www-form-urlencoded",
            "",
            "application/json; charset=latin-1",
        ):
            cases.append(("POST", path, {"content": json.dumps(base).encode(), "headers": {"content-type": ctype}}))

    post("/v1/retrieve", {"query": "rivers", "collection": collection, "k": 3, "mode": "bm25"})
    post("/v1/search", {"query": "rivers", "collection": collection, "policy": "heuristic", "max_turns": 2})
    post("/retrieve", {"queries": ["rivers"], "topk": 3, "collection": collection})
    post("/search", {"query": "rivers", "collection_name": collection})
    post(f"/v1/collections/{collection}/documents", {"documents": [{"id": "z", "text": "z"}]})
    doc = {"id": "z", "text": "z", "title": "z", "source": "z", "metadata": {"tag": "z"}}
    for field in doc:  # one field of a document spoiled (the body around it valid)
        for value in [*STRINGS, *NUMBERS, {"\ud800": 1}, {"$x": 1}, {"tag": []}, {"tag": [1, "a"]}]:
            body = {"documents": [{**doc, field: value}]}
            cases.append(("POST", f"/v1/collections/{collection}/documents", _content(body)))
    for path in ("/v1/retrieve", "/v1/search"):
        for mode in ("bm25", "dense", "hybrid"):
            for where in FILTERS:
                body = json.dumps({"query": "rivers", "collection": collection, "mode": mode})
                body = body[:-1] + ', "filters": ' + json.dumps(where) + "}"
                if path == "/v1/search":
                    body = body.replace('"mode": "' + mode + '"', '"policy": "heuristic"')
                cases.append(("POST", path, {"content": body.encode(), "headers": JSON}))
        nested = json.dumps({"query": "rivers"})[:-1] + ', "filters": ' + _nested_text(5000) + "}"
        cases.append(("POST", path, {"content": nested.encode(), "headers": JSON}))
    for s in STRINGS[:9]:
        cases += [
            ("GET", f"/v1/collections/{s}/documents", {}),
            ("GET", f"/v1/chunks/{s}", {"params": {"collection": collection}}),
            ("GET", f"/v1/documents/{s}", {"params": {"collection": s}}),
            ("DELETE", f"/v1/collections/{collection}/documents/{s}", {}),
            ("DELETE", f"/v1/collections/{s}x", {}),
            ("GET", "/v1/collections", {"params": {"include_eval": s}}),
        ]
    for n in NUMBERS:
        value = json.dumps(n)
        cases += [
            ("GET", f"/v1/collections/{collection}/documents", {"params": {"offset": value, "limit": value}}),
            ("GET", "/v1/chunks/d0#0", {"params": {"collection": collection, "window": value}}),
        ]
    for method in ("PUT", "PATCH", "DELETE", "GET"):
        for path in ("/v1/retrieve", "/v1/search", "/retrieve", "/search", "/healthz", "/metrics", "/"):
            cases.append((method, path, {}))
    for body in _bodies({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search"}}):
        cases.append(("POST", "/mcp", _content(body)))
    # (GET /mcp opens the MCP server's event stream, which stays open by design: not a malformed request.)
    cases.append(("GET", "/healthz", {"headers": {"authorization": "Bearer \x7f"}}))
    return cases


def _route(method: str, path: str) -> str:
    parts = path.split("?")[0].split("/")
    if len(parts) > 3 and parts[1] == "v1":  # templates, so the table stays one line per route
        parts = parts[:3] + ["{...}"]
    return f"{method} {'/'.join(parts)[:40]}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--examples", type=int, default=20, help="schemathesis cases per operation and mode")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    tmp = Path(tempfile.mkdtemp(prefix="sieve-malformed-"))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp / "serve.log"
    cmd = [*sieve_command(), "serve", "--data-dir", str(tmp / "data"), "-c", NAME, "--port", str(port)]
    import subprocess

    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        wait_until_healthy(f"{url}/healthz", proc=proc, name="sieve serve", timeout_s=180, poll_s=0.2)
        httpx.post(f"{url}/v1/collections/{NAME}/documents", json={"documents": DOCS}, timeout=120).raise_for_status()
        table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        failures: list[str] = []
        t0 = time.perf_counter()
        with httpx.Client(base_url=url, timeout=120) as client:
            for method, path, kw in _cases(NAME):
                try:
                    r = client.request(method, path, **kw)
                    status = r.status_code
                except (UnicodeError, httpx.InvalidURL):
                    continue  # not sendable at all (a lone surrogate in a path): no request was made
                except httpx.HTTPError as exc:  # a dropped connection counts as a failure too
                    status, r = 599, None
                    failures.append(f"{method} {path[:60]}: {type(exc).__name__}")
                row = table[_route(method, path)]
                row["n"] += 1
                row[f"{status // 100}xx"] += 1
                if status >= 500:
                    row[">=500"] += 1
                    failures.append(f"{status} {method} {path[:60]}: {r.text[:200] if r is not None else ''}")
        hand = time.perf_counter() - t0
        from fuzzing import fuzz

        t1 = time.perf_counter()
        report = fuzz(url, max_examples=args.examples, seed=args.seed)
        for label, n in report.by_operation.items():
            table[f"{label} (schemathesis)"]["n"] += n
        failures += report.failures
        alive = proc.poll() is None and httpx.get(f"{url}/healthz", timeout=30).status_code == 200
    finally:
        proc.terminate()
        proc.wait(30)
    text = log.read_text(errors="replace")
    tracebacks = text.count("Traceback (most recent call last)")
    hand_n = sum(row["n"] for key, row in table.items() if "(schemathesis)" not in key)
    print(f"{'route':58s} {'n':>6s} {'2xx':>5s} {'4xx':>5s} {'>=500':>6s}")
    for key in sorted(table):
        row = table[key]
        print(f"{key:58s} {row['n']:6d} {row['2xx']:5d} {row['4xx']:5d} {row['>=500']:6d}")
    statuses = ", ".join(f"{s}: {n}" for s, n in sorted(report.by_status.items()))
    print(
        f"\nhand-written: {hand_n} requests in {hand:.0f} s; schemathesis: {report.cases} cases in "
        f"{time.perf_counter() - t1:.0f} s (statuses {statuses})\n"
        f"total {hand_n + report.cases} requests; answers >= 500: {len(failures)}; tracebacks in the server log: "
        f"{tracebacks}; server alive at the end: {alive}; log: {log}"
    )
    for failure in failures[:20]:
        print("FAIL", failure)
    return 0 if not failures and not tracebacks and alive else 1


if __name__ == "__main__":
    raise SystemExit(main())
