"""TRL's log-prob tiles on a CPU: small enough that a training step of a small model stays small.

TRL scores log-probabilities (GRPO's and SFT's losses alike, through its fused lm head) in tiles
of ``TOKEN_CHUNK_SIZE`` (4,096) tokens x 32,768 vocabulary columns. Without Triton (every CPU) its
fallback folds a whole tile in torch with several float32 copies alive at once, ~512 MiB each at
4,096 tokens: a GRPO step of a 2-layer SmolLM2 peaked at 3.8 GB and its SFT run at 2.4 GB over
the process. Tiles of 512 tokens cap each copy at 64 MiB; the sums are the same, in more matmul calls.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    import torch

CPU_TOKEN_TILE = 512


@contextmanager
def cpu_logprob_tiles(device: torch.device) -> Iterator[None]:
    """On a CPU, TRL's token tile at most :data:`CPU_TOKEN_TILE` while the block runs (forward and backward).

    Example:
        >>> import torch
        >>> from trl.kernels import chunked_logprob
        >>> with cpu_logprob_tiles(torch.device("cpu")):
        ...     chunked_logprob.TOKEN_CHUNK_SIZE
        512
    """
    from trl.kernels import chunked_logprob

    before = chunked_logprob.TOKEN_CHUNK_SIZE
    if device.type == "cpu":
        chunked_logprob.TOKEN_CHUNK_SIZE = min(before, CPU_TOKEN_TILE)
    try:
        yield
    finally:
        chunked_logprob.TOKEN_CHUNK_SIZE = before


__all__ = ["CPU_TOKEN_TILE", "cpu_logprob_tiles"]
