"""TRL's log-prob tiles on CPU (GRPO and SFT). The training runs themselves are in ``llm_training_cases.py`` (own process)."""

from __future__ import annotations


def test_logprob_tiles_are_capped_on_cpu_only_while_a_step_runs():
    """TRL's 4,096-token lm-head tiles (512 MiB float32 copies on CPU) are cut for the step and restored after."""
    import torch
    from trl.kernels import chunked_logprob

    from sieve.train.llm.trl_tiles import CPU_TOKEN_TILE, cpu_logprob_tiles

    before = chunked_logprob.TOKEN_CHUNK_SIZE
    assert before > CPU_TOKEN_TILE
    with cpu_logprob_tiles(torch.device("cpu")):
        assert chunked_logprob.TOKEN_CHUNK_SIZE == CPU_TOKEN_TILE
    assert chunked_logprob.TOKEN_CHUNK_SIZE == before
    with cpu_logprob_tiles(torch.device("meta")):  # a GPU keeps TRL's own tile
        assert chunked_logprob.TOKEN_CHUNK_SIZE == before
