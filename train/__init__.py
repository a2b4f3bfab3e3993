"""Retraining on any corpus: task synthesis, recall rewards, SFT warm start and GRPO over the Sieve harness.

Submodules load lazily (torch / TRL only when training actually runs):
``sieve.train.rewards``, ``sieve.train.synth``, ``sieve.train.llm.sft``, ``sieve.train.llm.rl``, ``sieve.train.pipeline``.
"""

__all__: list[str] = []
