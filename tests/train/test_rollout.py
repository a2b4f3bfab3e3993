"""Rollout generation: request batching across episode threads, and prefix-KV reuse that changes nothing."""

from __future__ import annotations

import threading

from sieve.train.llm.rollout import BatchedGenerator, GenParams


def test_batched_generator_serves_concurrent_requests_in_order() -> None:
    calls: list[int] = []

    def fake_batch_fn(batch, params):  # FAKE model: echoes the prompt reversed, records batch sizes
        calls.append(len(batch))
        return [(list(reversed(ids))[: params.max_new_tokens], None) for ids in batch]

    gen = BatchedGenerator(fake_batch_fn, max_batch=4, wait_s=0.05)
    results: dict[int, list[int]] = {}
    left = [6]
    lock = threading.Lock()

    def worker(i: int) -> None:
        results[i] = gen.generate([i, i + 1, i + 2], GenParams(max_new_tokens=2))[0]
        with lock:
            left[0] -= 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    gen.serve(lambda: left[0] == 0)
    for t in threads:
        t.join()
    assert results == {i: [i + 2, i + 1] for i in range(6)}
    assert sum(calls) == 6 and max(calls) > 1  # some requests were batched together


def test_batched_generator_hands_failures_to_the_episode() -> None:
    def broken(batch, params):
        raise RuntimeError("boom")

    gen = BatchedGenerator(broken, wait_s=0.01)
    err: list[BaseException] = []
    done = [False]

    def worker() -> None:
        try:
            gen.generate([1], GenParams())
        except RuntimeError as exc:
            err.append(exc)
        done[0] = True

    t = threading.Thread(target=worker)
    t.start()
    gen.serve(lambda: done[0])
    t.join()
    assert err and "boom" in str(err[0])


def test_prefix_cache_gives_the_same_greedy_tokens(tiny_model_dir) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from sieve.train.llm.rollout import HFGenerate

    tok = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)).eval()
    base = tok("The director of 2001: A Space Odyssey was born in", add_special_tokens=False)["input_ids"] * 8
    params = GenParams(max_new_tokens=6, temperature=0.0)
    cached = HFGenerate(model, tok, [tok.eos_token_id], min_prefix=8)
    cached.one(base, params)  # fills the cache
    longer = base + tok(" New York and", add_special_tokens=False)["input_ids"]
    branch = base[:40] + tok(" Paris", add_special_tokens=False)["input_ids"]
    for prompt in (longer, branch, base):
        fresh = HFGenerate(model, tok, [tok.eos_token_id]).one(prompt, params)[0]
        assert cached.one(prompt, params)[0] == fresh
    assert len(cached._cache) >= 2
