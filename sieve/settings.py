"""The one reader of ``SIEVE_*`` environment variables: :class:`Settings`.

Library packages take plain dataclass configs (``RetrieverConfig``, ``AgentConfig``, ...) whose
defaults never look at the environment; ``Settings`` reads the environment once and builds them.
The CLI, the HTTP server and the public :class:`~sieve.Sieve` object all start here, so
``SIEVE_CHUNK_TOKENS`` means the same to ``sieve index`` as to ``Sieve().index()``. Command-line
flags and keyword arguments override the environment through :func:`load_settings`.

It lives beside the public API, not in ``server/``, because the library entry point needs it
too and must not import FastAPI (pydantic-settings is not FastAPI).

Example:
    >>> s = load_settings(data_dir="/tmp/sieve-example", chunk_tokens=128)
    >>> s.retriever_config().chunk_tokens, s.agent_config(k=3).k
    (128, 3)
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AliasChoices, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from sieve.agent.config import AgentConfig
from sieve.retriever.chunking import ChunkSplit
from sieve.core.choices import one_of
from sieve.core.defaults import DEFAULT_POLICY, MAX_K, MIN_BUDGET_TOKENS
from sieve.core.errors import InvalidInput
from sieve.retriever.config import RetrieverConfig

ENV_PREFIX = "SIEVE_"
# Fields renamed so that they no longer share a name with a config field of another meaning
# (RetrieverConfig.max_k, AgentConfig.api_key): their old variables are still read.
_OLD_VARIABLES = {"max_request_k": "SIEVE_MAX_K", "server_api_key": "SIEVE_API_KEY"}


def _renamed(name: str) -> AliasChoices:
    """The variables a renamed field reads: its own (``SIEVE_<NAME>``), then its old one."""
    return AliasChoices(f"{ENV_PREFIX}{name.upper()}", _OLD_VARIABLES[name])


def _from(config: type, name: str, **constraints: Any) -> Any:
    """A settings field whose default and description are the dataclass field ``config.name``'s (one home each)."""
    f = next(f for f in dataclasses.fields(config) if f.name == name)
    if f.default_factory is not dataclasses.MISSING:
        return Field(default_factory=f.default_factory, description=f.metadata.get("help"), **constraints)
    return Field(default=f.default, description=f.metadata.get("help"), **constraints)


def _policy_names() -> list[str]:
    from sieve.agent.factory import POLICIES  # the agent layer loads on first validation, not on import

    return list(POLICIES)


if TYPE_CHECKING:
    PolicyName = str
else:
    PolicyName = one_of(_policy_names)  # every registered policy (sieve.agent.factory.POLICIES)


class Settings(BaseSettings):
    """Every ``SIEVE_*`` variable (the README's Configuration table lists them; a test keeps it complete)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", populate_by_name=True)

    # Storage and retrieval
    data_dir: Path = _from(RetrieverConfig, "data_dir")
    chroma_url: str | None = _from(RetrieverConfig, "chroma_url")
    embedder: str = _from(RetrieverConfig, "embedder_path")
    embed_backend: Literal["torch", "onnx"] = _from(RetrieverConfig, "embed_backend")
    embed_dtype: Literal["auto", "float32", "bfloat16", "int8"] = _from(RetrieverConfig, "embed_dtype")
    device: Literal["auto", "cpu", "cuda"] = _from(RetrieverConfig, "device")
    model_dir: Path | None = _from(RetrieverConfig, "model_dir")
    chunk_tokens: int = _from(RetrieverConfig, "chunk_tokens")
    chunk_overlap: int = _from(RetrieverConfig, "chunk_overlap")
    chunk_split: ChunkSplit = _from(RetrieverConfig, "chunk_split")
    gitignore: bool = _from(RetrieverConfig, "gitignore")
    collection: str = Field(default="default", description="Collection used when none is named.")

    # HTTP server
    host: str = Field(default="127.0.0.1", description="`sieve serve` bind address.")
    port: int = Field(default=8000, description="`sieve serve` port.")
    workers: int = Field(
        default=1,
        ge=1,
        description="`sieve serve` worker processes; more than one needs a Chroma server (`SIEVE_CHROMA_URL`).",
    )
    server_api_key: str | None = Field(
        default=None,
        validation_alias=_renamed("server_api_key"),
        description="Bearer key this server requires on mutating endpoints (SIEVE_API_KEY is read too).",
    )
    require_auth: bool = Field(default=False, description="Require the API key on every endpoint but `/healthz`.")
    max_body_bytes: int = Field(default=8 * 1024 * 1024, ge=1024, description="Largest request body accepted (413).")
    max_request_k: int = Field(
        default=MAX_K,
        ge=1,
        validation_alias=_renamed("max_request_k"),
        description="Largest k (results per query) a request may ask for: of the HTTP API, `sieve search`, "
        "`sieve retrieve` and `Sieve` (SIEVE_MAX_K is read too).",
    )
    max_budget_tokens: int = Field(
        default=65536, ge=MIN_BUDGET_TOKENS, description="Largest agent token budget per request."
    )
    max_queries: int = Field(default=64, ge=1, description="Most queries in one Search-R1 /retrieve batch.")
    max_documents: int = Field(default=1000, ge=1, description="Most documents in one upsert request.")
    request_timeout_s: float = Field(default=60.0, gt=0, description="Per-request limit on blocking work (504).")
    preload: list[str] = Field(default_factory=list, description="Collections opened at start-up (others lazily).")
    mcp: bool = Field(default=True, description="Mount the MCP (streamable HTTP) endpoint at /mcp.")
    mcp_search: Literal["agent", "hybrid"] = Field(default="agent", description="What the MCP search tool runs.")
    public_url: str | None = Field(default=None, description="Base URL clients reach the server at (for links).")
    log_level: str = Field(default="info", description="uvicorn log level.")

    # Agent defaults (requests may lower budgets and k; never above the max_* caps)
    policy: PolicyName = Field(default=DEFAULT_POLICY, description="Default agent policy.")
    policy_path: str | None = Field(
        default=None, description="Checkpoint folder of the `learned` policy (default: the one shipped with Sieve)."
    )
    budget_tokens: int = _from(AgentConfig, "budget_tokens", ge=MIN_BUDGET_TOKENS)
    max_turns: int = _from(AgentConfig, "max_turns", ge=1)
    k: int = _from(AgentConfig, "k", ge=1)
    openai_base_url: str | None = Field(default=None, description="OpenAI-compatible base URL (e.g. vLLM).")
    openai_model: str | None = Field(default=None, description="Model name served at `SIEVE_OPENAI_BASE_URL`.")
    openai_api_key: str | None = Field(default=None, description="Key for the OpenAI-compatible backend.")
    # LLM policies: one home each, the AgentConfig field (its default and help)
    openai_api: Literal["chat", "harmony"] = _from(AgentConfig, "api")
    reasoning_effort: Literal["low", "medium", "high"] | None = _from(AgentConfig, "reasoning_effort")
    tool_choice: Literal["auto", "required"] = _from(AgentConfig, "tool_choice")
    max_new_tokens: int = _from(AgentConfig, "max_new_tokens", ge=1)
    length_retry_tokens: int = _from(AgentConfig, "length_retry_tokens", ge=0)
    max_tool_calls: int = _from(AgentConfig, "max_tool_calls", ge=1)
    # The server gives an LLM policy's request this long instead of SIEVE_REQUEST_TIMEOUT_S (server/limits.py).
    max_wall_s: float = _from(AgentConfig, "max_wall_s", gt=0)
    local_model: str | None = Field(default=None, description="Local HF model folder for the `local` policy.")
    allow_local: bool = Field(
        default=False,
        description="Serve the `local` policy with the bundled SmolLM2 (loads a model into the server process).",
    )
    floor: bool = Field(
        default=True,
        description="Merge every policy's evidence with the question's own hybrid "
        "ranking, so the agent is not worse than plain RAG.",
    )

    # Writers: one per store (an inter-process lock; see retriever/writelock.py)
    # HTTP writes wait at most half of SIEVE_REQUEST_TIMEOUT_S.
    write_lock_timeout_s: float = _from(RetrieverConfig, "write_lock_timeout_s", ge=0)

    # Admission control: bounded work per process, fast 503 + Retry-After beyond it
    max_episodes: int = Field(
        default_factory=lambda: max(1, min(4, os.cpu_count() or 1)),
        ge=1,
        description="Agent episodes run at once (`/v1/search`, `/search`, MCP search); "
        "default: the CPU count, at most 4.",
    )
    episode_queue: int = Field(
        default=4,
        ge=0,
        description="Agent requests that may wait for a free episode place; beyond them, `503 overloaded` at once.",
    )
    max_retrievals: int = Field(
        default=32, ge=1, description="Plain retrievals run at once (`/v1/retrieve`, `/retrieve`)."
    )
    retrieval_queue: int = Field(default=64, ge=0, description="Retrievals that may wait for a free place.")
    max_writes: int = Field(
        default=2,
        ge=1,
        description="Document writes run at once (they take turns on the store's "
        "lock; each waiting one holds a worker thread).",
    )
    write_queue: int = Field(default=16, ge=0, description="Document writes that may wait for a free place.")
    queue_wait_s: float = Field(default=5.0, gt=0, description="Longest wait in an admission queue (then 503).")

    # Connections: slow or idle clients cannot hold the server
    max_connections: int = Field(
        default=256, ge=1, description="Open connections (and requests in progress) beyond which uvicorn answers 503."
    )
    max_client_connections: int = Field(
        default=64,
        ge=0,
        description="Open connections one client address may "
        "hold (beyond them it gets 503 at once); 0 = no per-client limit (e.g. "
        "behind a proxy, where every client has the proxy's address).",
    )
    header_timeout_s: float = Field(
        default=10.0, gt=0, description="Time a client has to send a request's headers (then 408, connection closed)."
    )
    body_timeout_s: float = Field(
        default=30.0, gt=0, description="Time a client has to send a request's body (then 408)."
    )
    keep_alive_s: int = Field(default=5, ge=1, description="Idle keep-alive connections are closed after this.")

    # Which pages may talk to this server
    allowed_hosts: Annotated[list[str] | None, NoDecode] = Field(
        default=None,
        description="Host header values served (comma-separated; `*.example.com` allowed; `*` = any). "
        "Default: loopback names when bound to a loopback address, any otherwise.",
    )
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Browser origins allowed by CORS (comma-separated); none by default."
    )

    # Training
    train_api_key: str | None = Field(default=None, description="Key for `sieve train synth --generator openai`.")

    @field_validator("allowed_hosts", "cors_origins", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        return value

    @model_validator(mode="after")
    def _check_auth(self) -> Settings:
        if self.require_auth and not self.server_api_key:
            raise InvalidInput(
                "Expected SIEVE_API_KEY (or SIEVE_SERVER_API_KEY) to be set when SIEVE_REQUIRE_AUTH is true, got no key"
            )
        return self

    def retriever_config(self) -> RetrieverConfig:
        return RetrieverConfig(
            data_dir=self.data_dir,
            chroma_url=self.chroma_url,
            embedder_path=self.embedder,
            embed_backend=self.embed_backend,
            embed_dtype=self.embed_dtype,
            device=self.device,
            model_dir=self.model_dir,
            chunk_tokens=self.chunk_tokens,
            chunk_overlap=self.chunk_overlap,
            chunk_split=self.chunk_split,
            gitignore=self.gitignore,
            write_lock_timeout_s=self.write_lock_timeout_s,
        )

    def to_env(self) -> dict[str, str]:
        """These settings as ``SIEVE_*`` variables, the way a child process (a server worker) reads them back.

        Example:
            >>> Settings(port=9000, preload=["a"]).to_env()["SIEVE_PRELOAD"]
            '["a"]'
        """
        env: dict[str, str] = {}
        for name, value in self.model_dump(mode="json").items():
            if value is not None:
                env[f"{ENV_PREFIX}{name.upper()}"] = value if isinstance(value, str) else json.dumps(value)
        return env

    def trusted_hosts(self) -> list[str]:
        """Host header values the server answers: the setting, else loopback names when bound to loopback.

        A server on 127.0.0.1 answering any ``Host`` can be read by any web page through DNS
        rebinding (reads need no key by default), so loopback binds accept loopback names only.

        Example:
            >>> Settings(host="127.0.0.1", allowed_hosts=None).trusted_hosts()
            ['localhost', '127.0.0.1', '::1', '[::1]']
        """
        if self.allowed_hosts is not None:
            return list(self.allowed_hosts)
        return list(LOOPBACK_NAMES) if is_loopback(self.host) else ["*"]

    def agent_config(self, **overrides: Any) -> AgentConfig:
        """The ``AgentConfig`` these settings imply; ``overrides`` replace any of its fields."""
        from sieve.agent.config import FloorConfig

        values: dict[str, Any] = {
            "budget_tokens": self.budget_tokens,
            "max_turns": self.max_turns,
            "k": self.k,
            "models_dir": self.retriever_config().models_dir,
            "api": self.openai_api,
            "reasoning_effort": self.reasoning_effort,
            "tool_choice": self.tool_choice,
            "max_new_tokens": self.max_new_tokens,
            "length_retry_tokens": self.length_retry_tokens,
            "max_tool_calls": self.max_tool_calls,
            "max_wall_s": self.max_wall_s,
        }
        optional = {
            "base_url": self.openai_base_url,
            "model": self.openai_model,
            "api_key": self.openai_api_key,
            "local_model": Path(self.local_model) if self.local_model else None,
            "policy_path": Path(self.policy_path) if self.policy_path else None,
        }
        values.update({name: v for name, v in optional.items() if v is not None})
        values["floor"] = FloorConfig(enabled=self.floor)
        values.update(overrides)
        return AgentConfig(**values)

    def available_policies(self, *, bundled_local: bool = False) -> list[str]:
        """Policies these settings can run: LLM policies need their model configured.

        ``bundled_local``: the ``local`` policy may load the bundled SmolLM2 without being asked
        (the CLI may; a server only with ``SIEVE_ALLOW_LOCAL``, since it loads a model in-process).
        """
        from sieve.agent.factory import POLICIES

        met = {
            "none": True,
            "openai_endpoint": bool(self.openai_base_url),
            "local_model": bool(self.local_model or self.allow_local or bundled_local),
        }
        return [name for name, spec in POLICIES.items() if met[spec.requires]]

    def require_policy(self, name: str, *, bundled_local: bool = False) -> str:
        """``name`` if these settings can run it; else the error the server and the CLI both give.

        Raises:
            InvalidInput: an unknown policy, ``openai`` without ``SIEVE_OPENAI_BASE_URL``, or
                ``local`` without a model where none may be loaded implicitly.
        """
        from sieve.agent.factory import POLICIES

        if name not in POLICIES:
            raise InvalidInput(f"Expected policy in {tuple(POLICIES)}, got {name!r}")
        valid = self.available_policies(bundled_local=bundled_local)
        if name == "openai" and name not in valid:
            raise InvalidInput(
                "Expected SIEVE_OPENAI_BASE_URL (and SIEVE_OPENAI_MODEL) to be set for policy "
                f"'openai', got none; valid here: {valid}"
            )
        if name == "local" and name not in valid:
            raise InvalidInput(
                "Expected SIEVE_LOCAL_MODEL or SIEVE_ALLOW_LOCAL=1 for policy 'local', got neither; "
                f"valid here: {valid}"
            )
        return name

    def agent_overrides(self) -> dict[str, Any]:
        """The ``AgentConfig`` fields these settings set explicitly (model endpoints and LLM settings, local model, floor).

        For code that builds its own ``AgentConfig`` around other defaults (``sieve eval`` sets ``k``
        to the deepest cut-off) but must still honour ``SIEVE_OPENAI_*``, ``SIEVE_LOCAL_MODEL`` and
        ``SIEVE_FLOOR``.
        """
        cfg = self.agent_config()
        llm = [
            "api",
            "reasoning_effort",
            "tool_choice",
            "max_new_tokens",
            "length_retry_tokens",
            "max_tool_calls",
            "max_wall_s",
        ]
        names = ["models_dir", "floor", *llm] + [
            n
            for n, v in (
                ("base_url", self.openai_base_url),
                ("model", self.openai_model),
                ("api_key", self.openai_api_key),
                ("local_model", self.local_model),
                ("policy_path", self.policy_path),
            )
            if v
        ]
        return {name: getattr(cfg, name) for name in names}


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")


def is_loopback(host: str) -> bool:
    """Whether a bind address only accepts local connections.

    Example:
        >>> is_loopback("127.0.0.1"), is_loopback("0.0.0.0"), is_loopback("localhost")
        (True, False, True)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment, with every override that is not ``None`` taking precedence.

    Raises:
        InvalidInput: a variable or override has a value of the wrong type or range.
    """
    given = {name: v for name, v in overrides.items() if v is not None}
    try:
        return Settings(**given)
    except ValidationError as exc:
        raise InvalidInput(_describe(exc)) from None


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        if not err.get("loc"):  # a model-level check: its message names the variables itself
            parts.append(msg)
            continue
        name = str(err["loc"][0]).removeprefix(ENV_PREFIX).lower()  # a renamed field's error names its variable
        # Never echo a secret back into a log line.
        got = "a value" if "key" in name else repr(err.get("input"))
        variables = f"{ENV_PREFIX}{name.upper()}" + (f" or {_OLD_VARIABLES[name]}" if name in _OLD_VARIABLES else "")
        parts.append(f"Expected {name} ({variables} or its flag) to be {_lower_first(msg)}, got {got}")
    return "; ".join(parts)


def _lower_first(text: str) -> str:
    text = text.removeprefix("Input should be ")
    return text[:1].lower() + text[1:]


__all__ = ["ENV_PREFIX", "LOOPBACK_NAMES", "Settings", "is_loopback", "load_settings"]
