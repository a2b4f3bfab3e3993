"""How agent chat messages become model tokens: the one place train and serve must agree.

SFT examples, RL segments and the agent's :class:`~sieve.agent.backends.local.LocalBackend` must
render a turn identically (tool descriptions, ``<tool_call>`` markup, tool results, generation
prompt), or the policy is trained on a format it never sees when served. So nothing here
renders on its own: prompts come from ``LocalBackend.render`` itself, and an assistant target is
whatever the same template appends for that message (the rendered conversation minus the
rendered prompt).
"""

from __future__ import annotations

from typing import Any


def _backend(tokenizer: Any) -> Any:
    from sieve.agent.backends.local import LocalBackend

    # Rendering needs only the tokenizer; no model is loaded.
    return LocalBackend(None, tokenizer)


def render_prompt(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """The prompt text of one turn exactly as the LocalBackend renders it (generation prompt included)."""
    return _backend(tokenizer).render(messages, tools)


def prompt_ids(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> list[int]:
    """Token ids of :func:`render_prompt`, tokenized as the LocalBackend does (no added special tokens)."""
    return tokenizer(render_prompt(tokenizer, messages, tools), add_special_tokens=False)["input_ids"]


def render_conversation(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    """A whole conversation (ending with an assistant message) in the LocalBackend's format."""
    from sieve.agent.backends.local import _args_dict_msg, fold_tools

    backend = _backend(tokenizer)
    if backend.native_tools:
        try:
            return tokenizer.apply_chat_template(
                [_args_dict_msg(m) for m in messages], tools=tools, add_generation_prompt=False, tokenize=False
            )
        except Exception:  # noqa: BLE001 - same fallback as LocalBackend.render
            pass
    return tokenizer.apply_chat_template(fold_tools(messages, tools), add_generation_prompt=False, tokenize=False)


def assistant_target(
    tokenizer: Any, prompt_messages: list[dict[str, Any]], assistant: dict[str, Any], tools: list[dict[str, Any]] | None
) -> tuple[str, str]:
    """(prompt text, target text) for one turn: the target is what the template adds for ``assistant``,
    end-of-turn token included, so the model learns to stop.

    Raises:
        ValueError: if the template does not render the prompt as a prefix of the conversation.
    """
    prompt = render_prompt(tokenizer, prompt_messages, tools)
    full = render_conversation(tokenizer, [*prompt_messages, assistant], tools)
    if not full.startswith(prompt):
        raise ValueError(
            "Expected the rendered prompt to be a prefix of the rendered conversation, got a "
            "chat template that renders history differently; cannot build aligned SFT targets"
        )
    target = full[len(prompt) :]
    eos = tokenizer.eos_token or ""
    if eos and eos in target:  # keep the end-of-turn token, drop the template's trailing newline
        target = target[: target.rindex(eos) + len(eos)]
    return prompt, target


__all__ = ["assistant_target", "prompt_ids", "render_conversation", "render_prompt"]
