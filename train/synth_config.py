"""How task synthesis runs (:class:`SynthConfig`), apart from :mod:`sieve.train.synth`.

Apart so that the command line reads its defaults and help from here (one home per default)
without loading what synthesis itself needs (numpy, BM25): ``sieve --help`` must stay light.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sieve.core.errors import InvalidInput
from sieve.train.synth_writers import WRITERS, writer_help

GeneratorName = str  # a name in sieve.train.synth_writers.WRITERS


@dataclass
class SynthConfig:
    n: int = field(default=500, metadata={"help": "Number of verified tasks wanted in the output file."})
    seed: int = field(default=0, metadata={"help": "Seed of the bridge-chunk order (same seed, same tasks)."})
    generator: GeneratorName = field(default="heuristic", metadata={"help": f"Question writer: {writer_help()}."})
    links_per_bridge: int = field(default=2, metadata={"help": "Most links tried per bridge chunk."})
    tasks_per_target: int = field(default=2, metadata={"help": "Most tasks whose answer lies in one document."})
    min_title_chars: int = field(default=4, metadata={"help": "Shorter titles are not matched as mentions."})
    max_title_words: int = field(default=8, metadata={"help": "Longer titles are not matched as mentions."})
    bm25_neighbours: int = field(
        default=5, metadata={"help": "BM25 neighbours tried when no title link (LLM writers)."}
    )
    verify_k: int = field(default=10, metadata={"help": "Depth of the single-shot search used by verification."})
    shortcut_rank: int = field(
        default=1,
        metadata={"help": "Reject when single-shot search ranks the target within this rank but misses the bridge."},
    )
    n_distractors: int = field(default=10, metadata={"help": "Hard distractors recorded per task."})
    reader_check: bool = field(
        default=False, metadata={"help": "LLM writers: also reject when the model answers from the bridge chunk alone."}
    )
    max_answer_words: int = field(default=10, metadata={"help": "Longer answers are rejected."})
    max_quoted_words: int = field(
        default=4,
        metadata={
            "help": "Reject a question that copies more content words of a gold chunk in a row (names, numbers aside)."
        },
    )
    comparison_share: float = field(
        default=0.3,
        metadata={"help": "Template writer: share of lead chunks tried first as one side of a comparison question."},
    )
    drafts_per_link: int = field(default=3, metadata={"help": "Most drafts verified per link before moving on."})
    id_prefix: str = field(default="synth", metadata={"help": "Prefix of task ids."})
    claim_max_words: int = field(default=20, metadata={"help": "claims: longest claim written, in words."})
    claim_search_depth: int = field(
        default=50,
        metadata={
            "help": "claims: reject a claim whose source document single-shot search does not find in this many."
        },
    )

    def __post_init__(self) -> None:
        if self.n < 1:
            raise InvalidInput(f"Expected n >= 1, got {self.n}")
        if self.generator not in WRITERS:
            raise InvalidInput(f"Expected generator in {tuple(WRITERS)}, got {self.generator!r}")
        if self.claim_max_words < 5 or self.claim_search_depth < 1:
            raise InvalidInput(
                f"Expected claim_max_words >= 5 and claim_search_depth >= 1, got "
                f"{self.claim_max_words}, {self.claim_search_depth}"
            )
        if self.verify_k < 1 or self.shortcut_rank < 0 or self.n_distractors < 0:
            raise InvalidInput(
                f"Expected verify_k >= 1, shortcut_rank >= 0, n_distractors >= 0, got "
                f"{self.verify_k}, {self.shortcut_rank}, {self.n_distractors}"
            )
        if not 0.0 <= self.comparison_share <= 1.0 or self.max_quoted_words < 0 or self.drafts_per_link < 1:
            raise InvalidInput(
                f"Expected 0 <= comparison_share <= 1, max_quoted_words >= 0, drafts_per_link >= 1, "
                f"got {self.comparison_share}, {self.max_quoted_words}, {self.drafts_per_link}"
            )


__all__ = ["GeneratorName", "SynthConfig"]
