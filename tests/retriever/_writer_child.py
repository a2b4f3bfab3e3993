"""Child process of test_writers: a second writer of one store, or a process that just holds its lock.

    python _writer_child.py write DATA_DIR START STOP LOCK_TIMEOUT_S   # index synthetic_docs(N_TOTAL)[START:STOP]
    python _writer_child.py hold DATA_DIR                              # hold the store's write lock until killed
    python _writer_child.py create DATA_DIR START STOP                 # on "go": create store and collection,
                                                                       # write chunks new-START..new-STOP

``write`` loads everything, prints ``ready`` and waits for a line on stdin before it writes (so the
test decides who starts first, whatever the machine's load), then prints ``batch COUNT`` after every
upsert and ``done`` at the end; ``hold`` prints ``held`` once it has the lock.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

from _retriever_helpers import RESUME_CONFIG, synthetic_docs

from sieve.retriever import CorpusIndex, RetrieverConfig
from sieve.retriever.index import store_write_lock

N_TOTAL = 80
COLLECTION = "writers"


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def write(data_dir: Path, start: int, stop: int, lock_timeout_s: float) -> None:
    cfg = RetrieverConfig(data_dir=data_dir, write_lock_timeout_s=lock_timeout_s, **RESUME_CONFIG)
    index = CorpusIndex.open(cfg, COLLECTION, create=True)
    upsert = index.store.upsert

    def upsert_and_report(*args, **kwargs):
        upsert(*args, **kwargs)
        _say(f"batch {index.store.count()}")

    index.store.upsert = upsert_and_report  # type: ignore[method-assign]
    docs = synthetic_docs(N_TOTAL)[start:stop]
    _say("ready")
    sys.stdin.readline()
    report = index.writer.index_documents(docs, progress=False)
    _say(f"done {report.chunks_written}")


def create(data_dir: Path, start: int, stop: int) -> None:
    """On "go", make the store and the collection and write documents START..STOP, as the first
    writers of a new store race. The vectors are fixed ones (no model: the race is Chroma's alone);
    everything else is the write path of ``index_documents``: the lock, the generation, the upsert."""
    import chromadb.api.rust  # noqa: F401  (imported before "go": the processes then start within a millisecond)
    import numpy as np

    from sieve.retriever.types import Chunk

    cfg = RetrieverConfig(data_dir=data_dir, **RESUME_CONFIG)
    chunks = [
        Chunk(chunk_id=f"new-{i}#0", doc_id=f"new-{i}", position=0, text=f"document {i}") for i in range(start, stop)
    ]
    vectors = np.eye(64, dtype=np.float32)[start:stop]
    _say("ready")
    sys.stdin.readline()
    index = CorpusIndex.open(cfg, COLLECTION, create=True)  # the embedder stays unloaded (lazy)
    with index.write_lock.hold():
        index.store.bump_generation()
        index.store.upsert(chunks, vectors, {c.doc_id: "h" for c in chunks}, {c.doc_id: 1 for c in chunks})
        index.store.bump_generation()
    _say(f"done {len(chunks)}")


def hold(data_dir: Path) -> None:
    with store_write_lock(RetrieverConfig(data_dir=data_dir, **RESUME_CONFIG)).hold():
        _say("held")
        time.sleep(300)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    mode, data = sys.argv[1], Path(sys.argv[2])
    if mode == "write":
        write(data, int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
    elif mode == "create":
        create(data, int(sys.argv[3]), int(sys.argv[4]))
    else:
        hold(data)
