"""RL rollouts through the real Sieve harness, recording the exact tokens of every turn.

An episode is run by :class:`sieve.agent.SearchAgent` with an :class:`sieve.agent.policies.llm.LLMPolicy`
whose backend is a :class:`RecordingBackend`: it renders each turn's (pruned) view with
:mod:`sieve.train.llm.chat_format`, samples from the model being trained, and records one
:class:`Segment` per turn: the prompt ids exactly as the model saw them and the sampled
completion ids. Tools run for real against the retriever and pruning is live, so the context
is not one growing sequence; per-turn segments are what :mod:`sieve.train.llm.rl` trains on.

Episodes of a batch run in threads (tools and retrieval overlap); their generation requests are
served by one :class:`BatchedGenerator` on the calling thread, which pads concurrent requests
into one ``generate`` call (the model, and any accelerate/DeepSpeed wrapper, is touched by one
thread only).
"""

from __future__ import annotations

import logging
import queue
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sieve.train.llm.chat_format import prompt_ids as render_prompt_ids

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sieve.agent.config import AgentConfig
    from sieve.agent.trace import Trace
    from sieve.retriever.index import CorpusIndex

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class GenParams:
    max_new_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0


@dataclass
class Segment:
    """One turn of one episode as training data."""

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float] | None = None  # sampling log-probs (vLLM), None with transformers generation
    truncated: bool = False  # hit max_new_tokens without an end-of-turn token


@dataclass
class Rollout:
    trace: Trace
    segments: list[Segment] = field(default_factory=list)


class BatchedGenerator:
    """Collects generation requests from episode threads; serves them in padded batches.

    Call :meth:`serve` on the thread that owns the model while the episodes run elsewhere;
    episode threads call :meth:`generate` and block until their batch is done.
    """

    def __init__(self, batch_fn: Any, max_batch: int = 16, wait_s: float = 0.02) -> None:
        self.batch_fn = batch_fn
        self.max_batch = max_batch
        self.wait_s = wait_s
        self._q: queue.Queue[tuple[list[int], GenParams, Future]] = queue.Queue()

    def generate(self, ids: list[int], params: GenParams) -> tuple[list[int], list[float] | None]:
        fut: Future = Future()
        self._q.put((ids, params, fut))
        return fut.result()

    def serve(self, done: Callable[[], bool]) -> None:
        """Serve requests until ``done()`` is true and the queue is empty."""
        while True:
            try:
                first = self._q.get(timeout=self.wait_s)
            except queue.Empty:
                if done():
                    return
                continue
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    batch.append(self._q.get(timeout=self.wait_s))
                except queue.Empty:
                    break
            # Requests with the same sampling parameters share a generate call.
            groups: dict[GenParams, list[tuple[list[int], GenParams, Future]]] = {}
            for item in batch:
                groups.setdefault(item[1], []).append(item)
            for params, items in groups.items():
                try:
                    outs = self.batch_fn([ids for ids, _, _ in items], params)
                except BaseException as exc:  # hand the failure to the waiting episodes  # noqa: BLE001
                    for _, _, fut in items:
                        fut.set_exception(exc)
                    continue
                for (_, _, fut), out in zip(items, outs):
                    fut.set_result(out)


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _crop_to(cache: Any, length: int) -> None:
    """Cut a KV cache to its first ``length`` positions (transformers 5: ``crop(-n)`` drops n)."""
    extra = cache.get_seq_length() - length
    if extra > 0:
        cache.crop(-extra)


class HFGenerate:
    """Samples from a transformers causal LM, one request at a time with prefix KV caching.

    Every prompt of a rollout batch starts with the same system prompt and tool schemas (~900
    tokens for SmolLM2), episodes of one group share their first prompt, and each turn extends
    the previous one up to the first pruned chunk; re-using the KV cache of the longest cached
    prefix skips most of the prefill, which dominates on CPU. Caches are valid for one set of
    weights only: build a new instance after every optimizer step.
    """

    def __init__(
        self, model: Any, tokenizer: Any, eos_ids: Sequence[int], *, max_cached: int = 8, min_prefix: int = 32
    ) -> None:
        self.model = model
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos_ids[0]
        self.eos = list(eos_ids)
        self.max_cached = max_cached
        self.min_prefix = min_prefix
        self._cache: list[tuple[list[int], Any]] = []  # (prompt ids, KV cache of exactly those ids), LRU last

    def __call__(self, batch: list[list[int]], params: GenParams) -> list[tuple[list[int], list[float] | None]]:
        return [self.one(ids, params) for ids in batch]

    def one(self, ids: list[int], params: GenParams) -> tuple[list[int], list[float] | None]:
        import copy

        import torch

        device = next(self.model.parameters()).device
        best, best_len = None, 0
        for entry in self._cache:
            n = _common_prefix(entry[0], ids)
            if n > best_len:
                best, best_len = entry, n
        kwargs: dict[str, Any] = {
            "do_sample": params.temperature > 0,
            "max_new_tokens": params.max_new_tokens,
            "pad_token_id": self.pad_id,
            "eos_token_id": self.eos,
            "return_dict_in_generate": True,
            "use_cache": True,
        }
        if params.temperature > 0:
            kwargs.update(temperature=params.temperature, top_p=params.top_p, top_k=0)
        use = min(best_len, len(ids) - 1)
        if best is not None and use >= self.min_prefix:
            past = copy.deepcopy(best[1])
            _crop_to(past, use)
            kwargs["cache"] = past
        x = torch.tensor([ids], device=device)
        with torch.no_grad():
            out = self.model.generate(input_ids=x, attention_mask=torch.ones_like(x), **kwargs)
        row = out.sequences[0, len(ids) :].tolist()
        cut = next((j for j, t in enumerate(row) if t in self.eos), None)
        completion = row[: cut + 1] if cut is not None else row
        cache = getattr(out, "cache", None)
        if cache is not None and hasattr(cache, "crop"):
            try:
                _crop_to(cache, len(ids))
            except RuntimeError:  # a sliding-window layer (gpt-oss) past its window cannot roll back: no reuse
                return completion, None
            self._cache.append((list(ids), cache))
            self._cache = self._cache[-self.max_cached :]
        return completion, None


class RecordingBackend:
    """A :class:`~sieve.agent.backends.base.ChatBackend` over a generator, recording each turn's tokens."""

    def __init__(self, tokenizer: Any, generator: BatchedGenerator, params: GenParams, eos_ids: Sequence[int]) -> None:
        self.tokenizer = tokenizer
        self.generator = generator
        self.params = params
        self.eos_ids = set(eos_ids)
        self.segments: list[Segment] = []

    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        tool_choice: str = "auto",
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> Any:
        from sieve.agent.backends.base import ChatResult
        from sieve.agent.backends.harmony import has_special_tokens, is_harmony, read_reply

        ids = render_prompt_ids(self.tokenizer, messages, tools)
        # The trainer's sampling settings win over the policy's (RL needs on-policy samples).
        params = GenParams(min(max_tokens, self.params.max_new_tokens), self.params.temperature, self.params.top_p)
        completion, logprobs = self.generator.generate(ids, params)
        truncated = not completion or completion[-1] not in self.eos_ids
        self.segments.append(Segment(ids, list(completion), logprobs, truncated))
        # Parsed before any special token is stripped: a harmony (gpt-oss) turn is delimited by them.
        kept = self.tokenizer.decode(completion, skip_special_tokens=False)
        if is_harmony(kept) and has_special_tokens(kept):
            reply = read_reply(kept)
            return ChatResult(
                text=reply.text,
                tool_calls=reply.calls,
                prompt_tokens=len(ids),
                completion_tokens=len(completion),
                raw=kept,
                finish_reason="length" if truncated else "stop",
                reasoning=reply.reasoning,
            )
        text = self.tokenizer.decode(completion, skip_special_tokens=True)
        return ChatResult(
            text=text,
            tool_calls=[],
            prompt_tokens=len(ids),
            completion_tokens=len(completion),
            raw=text,
            finish_reason="length" if truncated else "stop",
        )


def run_rollouts(
    index: CorpusIndex,
    questions: Sequence[str],
    agent_config: AgentConfig,
    tokenizer: Any,
    batch_fn: Any,
    params: GenParams,
    eos_ids: Sequence[int],
    *,
    workers: int = 4,
    seeds: Sequence[int] | None = None,
) -> list[Rollout]:
    """Run one episode per question (repeat a question for a group); returns traces + segments in order."""
    from sieve.agent.loop import SearchAgent
    from sieve.agent.policies.llm import LLMPolicy
    from sieve.pruning.tokens import HFTokenCounter

    # One recorded segment per turn is what GRPO trains on: a turn cut by max_new_tokens is not asked
    # again (the serving-time retry would record a second segment for it); it ends as "truncated".
    agent_config = replace(agent_config, length_retry_tokens=0)
    generator = BatchedGenerator(batch_fn, max_batch=max(1, workers))
    counter = HFTokenCounter(tokenizer)
    results: list[Rollout | None] = [None] * len(questions)
    remaining = [len(questions)]
    lock = threading.Lock()

    def one(i: int) -> None:
        backend = RecordingBackend(tokenizer, generator, params, eos_ids)
        policy = LLMPolicy(backend, agent_config, name="local", counter=counter)
        agent = SearchAgent(index, policy, agent_config)
        try:
            trace = agent.run(questions[i], seed=None if seeds is None else seeds[i])
            results[i] = Rollout(trace, backend.segments)
        finally:
            with lock:
                remaining[0] -= 1

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(one, i) for i in range(len(questions))]
        generator.serve(lambda: remaining[0] == 0)
        for f in futures:
            f.result()
    return [r for r in results if r is not None]


__all__ = ["BatchedGenerator", "GenParams", "HFGenerate", "RecordingBackend", "Rollout", "Segment", "run_rollouts"]
