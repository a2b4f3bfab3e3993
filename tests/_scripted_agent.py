"""A real model for the real-inference-server tests: a tiny Llama TRAINED TO FOLLOW A TOOL SCRIPT.

Not a capable model, and not SmolLM2's weights: a 2-layer, 64-wide Llama that reads and writes with
SmolLM2-135M-Instruct's tokenizer, trained here from random weights (CPU, once, then cached) until
greedy decoding reproduces one script on the tests' three-document corpus:

    turn 1  <think>…</think> <tool_call>search</tool_call>
    turn 2  <think>…</think> <tool_call>prune c2</tool_call>   (after a search result)
    turn 3  <tool_call>read c1</tool_call>                     (after the prune's result)
    turn 4  <tool_call>finish c1, "See [c1]."</tool_call>      (after the read's result)

What it writes depends on the conversation it is given (the last tool result), and nothing else
decides it: the real server (``transformers serve``) renders the chat, runs ``generate`` and parses
the ``<think>`` / ``<tool_call>`` text into ``reasoning_content`` and ``tool_calls``
(:data:`RESPONSE_TEMPLATE`); Sieve's OpenAI backend, loop, budget and prune do the rest. It answers
only the questions in :data:`QUESTIONS`; any other conversation gets whatever it happens to write.

Why not fine-tune SmolLM2 itself: one forward and backward pass over four 300-token prompts took 62 s on
the 2-core reference machine, and each served turn would take seconds; this model trains in about a
minute there and answers a turn in a fraction of a second. Its output layer is zero outside the ~50
tokens the script uses (trained against a constant zero logit standing for all the others), so those
rows cost nothing to train and can never win the greedy choice.

The training conversations are recorded from Sieve's real loop (a scripted backend in place of the
server), rendered exactly as the server renders a request (its own message conversion and this chat
template), so the cache key, a hash of this file and of the rendered examples, changes whenever
Sieve's prompts or tool results do. The build checks that greedy decoding reproduces every target
and fails loudly otherwise.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock

if TYPE_CHECKING:
    from sieve.agent.backends.base import ChatResult
    from sieve.retriever import CorpusIndex

logger = logging.getLogger(__name__)

QUESTIONS = (
    "What is the capital of France?",
    "What is the capital of Germany?",
    "What is the capital of Italy?",
)
# (tool, arguments, reasoning) per turn.
SCRIPT: tuple[tuple[str, dict[str, Any], str], ...] = (
    ("search", {"query": "capital city", "k": 2}, "Search the corpus first."),
    ("prune", {"ids": ["c2"]}, "c2 does not help: prune it."),
    ("read", {"id": "c1"}, ""),
    ("finish", {"ids": ["c1"], "answer": "See [c1]."}, ""),
)
ANSWER = SCRIPT[-1][1]["answer"]
REASONING = tuple(r for _, _, r in SCRIPT if r)

# ChatML (SmolLM2's turns) with Hermes-style tools: <tool_call>{json}</tool_call> out, <tool_response> in.
CHAT_TEMPLATE = """<|im_start|>system
{% if messages and messages[0].role == 'system' %}{{ messages[0].content }}{% endif %}
{%- if tools %}
<tools>
{% for tool in tools %}{{ tool.function.name }}({{ (tool.function.parameters.required or []) | join(', ') }})
{% endfor %}</tools>
Call a tool as <tool_call>
{"name": ..., "arguments": {...}}
</tool_call>
{%- endif %}<|im_end|>
{% for message in messages if message.role != 'system' %}
{%- if message.role == 'tool' %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% elif message.role == 'assistant' %}<|im_start|>assistant
{% if message.reasoning_content %}<think>
{{ message.reasoning_content }}
</think>
{% endif %}{{ message.content or '' }}
{%- for call in message.tool_calls or [] %}<tool_call>
{{ {"name": call.function.name, "arguments": call.function.arguments} | tojson }}
</tool_call>{% endfor %}<|im_end|>
{% else %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""

# How `transformers serve` parses a reply (the tokenizer's `response_template`): the shape it uses for
# Qwen's ChatML, which this template shares: <think> is reasoning_content, each <tool_call> a JSON call.
RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
        "tool_calls": {
            "open_pattern": r"\s*<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"\s*(?:<\|im_end\|>|<\|endoftext\|>)", "content": "text"},
    },
}

SEED = 0
HIDDEN = 64
LAYERS = 2
LR = 1e-2
WARM_TAIL = 160  # phase 1 trains on the prompts' last tokens only (cheap); phase 2 on whole prompts
MAX_STEPS = 300
MIN_MARGIN = 1.0  # the right token's logit must beat every other by this much, so float noise cannot flip it
EOS_ID = 2  # <|im_end|> in SmolLM2's vocabulary


class ScriptedBackend:
    """SCRIPTED: replies with :data:`SCRIPT`'s next turn, recording what the loop sent (for training data).

    ``model`` names the folder whose tokenizer the budget counts with, as ``SIEVE_OPENAI_MODEL`` will.
    """

    def __init__(self, model: str) -> None:
        self.model = model
        self.requests: list[tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = []

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, **_: Any) -> ChatResult:
        from sieve.agent.backends.base import ChatResult, ParsedToolCall

        name, args, reasoning = SCRIPT[len(self.requests)]
        self.requests.append((copy.deepcopy(messages), copy.deepcopy(tools)))
        call = ParsedToolCall(name=name, arguments=dict(args), call_id=f"call_{len(self.requests)}")
        return ChatResult(text="", tool_calls=[call], reasoning=reasoning)


def _save_tokenizer(smollm2_dir: Path, dest: Path) -> Any:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(smollm2_dir))
    tok.chat_template = CHAT_TEMPLATE
    tok.response_template = RESPONSE_TEMPLATE
    tok.save_pretrained(dest)
    return tok


def record_episodes(index: CorpusIndex, model_dir: Path) -> list[list[tuple[list[dict[str, Any]], Any]]]:
    """Each question's requests, as Sieve's loop sends them when the model follows the script."""
    from sieve.agent import AgentConfig, SearchAgent, make_policy

    episodes = []
    for question in QUESTIONS:
        backend = ScriptedBackend(str(model_dir))
        config = AgentConfig(base_url="http://127.0.0.1:9/unused", model=str(model_dir))
        trace = SearchAgent(index, make_policy("openai", config, backend=backend), config).run(question)
        if trace.stop_reason != "finished" or len(backend.requests) != len(SCRIPT):
            raise RuntimeError(f"Expected the script to finish in {len(SCRIPT)} turns, got {trace.stop_reason}")
        episodes.append(backend.requests)
    return episodes


def training_examples(tok: Any, episodes: list[list[tuple[list[dict[str, Any]], Any]]]) -> list[tuple[list, list]]:
    """(prompt ids, target ids) per turn: the prompt as ``transformers serve`` renders the request, the
    target the script's reply as the chat template writes an assistant turn, ending at ``<|im_end|>``."""
    from transformers.cli.serving.utils import BaseHandler, Modality

    examples = []
    for requests in episodes:
        for (messages, tools), (name, args, reasoning) in zip(requests, SCRIPT):
            # The server's own conversion of OpenAI messages (it drops reasoning_content, parses arguments).
            chat = BaseHandler.get_processor_inputs_from_messages(messages, Modality.LLM)
            tools = BaseHandler._normalize_tools(tools)
            prompt = tok.apply_chat_template(chat, tools=tools, add_generation_prompt=True, tokenize=False)
            call = {"type": "function", "function": {"name": name, "arguments": args}}
            reply = {"role": "assistant", "content": "", "reasoning_content": reasoning, "tool_calls": [call]}
            full = tok.apply_chat_template([*chat, reply], tools=tools, tokenize=False)
            if not full.startswith(prompt):
                raise RuntimeError("Expected the chat template to render a reply after its generation prompt")
            ids = tok.apply_chat_template(
                chat, tools=tools, add_generation_prompt=True, tokenize=True, return_dict=True
            )
            target = tok(full[len(prompt) :].rstrip("\n"), add_special_tokens=False)["input_ids"]
            if target[-1] != EOS_ID:
                raise RuntimeError(f"Expected the reply to end with <|im_end|>, got token {target[-1]}")
            examples.append((list(ids["input_ids"]), list(target)))
    return examples


def recipe_key(examples: list[tuple[list, list]]) -> str:
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(json.dumps(examples).encode())
    return h.hexdigest()[:16]


def _batch(examples: list[tuple[list, list]], vocab: list[int]) -> dict[str, Any]:
    import torch

    index = {t: i for i, t in enumerate(vocab)}
    width = max(len(p) + len(t) for p, t in examples)
    ids = torch.full((len(examples), width), EOS_ID)
    mask = torch.zeros((len(examples), width), dtype=torch.long)
    rows, cols, labels = [], [], []
    for b, (prompt, target) in enumerate(examples):
        seq = prompt + target
        ids[b, : len(seq)] = torch.tensor(seq)
        mask[b, : len(seq)] = 1
        for j, token in enumerate(target):  # position len(prompt)+j-1 predicts target[j]
            rows.append(b)
            cols.append(len(prompt) + j - 1)
            labels.append(index[token])
    return {"ids": ids, "mask": mask, "rows": torch.tensor(rows), "cols": torch.tensor(cols), "labels": labels}


def _fit(model: Any, opt: Any, examples: list[tuple[list, list]], vocab: list[int], max_steps: int) -> int:
    """Train until every target token wins the greedy choice by :data:`MIN_MARGIN`; returns the steps taken."""
    import torch

    batch = _batch(examples, vocab)
    labels = torch.tensor(batch["labels"])
    out_rows = torch.tensor(vocab)
    for step in range(1, max_steps + 1):
        hidden = model.model(input_ids=batch["ids"], attention_mask=batch["mask"]).last_hidden_state
        logits = hidden[batch["rows"], batch["cols"]] @ model.lm_head.weight[out_rows].T
        # One constant zero logit for every token outside the script's vocabulary (their rows are zeroed).
        logits = torch.cat([logits, torch.zeros(len(labels), 1)], dim=1)
        loss = torch.nn.functional.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            right = logits.gather(1, labels[:, None]).squeeze(1)
            others = logits.scatter(1, labels[:, None], float("-inf")).max(1).values
            if (right - others).min().item() >= MIN_MARGIN:
                return step
    return max_steps


def train(examples: list[tuple[list, list]]) -> tuple[Any, dict[str, Any]]:
    """A fresh tiny Llama trained on ``examples``; returns it and what the training took."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    config = LlamaConfig(
        vocab_size=49152, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=LAYERS,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=8192, tie_word_embeddings=False,
        bos_token_id=1, eos_token_id=EOS_ID, pad_token_id=EOS_ID,
    )  # fmt: skip
    model = LlamaForCausalLM(config)
    vocab = sorted({t for _, target in examples for t in target})
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.0)
    model.train()
    warm = _fit(model, opt, [(p[-WARM_TAIL:], t) for p, t in examples], vocab, MAX_STEPS)
    full = _fit(model, opt, examples, vocab, MAX_STEPS)
    with torch.no_grad():
        keep = torch.zeros(config.vocab_size, dtype=torch.bool)
        keep[torch.tensor(vocab)] = True
        model.lm_head.weight[~keep] = 0.0
    model.eval()
    return model, {"steps_tail": warm, "steps_full": full, "output_tokens": len(vocab)}


def verify(model: Any, examples: list[tuple[list, list]]) -> None:
    """Greedy decoding of every prompt must give its target exactly."""
    import torch

    for prompt, target in examples:
        out = model.generate(
            torch.tensor([prompt]), max_new_tokens=len(target) + 8, do_sample=False, eos_token_id=EOS_ID,
            pad_token_id=EOS_ID,
        )  # fmt: skip
        got = out[0, len(prompt) :].tolist()
        if got != target:
            raise RuntimeError(f"Expected the trained model to reproduce its script, got {got} for {target}")


def scripted_agent_model(index: CorpusIndex, smollm2_dir: Path, cache_dir: Path) -> Path:
    """The model folder (``transformers serve`` can load it), built once per recipe under ``cache_dir``.

    ``index`` must hold the tests' three documents (``live_server.TINY_DOCS``), indexed from nothing
    else: the training conversations are recorded on it.
    """
    cache_dir.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".scripted-agent-", dir=cache_dir))
    try:
        started = time.perf_counter()
        tok = _save_tokenizer(smollm2_dir, stage)
        examples = training_examples(tok, record_episodes(index, stage))
        dest = cache_dir / f"scripted-agent-{recipe_key(examples)}"
        with FileLock(str(cache_dir / f".{dest.name}.lock")):
            if (dest / "config.json").exists():
                return dest
            model, info = train(examples)
            verify(model, examples)
            model.save_pretrained(stage)
            info["build_s"] = round(time.perf_counter() - started, 1)
            (stage / "recipe.json").write_text(json.dumps({**info, "questions": QUESTIONS, "script": SCRIPT}))
            stage.chmod(0o755)
            stage.rename(dest)
            logger.info("Trained the scripted agent model in %.1f s: %s", info["build_s"], dest)
            return dest
    finally:
        shutil.rmtree(stage, ignore_errors=True)


__all__ = ["ANSWER", "QUESTIONS", "REASONING", "SCRIPT", "ScriptedBackend", "scripted_agent_model"]
