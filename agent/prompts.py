"""The system prompt and first user message every policy's episode starts from.

The prompt's tool list is generated from the tool registry (:data:`sieve.agent.tool_specs.TOOLS`),
one line per tool, so a registered tool is described to the model with no edit here.
"""

from __future__ import annotations

from sieve.agent.config import AgentConfig
from sieve.agent.tool_specs import prompt_tool_list
from sieve.pruning.budget import share_words

_INTRO = "You are a search agent. Find the passages of the corpus that answer the user's question."
_GUIDE = """Chunks are shown as [c17] id=doc#0 | Title. Refer to chunks by their handle (c17).
Questions often need several hops: search for the first entity, read what you find, then search for the
entity it leads to. Call several tools in one turn when they are independent. After every turn you see
your context usage; past {soft_share} the budget, prune or finish. Call finish when you have the evidence."""


def system_prompt(config: AgentConfig | None = None) -> str:
    """The system prompt: what the agent is for, its tools (from the registry), how to work; the
    numbers it states (grep's chunks, the soft budget share) are ``config``'s (default: ``AgentConfig()``)."""
    config = config or AgentConfig()
    share = share_words(config.pruning.soft_fraction)
    guide = _GUIDE.replace("{soft_share}", share if share == "half" else f"{share} of")
    return f"{_INTRO}\n\nTools:\n{prompt_tool_list(config)}\n\n{guide}"


def question_message(question: str) -> str:
    return f"Question: {question}"


__all__ = ["question_message", "system_prompt"]
