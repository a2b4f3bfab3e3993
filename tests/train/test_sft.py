"""SFT data: per-turn examples aligned with what the LocalBackend renders.

The tiny end-to-end SFT run is in ``llm_training_cases.py`` (run in its own process).
"""

from __future__ import annotations

import pytest

from sieve.train.config import EpisodeConfig, split_tasks

EPISODE = EpisodeConfig(budget_tokens=1024, max_turns=2, search_k=2, search_tokens=256, max_new_tokens=48)


@pytest.fixture(scope="module")
def teacher_episodes(sample_index, sample_tasks):
    from sieve.train.llm.sft import WarmStartConfig, collect_teacher

    return collect_teacher(sample_index, sample_tasks[:2], WarmStartConfig(episode=EPISODE), progress=False)


def test_examples_match_the_served_prompt_and_teacher_calls(teacher_episodes, smollm2_dir) -> None:
    from transformers import AutoTokenizer

    from sieve.agent.backends.parsing import parse_tool_calls
    from sieve.agent.tool_specs import tool_specs
    from sieve.train.llm.chat_format import prompt_ids
    from sieve.train.llm.sft import trace_examples

    tok = AutoTokenizer.from_pretrained(str(smollm2_dir))
    tools = tool_specs()
    for _task, trace, recall in teacher_episodes:
        assert 0.0 <= recall <= 1.0
        examples = trace_examples(trace, tok, tools, max_length=8192)
        assert len(examples) == len(trace.turns)
        for ex, turn in zip(examples, trace.turns):
            served = prompt_ids(tok, turn.prompt_messages, tools)
            n = len(served)
            assert ex["input_ids"][:n] == served  # the prompt is exactly what LocalBackend feeds the model
            assert all(lab == -100 for lab in ex["labels"][:n]) and -100 not in ex["labels"][n:]
            target = tok.decode(ex["input_ids"][n:])
            assert target.endswith(tok.eos_token)  # the model learns to stop
            taught = [(c.name, c.arguments) for c in parse_tool_calls(target)]
            assert taught == [(c.name, c.arguments) for c in parse_tool_calls(turn.completion)]
    assert trace_examples(teacher_episodes[0][1], tok, tools, max_length=64) == []  # too long: dropped


def test_split_is_disjoint_and_deterministic(sample_tasks) -> None:
    a_train, a_held = split_tasks(sample_tasks, 0.2, seed=1)
    b_train, b_held = split_tasks(sample_tasks, 0.2, seed=1)
    assert [t["id"] for t in a_held] == [t["id"] for t in b_held] and len(a_held) == 3
    assert not {t["id"] for t in a_train} & {t["id"] for t in a_held}
    assert len(a_train) + len(a_held) == len(sample_tasks)
