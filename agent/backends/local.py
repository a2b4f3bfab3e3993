"""In-process transformers backend for small local models (SmolLM2, Qwen2.5-Coder) on CPU.

The chat template renders the tools when it supports them (Qwen's does); otherwise (SmolLM2's
plain ChatML) the tool schemas and the expected ``<tool_call>`` format are written into the
system message, assistant tool calls are rendered as ``<tool_call>`` text and tool results as
user messages. Whatever the model writes goes through the lenient parser.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from threading import Lock
from typing import TYPE_CHECKING, Any

from sieve.agent.backends.base import ChatResult
from sieve.agent.backends.harmony import Reply, has_special_tokens, is_harmony, read_reply
from sieve.agent.backends.parsing import calls_in_text, parse_arguments
from sieve.agent.cancel import Cancelled
from sieve.core.errors import BackendError, ModelUnavailable
from sieve.core.runtime import prepare_runtime

if TYPE_CHECKING:
    from sieve.agent.cancel import CancelToken

logger = logging.getLogger(__name__)

TOOL_FORMAT = (
    "To call a tool, write one line per call:\n"
    '<tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>\n'
    "Available tools (JSON schemas):\n"
)


def _args_dict(call: dict[str, Any]) -> dict[str, Any]:
    fn = dict(call.get("function") or {})
    args = fn.get("arguments")
    if isinstance(args, str):
        fn["arguments"] = parse_arguments(args) or {}
    return {**call, "function": fn}


def fold_tools(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Messages for a template without tool support: plain roles and string contents only."""
    out: list[dict[str, Any]] = []
    spec = ""
    if tools:
        spec = TOOL_FORMAT + "\n".join(json.dumps(t["function"], ensure_ascii=False) for t in tools)
    for m in messages:
        role, content = m.get("role", "user"), str(m.get("content") or "")
        if role == "assistant" and m.get("tool_calls"):
            calls = [
                json.dumps(
                    {"name": c["function"]["name"], "arguments": _args_dict(c)["function"]["arguments"]},
                    ensure_ascii=False,
                )
                for c in m["tool_calls"]
            ]
            content = "\n".join([content] * bool(content) + [f"<tool_call>{c}</tool_call>" for c in calls])
        elif role == "tool":
            role, content = "user", f"<tool_response name={m.get('name', '')}>\n{content}\n</tool_response>"
        out.append({"role": role, "content": content})
    if spec:
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{spec}"}
        else:
            out.insert(0, {"role": "system", "content": spec})
    return out


class LocalBackend:
    """A causal LM and its tokenizer, generating on CPU. Build with :meth:`load`.

    Generation holds a lock: two threads sharing one model on two cores are not faster, and
    fused rollouts then simply take turns.
    """

    def __init__(self, model: Any, tokenizer: Any, *, name: str = "local", max_context: int = 8192) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.max_context = max_context
        template = getattr(tokenizer, "chat_template", None) or ""
        self.native_tools = "tools" in template  # Qwen-style templates render the tool list themselves
        self._lock = Lock()

    @classmethod
    def load(
        cls, path: str | Path, *, dtype: str = "float32", threads: int | None = None, max_context: int | None = None
    ) -> LocalBackend:
        """Load an HF model folder (use :func:`~sieve.agent.backends.models.smollm2_path` for the default)."""
        path = Path(path)
        if not (path / "config.json").is_file():
            raise ModelUnavailable(f"Expected an HF model folder with config.json, got {str(path)!r}")
        prepare_runtime()
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if threads:
            torch.set_num_threads(threads)
        tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(
            str(path), local_files_only=True, dtype=torch.bfloat16 if dtype == "bfloat16" else torch.float32
        )
        model.eval()
        ctx = max_context or int(getattr(model.config, "max_position_embeddings", 8192) or 8192)
        return cls(model, tok, name=path.name, max_context=ctx)

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        """The prompt text exactly as the model will see it."""
        if self.native_tools:
            msgs = [(_args_dict_msg(m)) for m in messages]
            try:
                return self.tokenizer.apply_chat_template(msgs, tools=tools, add_generation_prompt=True, tokenize=False)
            except Exception as exc:  # template quirks: fall back to the folded form every template accepts
                logger.debug("Native tool template failed (%s); folding tools into the prompt", exc)
        return self.tokenizer.apply_chat_template(
            fold_tools(messages, tools), add_generation_prompt=True, tokenize=False
        )

    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        tool_choice: str = "auto",
        max_tokens: int = 512,
        temperature: float = 0.0,
        cancel: CancelToken | None = None,
    ) -> ChatResult:
        """One completion; with ``cancel``, generation stops at the next token once it fires (:class:`Cancelled`)."""
        import torch

        try:
            prompt = self.render(messages, tools)
        except Exception as exc:
            raise BackendError(f"Expected messages the chat template of {self.name} can render, got {exc}") from exc
        ids = self.tokenizer(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"]
        room = self.max_context - max_tokens
        if ids.shape[1] > room:
            logger.warning(
                "Prompt of %d tokens exceeds %s's context; keeping the last %d", ids.shape[1], self.name, room
            )
            ids = ids[:, -room:]
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_tokens,
            "do_sample": temperature > 0,
            "pad_token_id": self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
        }
        if temperature > 0:
            kwargs.update(temperature=temperature, top_p=0.95)
        if cancel is not None:
            kwargs["stopping_criteria"] = _stop_on(cancel)
        with self._lock, torch.inference_mode():
            if cancel is not None and cancel.cancelled:  # waited for the lock while the client left
                raise Cancelled(f"Cancelled ({cancel.reason}) before generating")
            out = self.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), **kwargs)
        if cancel is not None and cancel.cancelled:
            raise Cancelled(f"Cancelled ({cancel.reason}) while generating")
        new = out[0, ids.shape[1] :]
        # Parsed before any special token is stripped: a harmony (gpt-oss) turn is delimited by them.
        kept = self.tokenizer.decode(new, skip_special_tokens=False)
        if is_harmony(kept) and has_special_tokens(kept):
            text, reply = kept, read_reply(kept)
        else:
            text = self.tokenizer.decode(new, skip_special_tokens=True)
            calls, shown = calls_in_text(text)
            reply = Reply(calls=calls, text=shown)
        return ChatResult(
            text=reply.text,
            tool_calls=reply.calls,
            prompt_tokens=int(ids.shape[1]),
            completion_tokens=int(new.shape[0]),
            raw=text,
            finish_reason="length" if new.shape[0] >= max_tokens else "stop",
            reasoning=reply.reasoning,
        )


def _stop_on(cancel: CancelToken) -> Any:
    """A transformers stopping criterion that ends generation once ``cancel`` fires."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    class _Cancelled(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            return torch.full((input_ids.shape[0],), cancel.cancelled, dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([_Cancelled()])


def _args_dict_msg(m: dict[str, Any]) -> dict[str, Any]:
    """Tool-call arguments as dicts (templates apply ``tojson`` to them), contents as strings, reasoning as ``thinking``."""
    out = {**m, "content": str(m.get("content") or "")}
    reasoning = m.get("reasoning_content") or m.get("reasoning")
    if reasoning:  # gpt-oss's template reads an assistant turn's reasoning as `thinking` (Qwen3's as reasoning_content)
        out["thinking"] = reasoning
    if m.get("tool_calls"):
        out["tool_calls"] = [_args_dict(c) for c in m["tool_calls"]]
    return out


__all__ = ["LocalBackend", "fold_tools"]
