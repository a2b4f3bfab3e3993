"""Context pruning: the episode's context state, the token budget and pluggable pruners."""

from sieve.pruning.budget import TokenBudget
from sieve.pruning.config import PruningConfig
from sieve.pruning.context import ChunkEntry, ContextState, Message, render_chunk
from sieve.pruning.pruners import BudgetPressurePruner, ModelPruner, Pruner, ScoreThresholdPruner, make_pruner
from sieve.pruning.tokens import ApproxTokenCounter, HFTokenCounter, TokenCounter, count_messages

__all__ = [
    "ApproxTokenCounter",
    "BudgetPressurePruner",
    "ChunkEntry",
    "ContextState",
    "HFTokenCounter",
    "Message",
    "ModelPruner",
    "Pruner",
    "PruningConfig",
    "ScoreThresholdPruner",
    "TokenBudget",
    "TokenCounter",
    "count_messages",
    "make_pruner",
    "render_chunk",
]
