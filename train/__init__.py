"""Retraining on any corpus: task synthesis, recall rewards, SFT warm start and GRPO over the Sieve harness.

Submodules load lazily (torch / TRL only when training actually runs):
``train.rewards``, ``train.synth``, ``train.sft``, ``train.rl``, ``train.pipeline``.
"""

__all__: list[str] = []
