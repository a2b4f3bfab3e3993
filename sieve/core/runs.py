"""A retrained run: one folder that holds what ``sieve train all`` decided to use, and why.

``run.json`` names the parts a run adopted, each a folder inside the run: the learned policy's
checkpoint (with its closing ranker beside its weights, when that was retrained) or, for the LLM
route (``policy_kind`` ``llm``), the trained language model's folder; and the embedder adapted to
the corpus. A part the verdict judged no better is not named: the shipped one serves in
its place. Every command that takes ``--policy-path`` takes a run folder too; ``sieve adopt`` records
a run on a collection (re-embedding it when the run adapted the embedder), after which commands on
that collection use the run with no flag.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sieve.core.errors import InvalidInput

RUN_FILE = "run.json"
RUN_FORMAT = "sieve-run/1"
# What the policy folder holds: a learned-policy checkpoint, or an HF model folder that serves in-process.
POLICY_KINDS = ("learned", "llm")


@dataclass(frozen=True)
class RunArtifact:
    """The parts of a retrained run that serve (``None``: the shipped part).

    Example:
        >>> run = RunArtifact(Path("runs/docs"), policy=None, embedder=None)
        >>> run.uses_shipped_parts()
        True
    """

    folder: Path
    policy: Path | None
    embedder: Path | None
    verdict: dict[str, Any] = field(default_factory=dict)
    policy_kind: str = "learned"

    def __post_init__(self) -> None:
        if self.policy_kind not in POLICY_KINDS:
            raise InvalidInput(f"Expected a run's policy_kind in {POLICY_KINDS}, got {self.policy_kind!r}")

    @staticmethod
    def is_run(path: str | Path) -> bool:
        """Whether ``path`` is a run folder (it holds ``run.json``)."""
        return (Path(path) / RUN_FILE).is_file()

    @classmethod
    def load(cls, path: str | Path) -> RunArtifact:
        """Read ``path/run.json``; the parts it names must exist.

        Raises:
            InvalidInput: not a run folder, an unreadable manifest, or a part missing.
        """
        folder = Path(path).resolve()
        manifest = folder / RUN_FILE
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise InvalidInput(
                f"Expected a run folder of sieve train all (with {RUN_FILE}), got {str(path)!r}"
            ) from exc
        except (OSError, ValueError) as exc:
            raise InvalidInput(f"Expected a readable {manifest}, got {exc}") from exc
        if not isinstance(data, dict) or data.get("format") != RUN_FORMAT:
            raise InvalidInput(f"Expected {manifest} of format {RUN_FORMAT!r}, got {str(data)[:80]!r}")
        parts: dict[str, Path | None] = {}
        for part in ("policy", "embedder"):
            rel = data.get(part)
            parts[part] = (folder / rel) if rel else None
            if parts[part] is not None and not parts[part].is_dir():  # type: ignore[union-attr]
                raise InvalidInput(f"Expected the run's {part} folder {parts[part]} (named in {manifest}) to exist")
        # Manifests written before the LLM route wrote runs hold learned checkpoints.
        kind = data.get("policy_kind", "learned")
        return cls(folder, parts["policy"], parts["embedder"], dict(data.get("verdict") or {}), kind)

    def uses_shipped_parts(self) -> bool:
        """Whether the run adopted nothing (the shipped Sieve serves as before)."""
        return self.policy is None and self.embedder is None

    def save(self) -> Path:
        """Write ``run.json`` atomically (a reader never sees half a manifest)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        data = {
            "format": RUN_FORMAT,
            "policy": os.path.relpath(self.policy, self.folder) if self.policy else None,
            "embedder": os.path.relpath(self.embedder, self.folder) if self.embedder else None,
            "policy_kind": self.policy_kind,
            "verdict": self.verdict,
        }
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".run.", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, default=str)
        os.replace(tmp, self.folder / RUN_FILE)
        return self.folder / RUN_FILE

    def describe(self) -> str:
        """One line: which parts are retrained."""
        policy = "policy" if self.policy_kind == "learned" else f"policy ({self.policy_kind})"
        parts = [name for name, p in ((policy, self.policy), ("embedder", self.embedder)) if p is not None]
        return f"run {self.folder} ({', '.join(parts) + ' retrained' if parts else 'shipped parts only'})"


__all__ = ["POLICY_KINDS", "RUN_FILE", "RUN_FORMAT", "RunArtifact"]
