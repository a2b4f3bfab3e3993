"""The one typed settings object: ``SIEVE_*`` environment variables, overridden by CLI flags.

Library packages take plain dataclass configs (``RetrieverConfig``, ``AgentConfig``...);
``Settings`` builds them, so nothing below ``server/`` reads the environment itself, except
for the retriever defaults that keep ``RetrieverConfig()`` usable on its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from sieve.retriever.config import RetrieverConfig, default_data_dir, default_embedder_path


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SIEVE_", extra="ignore")

    data_dir: Path = Field(default_factory=default_data_dir, description="Embedded Chroma + BM25 folder.")
    chroma_url: str | None = Field(default=None, description="Chroma server URL; uses HttpClient when set.")
    embedder: str = Field(default_factory=default_embedder_path, description="Local sentence-transformers folder.")
    embed_dtype: Literal["float32", "bfloat16"] = "float32"
    chunk_tokens: int = 200
    chunk_overlap: int = 32
    collection: str = "default"

    # HTTP server
    host: str = "127.0.0.1"
    port: int = 8000
    api_key: str | None = Field(default=None, description="Bearer key required on mutating endpoints.")
    require_auth: bool = Field(default=False, description="Require the API key on every endpoint.")
    max_body_bytes: int = Field(default=8 * 1024 * 1024, ge=1024, description="Largest request body accepted (413).")
    max_k: int = Field(default=100, ge=1, description="Largest k (results per query) a request may ask for.")
    max_budget_tokens: int = Field(default=65536, ge=256, description="Largest agent token budget per request.")
    max_queries: int = Field(default=64, ge=1, description="Most queries in one Search-R1 /retrieve batch.")
    max_documents: int = Field(default=1000, ge=1, description="Most documents in one upsert request.")
    request_timeout_s: float = Field(default=60.0, gt=0, description="Per-request limit on blocking work (504).")
    preload: list[str] = Field(default_factory=list, description="Collections opened at start-up (others lazily).")
    mcp: bool = Field(default=True, description="Mount the MCP (streamable HTTP) endpoint at /mcp.")
    mcp_search: Literal["agent", "hybrid"] = Field(default="agent", description="What the MCP search tool runs.")
    public_url: str | None = Field(default=None, description="Base URL clients reach the server at (for links).")
    log_level: str = Field(default="info", description="uvicorn log level.")

    # Agent defaults (requests may lower budgets and k; never above the max_* caps)
    policy: Literal["heuristic", "openai", "local"] = Field(default="heuristic", description="Default agent policy.")
    budget_tokens: int = Field(default=8192, ge=256, description="Default agent token budget.")
    max_turns: int = Field(default=16, ge=1, description="Agent turn cap.")
    k: int = Field(default=10, ge=1, description="Default number of results.")
    openai_base_url: str | None = Field(default=None, description="OpenAI-compatible base URL (e.g. vLLM).")
    openai_model: str | None = Field(default=None, description="Model name served at openai_base_url.")
    openai_api_key: str | None = Field(default=None, description="Key for the OpenAI-compatible backend.")
    local_model: str | None = Field(default=None, description="Local HF model folder for the 'local' policy.")
    allow_local: bool = Field(default=False, description="Serve the 'local' policy with the bundled SmolLM2 "
                                                         "(loads a model into the server process).")

    @model_validator(mode="after")
    def _check_auth(self) -> Settings:
        if self.require_auth and not self.api_key:
            raise ValueError("Expected SIEVE_API_KEY to be set when SIEVE_REQUIRE_AUTH is true, got no key")
        return self

    def retriever_config(self) -> RetrieverConfig:
        return RetrieverConfig(
            data_dir=self.data_dir, chroma_url=self.chroma_url, embedder_path=self.embedder,
            embed_dtype=self.embed_dtype, chunk_tokens=self.chunk_tokens, chunk_overlap=self.chunk_overlap,
        )


__all__ = ["Settings"]
