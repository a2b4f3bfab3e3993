"""Issue 24, items 1 and 2 measured: a real ``sieve serve``, a real ``sieve index`` beside it, then one HTTP write.

    python tests/server/store_owner_probe.py /tmp/probe    # from the repo root; WORKDIR must not exist yet

Prints how many of the CLI's 16 documents the running server finds (top 3, searching each one's own
text) right after ``sieve index`` and 10 s later, per mode; then, after an HTTP write of 12 more, how
many embeddings a fresh process cannot read back and how many readable ones miss themselves in dense
search. The collection saves its vector index every 8 writes (as a large corpus does every 1,000),
so a stale writer's damage shows with a few documents. Measured on issue 24's branch: dense 16/16 at
+0 s, 0 unreadable; before it: dense 0/16 at +0 and +10 s, 16 of 44 embeddings unreadable.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parents[1]))  # tests/, for _server_process
from _server_process import sieve_command
from sieve.core.net import free_port, wait_until_healthy
from sieve.data import SAMPLE_DIR

tmp = Path(sys.argv[1])
tmp.mkdir(parents=True)
data = tmp / "data"
NAME = "owner"
env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
rows = [json.loads(l) for l in (SAMPLE_DIR / "corpus.jsonl").open()][:44]
recs = [{"id": r["id"], "title": r.get("title", ""), "text": r["text"]} for r in rows]
first, by_cli, last = recs[:16], recs[16:32], recs[32:44]
code = (
    "import sys; from pathlib import Path; from sieve.retriever import RetrieverConfig;"
    "from sieve.retriever.store import GENERATION_KEY, make_client;"
    "make_client(RetrieverConfig(data_dir=Path(sys.argv[1]))).create_collection(sys.argv[2], "
    "embedding_function=None, metadata={GENERATION_KEY: 'empty'}, "
    "configuration={'hnsw': {'space': 'cosine', 'sync_threshold': 8, 'batch_size': 8}})"
)
subprocess.run([sys.executable, "-c", code, str(data), NAME], env=env, check=True)
(tmp / "cli.jsonl").write_text("".join(json.dumps(r) + "\n" for r in by_cli))
port = free_port()
url = f"http://127.0.0.1:{port}"
proc = subprocess.Popen(
    [
        *sieve_command(),
        "serve",
        "--data-dir",
        str(data),
        "-c",
        NAME,
        "--port",
        str(port),
        "--no-mcp",
        "--log-level",
        "warning",
    ],
    env=env,
    stdout=open(tmp / "serve.log", "w"),
    stderr=subprocess.STDOUT,
)


def found(rs, mode):
    n = 0
    for r in rs:
        res = httpx.post(
            f"{url}/v1/retrieve",
            json={"query": f"{r['title']} {r['text']}"[:1000], "collection": NAME, "k": 3, "mode": mode},
            timeout=60,
        )
        n += r["id"] in {h["doc_id"] for h in res.json()["results"]}
    return n


try:
    wait_until_healthy(f"{url}/healthz", proc=proc, name="serve", timeout_s=180, poll_s=0.2, request_timeout_s=1)
    assert (
        httpx.post(f"{url}/v1/collections/{NAME}/documents", json={"documents": first}, timeout=120).status_code == 200
    )
    found(first[:2], "dense")
    subprocess.run(
        [*sieve_command(), "index", str(tmp / "cli.jsonl"), "-c", NAME, "--data-dir", str(data), "--json"],
        env=env,
        check=True,
        capture_output=True,
    )
    t0 = time.monotonic()
    for wait in (0, 10):
        time.sleep(max(0, wait - (time.monotonic() - t0)))
        print(
            f"item 1, +{time.monotonic() - t0:.1f} s after sieve index: found in top 3 of 16 CLI docs: "
            + ", ".join(f"{m} {found(by_cli, m)}" for m in ("dense", "bm25", "hybrid")),
            flush=True,
        )
    print(
        "item 2, HTTP write of 12 docs:",
        httpx.post(f"{url}/v1/collections/{NAME}/documents", json={"documents": last}, timeout=120).status_code,
    )
finally:
    proc.terminate()
    proc.wait(30)
check = r"""
import sys; from pathlib import Path
from sieve.retriever import CorpusIndex, RetrieverConfig
idx = CorpusIndex.open(RetrieverConfig(data_dir=Path(sys.argv[1])), "owner")
ids = sorted(c for c, _t, _m in idx.store.scan(include_text=False))
bad, vecs = 0, {}
for c in ids:
    try: vecs.update(idx.get_vectors([c]))
    except Exception: bad += 1
miss = sum(1 for c, v in vecs.items() if idx.store.query_ids(v, 1)[0][0] != c)
print(f"item 2, fresh process: {len(ids)} chunks, {bad} embeddings unreadable, dense self-retrieval misses {miss} of {len(vecs)} readable")
"""
subprocess.run([sys.executable, "-c", check, str(data)], env=env)
