"""OpenAI-compatible chat completions with tools (vLLM, llama.cpp server, OpenAI...), over httpx.

Transient failures (timeouts, connection errors, 429 and 5xx) are retried with exponential
back-off; anything else, or the last failure, raises :class:`~sieve.core.errors.BackendError`,
which the loop turns into ``stop_reason="backend_error"``. Servers that return tool calls as
text in ``content`` (small models, or vLLM without a tool parser) go through the lenient parser.

A call made with a cancel token is aborted when the token fires: its socket is shut down, which
unblocks the waiting read at once and tells the model server (vLLM aborts a request whose client
left) to stop generating. For that each call opens its own connection (no keep-alive): a
connection costs well under a millisecond next to a generation, and only a connection made for
this call can be told apart from those of concurrent episodes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import time
from typing import TYPE_CHECKING, Any

from sieve.agent.backends.base import ChatResult, ParsedToolCall
from sieve.agent.backends.harmony import read_reply
from sieve.agent.backends.parsing import parse_arguments
from sieve.agent.cancel import Cancelled
from sieve.core.errors import BackendError, InvalidInput

if TYPE_CHECKING:
    from sieve.agent.cancel import CancelToken

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

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 120.0,
        retries: int = 2,
        backoff_s: float = 0.5,
        extra_body: dict[str, Any] | None = None,
        client: Any | None = None,
        reasoning_effort: str | None = None,
    ) -> None:
        import httpx

        if retries < 0:
            raise InvalidInput(f"Expected retries >= 0, got {retries}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.retries = retries
        self.backoff_s = backoff_s
        self.extra_body = dict(extra_body or {})
        self.reasoning_effort = reasoning_effort  # sent as ``reasoning_effort`` (gpt-oss, o-series) when set
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client or httpx.Client(
            timeout=timeout, headers=headers, limits=httpx.Limits(max_keepalive_connections=0)
        )

    def close(self) -> None:
        self._client.close()

    def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        tool_choice: str = "auto",
        max_tokens: int = 512,
        temperature: float = 0.0,
        cancel: CancelToken | None = None,
        reasoning_effort: str | None = None,
    ) -> ChatResult:
        """One completion; raises :class:`Cancelled` when ``cancel`` fires before or during the call.

        ``reasoning_effort`` overrides the backend's own for this call (an episode's setting).
        """
        import httpx

        url, body = self._request(
            messages,
            tools,
            tool_choice=tool_choice,
            max_tokens=max_tokens,
            temperature=temperature,
            reasoning_effort=reasoning_effort or self.reasoning_effort,
        )
        last = "no attempt"
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            if cancel is not None and cancel.cancelled:
                raise Cancelled(f"Cancelled ({cancel.reason}) before calling {url}")
            try:
                resp = self._post(url, body, cancel)
            except httpx.TransportError as exc:
                if cancel is not None and cancel.cancelled:
                    raise Cancelled(f"Cancelled ({cancel.reason}) during the call to {url}") from exc
                if isinstance(exc, httpx.TimeoutException):
                    last = f"a timeout after {self.timeout}s"
                    logger.warning("Backend %s timed out (attempt %d/%d)", url, attempt + 1, self.retries + 1)
                else:
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

    def _request(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        tool_choice: str,
        max_tokens: int,
        temperature: float,
        reasoning_effort: str | None,
    ) -> tuple[str, dict[str, Any]]:
        """The URL and JSON body of one chat completion."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            **self.extra_body,
        }
        if reasoning_effort:
            body["reasoning_effort"] = reasoning_effort
        if tools:
            body["tools"] = tools
            body["tool_choice"] = tool_choice
        return f"{self.base_url}/chat/completions", body

    def _post(self, url: str, body: dict[str, Any], cancel: CancelToken | None) -> Any:
        if cancel is None:
            return self._client.post(url, json=body, timeout=self.timeout)
        streams: list[Any] = []

        def abort() -> None:
            for stream in streams:
                sock = stream.get_extra_info("socket")
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)

        def trace(event: str, info: dict[str, Any]) -> None:
            # httpcore reports the connection it opened for this request; keep it to shut it down.
            if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
                streams.append(info["return_value"])
                if cancel.cancelled:  # cancelled while connecting
                    abort()

        undo = cancel.on_cancel(abort)
        try:
            return self._client.post(url, json=body, timeout=self.timeout, extensions={"trace": trace})
        finally:
            undo()

    def _result(self, data: dict[str, Any]) -> ChatResult:
        choice = data["choices"][0]
        msg = choice["message"]
        text = msg.get("content") or ""
        # vLLM's reasoning parsers write ``reasoning_content`` (newer versions, Ollama and others ``reasoning``).
        field = next((f for f in ("reasoning_content", "reasoning") if msg.get(f)), "reasoning_content")
        reasoning = str(msg.get(field) or "")
        calls: list[ParsedToolCall] = []
        for tc in msg.get("tool_calls") or []:
            fn = tc.get("function") or {}
            name = str(fn.get("name") or "")
            raw_args = fn.get("arguments")
            if isinstance(raw_args, dict):
                args: dict[str, Any] | None = raw_args
            else:
                args = parse_arguments(str(raw_args or ""))
            err = (
                None
                if args is not None
                else f"Expected the arguments of {name} as a JSON object, got {str(raw_args)[:200]!r}"
            )
            calls.append(
                ParsedToolCall(name=name, arguments=args, call_id=str(tc.get("id") or ""), raw=str(raw_args), error=err)
            )
        text_out = text
        if not calls and text:  # calls written as text: harmony (gpt-oss without a tool parser) or any other shape
            reply = read_reply(text)
            calls, text_out = reply.calls, reply.text
            reasoning = reasoning or reply.reasoning
        usage = data.get("usage") or {}
        return ChatResult(
            text=text_out,
            tool_calls=calls,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            raw=text if not msg.get("tool_calls") else _render_raw(text, calls),
            finish_reason=str(choice.get("finish_reason") or ""),
            reasoning=reasoning,
            reasoning_field=field,
        )


class HarmonyCompletionsBackend(OpenAIBackend):
    """gpt-oss through a raw ``POST {base_url}/completions``: Sieve renders the harmony prompt itself.

    For servers that run gpt-oss without a chat template or tool parser (a plain completion
    endpoint: vLLM's, llama.cpp's): the conversation and tools are rendered with ``openai-harmony``
    (:func:`~sieve.agent.backends.harmony.render_harmony`) and sent as token ids, generation stops at
    harmony's ``<|call|>`` / ``<|return|>``, and the reply is parsed with its special tokens when the
    server keeps them (``skip_special_tokens: false`` is asked for; vLLM honours it), else from the
    stripped text.

    Example:
        >>> backend = HarmonyCompletionsBackend("http://127.0.0.1:8001/v1", "gpt-oss-20b")  # doctest: +SKIP
    """

    def _request(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        *,
        tool_choice: str,
        max_tokens: int,
        temperature: float,
        reasoning_effort: str | None,
    ) -> tuple[str, dict[str, Any]]:
        from sieve.agent.backends.harmony import render_harmony, stop_token_ids

        body: dict[str, Any] = {
            "model": self.model,
            "prompt": render_harmony(messages, tools, reasoning_effort=reasoning_effort),
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stop_token_ids": stop_token_ids(),  # vLLM; servers without it stop at the model's end of turn
            "skip_special_tokens": False,
            **self.extra_body,
        }
        return f"{self.base_url}/completions", body

    def _result(self, data: dict[str, Any]) -> ChatResult:
        choice = data["choices"][0]
        text = str(choice.get("text") or "")
        reply = read_reply(text)
        usage = data.get("usage") or {}
        return ChatResult(
            text=reply.text,
            tool_calls=reply.calls,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            raw=text,
            finish_reason=str(choice.get("finish_reason") or ""),
            reasoning=reply.reasoning,
        )


__all__ = ["HarmonyCompletionsBackend", "OpenAIBackend"]
