"""Context pruning: the episode's context state, the token budget and pluggable pruners."""

from pruning.budget import TokenBudget
from pruning.config import PruningConfig
from pruning.context import ChunkEntry, ContextState, Message, render_chunk
from pruning.pruners import BudgetPressurePruner, ModelPruner, Pruner, ScoreThresholdPruner, make_pruner
from pruning.tokens import ApproxTokenCounter, HFTokenCounter, TokenCounter, count_messages

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
