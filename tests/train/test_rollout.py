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


def test_recording_backend_parses_a_harmony_turn_before_special_tokens_are_stripped(monkeypatch) -> None:
    """A gpt-oss rollout turn, its ids rendered by openai-harmony; the FAKE tokenizer decodes with the same encoding."""
    import openai_harmony as oh

    from sieve.agent.backends.harmony_vocab import harmony_encoding
    from sieve.train.llm import rollout

    enc = harmony_encoding()
    turn = [
        oh.Message.from_role_and_content(oh.Role.ASSISTANT, "Search Lindbergh.").with_channel("analysis"),
        oh.Message.from_role_and_content(oh.Role.ASSISTANT, '{"query": "Lindbergh"}')
        .with_channel("commentary")
        .with_recipient("functions.search")
        .with_content_type("<|constrain|>json"),
    ]
    ids = enc.render_conversation(oh.Conversation.from_messages(turn))[2:]  # after <|start|>assistant

    class FakeTokenizer:  # FAKE: decodes o200k_harmony ids, as gpt-oss's own tokenizer would
        def decode(self, tokens, skip_special_tokens=False):
            kept = [t for t in tokens if not (skip_special_tokens and enc.is_special_token(t))]
            return enc.decode_utf8(kept)

    class FakeGenerator:  # FAKE model: writes the rendered turn
        def generate(self, prompt, params):
            return list(ids), [0.0] * len(ids)

    monkeypatch.setattr(rollout, "render_prompt_ids", lambda tokenizer, messages, tools: [1, 2, 3])
    backend = rollout.RecordingBackend(FakeTokenizer(), FakeGenerator(), GenParams(), eos_ids=[ids[-1]])
    res = backend.chat([{"role": "user", "content": "q"}], None)
    assert [(c.name, c.arguments) for c in res.tool_calls] == [("search", {"query": "Lindbergh"})]
    assert res.reasoning == "Search Lindbergh." and "<|channel|>" in res.raw
    assert backend.segments[0].completion_ids == list(ids)
