"""OpenAI-compatible chat completions with tools (vLLM, llama.cpp server, OpenAI...), over httpx.

Transient failures (timeouts, connection errors, 429 and 5xx) are retried with exponential
back-off; anything else, or the last failure, raises :class:`~sieve.errors.BackendError`,
which the loop turns into ``stop_reason="backend_error"``. Servers that return tool calls as
text in ``content`` (small models, or vLLM without a tool parser) go through the lenient parser.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from sieve.agent.backends.base import ChatResult, ParsedToolCall
from sieve.agent.backends.parsing import calls_in_text, parse_arguments
from sieve.errors import BackendError, InvalidInput

logger = logging.getLogger(__name__)

_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


def _render_raw(text: str, calls: list[ParsedToolCall]) -> str:
    parts = [text] if text else []
    for c in calls:
        body = {"name": c.name, "arguments": c.arguments if c.arguments is not None else c.raw}
        parts.append(f"<tool_call>{json.dumps(body, ensure_ascii=False)}</tool_call>")
    return "\n".join(parts)


class OpenAIBackend:
    """``POST {base_url}/chat/completions`` with ``tools``.

    Example:
        >>> backend = OpenAIBackend("http://127.0.0.1:8001/v1", "gpt-oss-20b")  # doctest: +SKIP
        >>> backend.chat([{"role": "user", "content": "hi"}], None).text  # doctest: +SKIP
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None, *, timeout: float = 120.0,
                 retries: int = 2, backoff_s: float = 0.5, extra_body: dict[str, Any] | None = None,
                 client: Any | None = None) -> None:
        import httpx

        if retries < 0:
            raise InvalidInput(f"Expected retries >= 0, got {retries}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.retries = retries
        self.backoff_s = backoff_s
        self.extra_body = dict(extra_body or {})
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client or httpx.Client(timeout=timeout, headers=headers)

    def close(self) -> None:
        self._client.close()

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, *, tool_choice: str = "auto",
             max_tokens: int = 512, temperature: float = 0.0) -> ChatResult:
        import httpx

        body: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": max_tokens,
                                "temperature": temperature, **self.extra_body}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = tool_choice
        url = f"{self.base_url}/chat/completions"
        last = "no attempt"
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                resp = self._client.post(url, json=body, timeout=self.timeout)
            except httpx.TimeoutException:
                last = f"a timeout after {self.timeout}s"
                logger.warning("Backend %s timed out (attempt %d/%d)", url, attempt + 1, self.retries + 1)
                continue
            except httpx.TransportError as exc:
                last = f"a connection error ({type(exc).__name__}: {exc})"
                logger.warning("Backend %s unreachable (attempt %d): %s", url, attempt + 1, exc)
                continue
            if resp.status_code in _RETRY_STATUS:
                last = f"HTTP {resp.status_code}: {resp.text[:300]}"
                continue
            if resp.status_code >= 400:
                raise BackendError(f"Expected HTTP 200 from {url}, got {resp.status_code}: {resp.text[:500]}")
            try:
                return self._result(resp.json())
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                last = f"a malformed response ({type(exc).__name__}: {exc}): {resp.text[:300]}"
                continue
        raise BackendError(f"Expected a chat completion from {url}, got {last} after {self.retries + 1} attempts")

    @staticmethod
    def _result(data: dict[str, Any]) -> ChatResult:
        choice = data["choices"][0]
        msg = choice["message"]
        text = msg.get("content") or ""
        calls: list[ParsedToolCall] = []
        for tc in msg.get("tool_calls") or []:
            fn = tc.get("function") or {}
            name = str(fn.get("name") or "")
            raw_args = fn.get("arguments")
            if isinstance(raw_args, dict):
                args: dict[str, Any] | None = raw_args
            else:
                args = parse_arguments(str(raw_args or ""))
            err = None if args is not None else f"Expected the arguments of {name} as a JSON object, got {str(raw_args)[:200]!r}"
            calls.append(ParsedToolCall(name=name, arguments=args, call_id=str(tc.get("id") or ""), raw=str(raw_args),
                                        error=err))
        text_out = text
        if not calls and text:
            calls, text_out = calls_in_text(text)
        usage = data.get("usage") or {}
        return ChatResult(text=text_out, tool_calls=calls, prompt_tokens=int(usage.get("prompt_tokens") or 0),
                          completion_tokens=int(usage.get("completion_tokens") or 0),
                          raw=text if not msg.get("tool_calls") else _render_raw(text, calls),
                          finish_reason=str(choice.get("finish_reason") or ""))


__all__ = ["OpenAIBackend"]
