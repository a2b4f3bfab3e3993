"""Child process of test_resume_kill9: index synthetic documents, printing a line after every batch.

Run as ``python _resume_child.py DATA_DIR N_DOCS``; the test kills it with SIGKILL mid-run.
"""

from __future__ import annotations

import sys
from pathlib import Path

from _retriever_helpers import RESUME_CONFIG, synthetic_docs

from sieve.retriever import CorpusIndex, RetrieverConfig


def main() -> None:
    data_dir, n_docs = Path(sys.argv[1]), int(sys.argv[2])
    index = CorpusIndex.open(RetrieverConfig(data_dir=data_dir, **RESUME_CONFIG), "resume", create=True)
    upsert = index.store.upsert

    def upsert_and_report(*args, **kwargs):  # the test waits for these lines before it kills
        upsert(*args, **kwargs)
        sys.stdout.write(f"batch {index.store.count()}\n")
        sys.stdout.flush()

    index.store.upsert = upsert_and_report  # type: ignore[method-assign]
    index.writer.index_documents(synthetic_docs(n_docs), progress=False)
    sys.stdout.write("finished\n")


if __name__ == "__main__":
    main()
