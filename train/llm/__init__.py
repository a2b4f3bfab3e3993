"""The LLM training route: SFT warm start, then GRPO over the Sieve harness (TRL), its rollouts and held-out checks.

Modules: ``sft`` (teacher trajectories -> ``SFTTrainer``), ``rl`` (``sieve train rl --policy llm``),
``grpo`` (the per-turn ``GRPOTrainer`` subclass), ``rollout``/``vllm_rollout`` (generation),
``chat_format`` (messages -> tokens), ``heldout`` (checks on unseen tasks), ``learning_check``
(the CPU script). The learned policy's route is :mod:`sieve.train.learned`.
"""

__all__: list[str] = []
