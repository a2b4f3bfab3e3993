"""Typed configuration of the agent loop, its tools and policies (help text kept here only)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from sieve.core.defaults import DEFAULT_K, MIN_BUDGET_TOKENS
from sieve.core.errors import InvalidInput
from sieve.pruning.config import PruningConfig


@dataclass
class HeuristicConfig:
    """Knobs of the no-LLM policy.

    Tuned with ``python -m sieve.benchmarks.policy`` on the first 80 2WikiMultihopQA and 150
    HotpotQA tasks of ``../shared/eval``; those tasks are declared tuning data
    (``eval/tuning_sets.json``): ``sieve eval`` warns on them and reported figures leave them out
    (``docs/experiments/tuning.md``).
    """

    first_k: int = field(default=10, metadata={"help": "Chunks shown by the first search (the question itself)."})
    hop_k: int = field(default=3, metadata={"help": "Chunks shown by each reformulated (bridging) search."})
    seed_chunks: int = field(default=4, metadata={"help": "Top chunks whose entities seed the next hop's queries."})
    max_queries_per_turn: int = field(default=6, metadata={"help": "Reformulated searches issued per turn."})
    max_hops: int = field(default=2, metadata={"help": "Rounds of reformulation after the first search."})
    # Off by default: on the tuning halves it lifted conversations (locomo R@10 +0.056) and cost
    # multi-hop questions (2Wiki R@5 -0.047), whose first hop needs every search for bridges.
    feedback: bool = field(
        default=False,
        metadata={"help": "First hop also searches the question with the words that set its best chunks apart."},
    )
    prune_below: float = field(
        default=0.15, metadata={"help": "Chunks whose evidence score is below this are pruned after each turn."}
    )
    w_rank: float = field(default=1.0, metadata={"help": "Weight of the rank in the question's own search."})
    rank_tau: float = field(default=4.0, metadata={"help": "Rank at which the question-search score halves."})
    w_cos: float = field(default=1.0, metadata={"help": "Weight of the chunk's cosine with the question."})
    bridge_weight: float = field(
        default=0.6, metadata={"help": "Share of its parent's score a chunk found by a bridging name inherits."}
    )
    named_weight: float = field(
        default=0.8, metadata={"help": "Bonus of a chunk whose title matches a name the question mentions."}
    )
    min_match: float = field(default=0.5, metadata={"help": "Least title-name match for a bridge or name bonus."})
    rank_decay: float = field(default=0.3, metadata={"help": "Decay of bonuses with the rank in their search."})
    order_decay: float = field(default=0.25, metadata={"help": "Decay of a name's bridge prior with mention order."})
    relation_boost: float = field(
        default=1.5, metadata={"help": "Prior multiplier of a name right after a word of the question."}
    )
    jitter: float = field(
        default=0.15, metadata={"help": "Random re-weighting of entity candidates in fused rollouts (seed > 0)."}
    )


@dataclass
class FloorConfig:
    """The floor under every policy: the returned set is interleaved with the question's hybrid ranking.

    Whatever a policy returns (a heuristic's ranking, a learned policy's, an LLM's ``finish`` ids or
    nothing at all), the harness runs the single hybrid search plain RAG would have run and merges
    the two rankings per document by place: a document's place is the better of its hybrid rank and
    its policy rank divided by the policy's standing, so at most ``floor(k / 2)`` of any top ``k``
    come from outside hybrid's ranking. The standing is 1 (an equal interleave) once the policy shares
    ``full_agreement`` of its documents with hybrid's ranking and falls to 0 (hybrid alone), as the
    ``agreement_power`` of that ratio, when it shares less (with ``agreement`` on), so a policy that
    returns garbage yields hybrid's set. A document both rankings hold moves up (their reciprocal
    places add, by at most ``corroboration`` of its better place). All three were tuned on declared
    tuning data only (``docs/experiments/tuning.md``).
    """

    enabled: bool = field(
        default=True,
        metadata={
            "help": "Merge the policy's evidence with the question's "
            "hybrid ranking (off: return the policy's ranking as is)."
        },
    )
    method: Literal["fusion", "interleave"] = field(
        default="fusion",
        metadata={
            "help": "fusion: rank the pool of both rankings' chunks with the learned fusion model "
            "(sieve.agent.ranking); interleave: the fixed per-document interleave below."
        },
    )
    fusion_path: Path | None = field(
        default=None,
        metadata={
            "help": "Fusion model JSON (default: the one shipped with Sieve; python -m sieve.train.ranking fits one)."
        },
    )
    hybrid_depth: int = field(
        default=30, metadata={"help": "Chunks of the question's hybrid search put in the fusion pool (at least k)."}
    )
    # Chosen on the filings tuning half (24 questions; 1.0, 0.9, 0.8, 0.7, 0.5, 0.3 tried): the only
    # value at or above hybrid there at every k in both document and span recall
    # (docs/experiments/chunk-evidence-and-fusion.md, "The policy draws its evidence by chunk").
    doc_decay: float = field(
        default=0.9,
        metadata={
            "help": "fusion: a chunk's probability counts this much less for each chunk of its document already "
            "placed above it (1: pure probability order; near 0: one chunk per document first)."
        },
    )
    # Chosen on the tuning halves of docs-poetry-dev, locomo-dev and the filings, with every declared passage
    # set, by replaying their episodes' closing rankings (docs/experiments/sections.md, "Hybrid's page
    # counts cap the top 5"): 5 with a floor of 2 lifted Poetry's SR@5 0.625 -> 0.750 and moved nothing else.
    head_cap: int = field(
        default=5,
        metadata={
            "help": "fusion: the first head_cap places hold no more chunks of one document than hybrid's own first "
            "head_cap do (at least 2); the rest follow in order (0: off)."
        },
    )
    # Chosen on locomo-dev's tuning half (its first 192 questions) by replaying the learned policy's episodes'
    # closing rankings: R@5/10/20 0.584/0.694/0.756 with none, 0.606/0.713/0.788 at 0.8, a plateau from 0.7
    # to 0.9 (docs/experiments/speakers.md). No other shared set is a conversation, so none of them moves.
    speaker_discount: float = field(
        default=0.8,
        metadata={
            "help": "fusion: in a conversation (most pool chunks open with 'Name: '), a turn of a speaker the "
            "question does not name counts this much less, when the question names one (0: off)."
        },
    )
    # Tuned: python -m sieve.eval.tune_floor on hotpotqa-train + 2wikimultihopqa-train + 400 scifact
    # tasks_train claims, heuristic and learned rankings (docs/experiments/tuning.md): the setting whose worst
    # (policy, set, k) recall difference to hybrid is best; on single-hop claims extra hops rarely help.
    full_agreement: float = field(
        default=0.75,
        metadata={
            "help": "Share of the policy's documents that hybrid's ranking must also hold for the policy to get "
            "an equal interleave (less: fewer places; none: hybrid alone)."
        },
    )
    agreement_power: float = field(
        default=2.0,
        metadata={
            "help": "Standing = min(1, agreement / full_agreement) ** agreement_power: above 1, a policy that "
            "shares less with the question's own search loses its places faster."
        },
    )
    # Tuned with full_agreement and agreement_power (same command, same declared data).
    corroboration: float = field(
        default=0.25,
        metadata={
            "help": "A document both rankings hold moves up to 1 / (1/hybrid place + 1/policy place), by at most "
            "this share of its better place (0: the better place only)."
        },
    )
    rrf_k: int = field(
        default=60, metadata={"help": "Reciprocal-rank constant of the merged score 1 / (rrf_k + place)."}
    )
    agreement: bool = field(
        default=True,
        metadata={
            "help": "Scale the policy's standing by the share of its documents the hybrid ranking also holds: a "
            "ranking that has drifted off the question (shares nothing with it) counts for nothing."
        },
    )

    def __post_init__(self) -> None:
        if not 0 < self.full_agreement <= 1:
            raise InvalidInput(f"Expected floor full_agreement in (0, 1], got {self.full_agreement}")
        if self.agreement_power <= 0:
            raise InvalidInput(f"Expected floor agreement_power > 0, got {self.agreement_power}")
        if not 0 <= self.corroboration < 1:
            raise InvalidInput(f"Expected floor corroboration in [0, 1), got {self.corroboration}")
        if self.rrf_k < 1:
            raise InvalidInput(f"Expected floor rrf_k >= 1, got {self.rrf_k}")
        if self.method not in ("fusion", "interleave"):
            raise InvalidInput(f"Expected floor method in ('fusion', 'interleave'), got {self.method!r}")
        if self.head_cap < 0:
            raise InvalidInput(f"Expected floor head_cap >= 0, got {self.head_cap}")
        if not 0 < self.doc_decay <= 1:
            raise InvalidInput(f"Expected floor doc_decay in (0, 1], got {self.doc_decay}")
        if not 0 <= self.speaker_discount < 1:
            raise InvalidInput(f"Expected floor speaker_discount in [0, 1), got {self.speaker_discount}")
        if self.hybrid_depth < 1:
            raise InvalidInput(f"Expected floor hybrid_depth >= 1, got {self.hybrid_depth}")


@dataclass
class AgentConfig:
    # -- budget and hard caps --
    budget_tokens: int = field(default=8192, metadata={"help": "Context budget of the model's view, in tokens."})
    max_turns: int = field(default=16, metadata={"help": "Hard cap on model turns per episode."})
    max_tool_calls: int = field(default=64, metadata={"help": "Hard cap on tool calls per episode."})
    max_calls_per_turn: int = field(default=8, metadata={"help": "Tool calls of one turn beyond this are rejected."})
    max_total_tokens: int = field(
        default=400_000, metadata={"help": "Hard cap on prompt + completion tokens processed over an episode."}
    )
    max_wall_s: float = field(
        default=300.0,
        metadata={
            "help": "Hard cap on an episode's wall time, in seconds (the server gives LLM policies' requests this "
            "long; other policies' requests stay within SIEVE_REQUEST_TIMEOUT_S)."
        },
    )
    # -- tools --
    k: int = field(default=DEFAULT_K, metadata={"help": "Size of the returned evidence set."})
    search_k: int = field(default=10, metadata={"help": "Most chunks one search call shows."})
    search_candidates: int = field(
        default=50, metadata={"help": "Fused hybrid candidates re-scored before packing (Context-1: 50)."}
    )
    search_tokens: int = field(
        default=2048, metadata={"help": "Per-call token budget of search, grep and read results."}
    )
    rescore_dense: float = field(
        default=0.5,
        metadata={"help": "Weight of query-chunk cosine against fused rank when re-scoring search results."},
    )
    grep_k: int = field(default=5, metadata={"help": "Most chunks one grep call shows (Context-1: 5)."})
    read_window: int = field(default=1, metadata={"help": "Neighbouring chunks each side read() shows by default."})
    tool_workers: int = field(default=4, metadata={"help": "Threads running one turn's tool calls concurrently."})
    max_arg_chars: int = field(default=4000, metadata={"help": "Longest query or pattern a tool accepts."})
    group_by_doc: bool = field(
        default=False,
        metadata={
            "help": "Return each document's best chunk only (k documents); default: the k best chunks, several of "
            "one document when they are the best evidence."
        },
    )
    # -- episodes --
    rollouts: int = field(default=1, metadata={"help": "Default number of fused rollouts for run_fused."})
    rrf_k: int = field(default=60, metadata={"help": "Reciprocal-rank-fusion constant for fused rollouts."})
    record_prompts: bool = field(
        default=False, metadata={"help": "Store each turn's prompt messages in the trace (for RL; makes traces large)."}
    )
    seed: int = field(default=0, metadata={"help": "Base seed; rollout i of run_fused uses seed + i."})
    # -- LLM policies --
    temperature: float = field(default=0.0, metadata={"help": "Sampling temperature (fused rollouts use >= 0.7)."})
    max_new_tokens: int = field(default=512, metadata={"help": "Most tokens the model may write per turn."})
    base_url: str = field(
        default="http://127.0.0.1:8001/v1", metadata={"help": "OpenAI-compatible endpoint (openai policy)."}
    )
    model: str = field(default="gpt-oss-20b", metadata={"help": "Model name sent to the OpenAI-compatible endpoint."})
    api_key: str | None = field(default=None, metadata={"help": "Bearer key for the endpoint, if it needs one."})
    tool_choice: Literal["auto", "required"] = field(
        default="auto",
        metadata={
            "help": "OpenAI tool_choice; vLLM returns structured tool calls reliably only with "
            "'required' (guided decoding) unless started with a tool-call parser."
        },
    )
    reasoning_effort: Literal["low", "medium", "high"] | None = field(
        default=None,
        metadata={
            "help": "Reasoning effort asked of a reasoning model (gpt-oss: low, medium, high; "
            "sent as reasoning_effort, or in the harmony system message); unset: the server's default."
        },
    )
    api: Literal["chat", "harmony"] = field(
        default="chat",
        metadata={
            "help": "openai policy: chat = POST /chat/completions with tools (vLLM, Ollama, llama.cpp); harmony = "
            "POST /completions with a gpt-oss harmony prompt Sieve renders itself (a server with no tool parser)."
        },
    )
    length_retry_tokens: int = field(
        default=2048,
        metadata={
            "help": "A turn cut by max_new_tokens (finish_reason=length) with no complete tool call is asked "
            "again once with this many tokens; 0: never (the episode then ends with stop_reason truncated)."
        },
    )
    timeout_s: float = field(default=120.0, metadata={"help": "Per-request timeout of the OpenAI backend."})
    retries: int = field(default=2, metadata={"help": "Retries of a failed or timed-out backend request."})
    local_model: Path | None = field(
        default=None, metadata={"help": "HF model folder for the local policy (default: SmolLM2-135M, converted once)."}
    )
    models_dir: Path | None = field(
        default=None,
        metadata={
            "help": "Folder the default local model is converted into once (default: "
            "<per-user data dir>/models; Settings uses SIEVE_DATA_DIR/models)."
        },
    )
    policy_path: Path | None = field(
        default=None,
        metadata={"help": "Checkpoint folder of the learned policy (default: the one shipped with Sieve)."},
    )
    pruning: PruningConfig = field(default_factory=PruningConfig)
    heuristic: HeuristicConfig = field(default_factory=HeuristicConfig)
    floor: FloorConfig = field(default_factory=FloorConfig)

    def __post_init__(self) -> None:
        positive = {
            "max_turns": self.max_turns,
            "max_tool_calls": self.max_tool_calls,
            "k": self.k,
            "search_k": self.search_k,
            "search_candidates": self.search_candidates,
            "grep_k": self.grep_k,
            "tool_workers": self.tool_workers,
            "rollouts": self.rollouts,
            "rrf_k": self.rrf_k,
            "max_calls_per_turn": self.max_calls_per_turn,
            "max_new_tokens": self.max_new_tokens,
        }
        bad = {n: v for n, v in positive.items() if v < 1}
        if bad:
            raise InvalidInput(f"Expected positive values, got {bad}")
        if self.budget_tokens < MIN_BUDGET_TOKENS:
            raise InvalidInput(f"Expected budget_tokens >= {MIN_BUDGET_TOKENS}, got {self.budget_tokens}")
        if self.search_candidates < self.search_k:
            raise InvalidInput(
                f"Expected search_candidates >= search_k, got {self.search_candidates} < {self.search_k}"
            )
        if not 0.0 <= self.rescore_dense <= 1.0:
            raise InvalidInput(f"Expected 0 <= rescore_dense <= 1, got {self.rescore_dense}")
        if self.tool_choice not in ("auto", "required"):
            raise InvalidInput(f"Expected tool_choice in ('auto', 'required'), got {self.tool_choice!r}")
        if self.reasoning_effort not in (None, "low", "medium", "high"):
            raise InvalidInput(
                f"Expected reasoning_effort in ('low', 'medium', 'high') or unset, got {self.reasoning_effort!r}"
            )
        if self.api not in ("chat", "harmony"):
            raise InvalidInput(f"Expected api in ('chat', 'harmony'), got {self.api!r}")
        if self.length_retry_tokens < 0:
            raise InvalidInput(f"Expected length_retry_tokens >= 0, got {self.length_retry_tokens}")
        if self.read_window < 0 or self.retries < 0:
            raise InvalidInput(f"Expected read_window >= 0 and retries >= 0, got {self.read_window}, {self.retries}")
        if self.max_wall_s <= 0 or self.timeout_s <= 0:
            raise InvalidInput(f"Expected max_wall_s > 0 and timeout_s > 0, got {self.max_wall_s}, {self.timeout_s}")


__all__ = ["AgentConfig", "FloorConfig", "HeuristicConfig"]
