"""The one typed settings object: ``SIEVE_*`` environment variables, overridden by CLI flags.

Library packages take plain dataclass configs (``RetrieverConfig``, ``AgentConfig``...);
``Settings`` builds them, so nothing below ``server/`` reads the environment itself, except
for the retriever defaults that keep ``RetrieverConfig()`` usable on its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from retriever.config import RetrieverConfig, default_data_dir, default_embedder_path


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

    def retriever_config(self) -> RetrieverConfig:
        return RetrieverConfig(
            data_dir=self.data_dir, chroma_url=self.chroma_url, embedder_path=self.embedder,
            embed_dtype=self.embed_dtype, chunk_tokens=self.chunk_tokens, chunk_overlap=self.chunk_overlap,
        )


__all__ = ["Settings"]
