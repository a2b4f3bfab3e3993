"""``sieve serve``: the HTTP server (FastAPI under uvicorn)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from sieve.agent.factory import policy_help
from sieve.cli.commands._common import (
    Bf16Opt,
    ChromaUrlOpt,
    DataDirOpt,
    DeviceOpt,
    EmbedBackendOpt,
    EmbedDtypeOpt,
    EmbedderOpt,
    cli_errors,
    embed_overrides,
    plural,
    setting_option,
    settings_from,
)


def register(app: typer.Typer) -> None:
    @app.command("serve")
    @cli_errors
    def serve_cmd(
        host: Optional[str] = setting_option("host", help="Bind address"),
        port: Optional[int] = setting_option("port", help="Port"),
        workers: Optional[int] = setting_option(
            "workers", help="Worker processes sharing the port; more than one needs --chroma-url"
        ),
        collection: Optional[str] = setting_option("collection", "--collection", "-c", help="Default collection"),
        preload: Optional[list[str]] = typer.Option(
            None, "--preload", help="Open this collection at start-up (repeatable)."
        ),
        policy: Optional[str] = setting_option("policy", help=f"Default agent policy: {policy_help()}"),
        policy_path: Optional[str] = setting_option(
            "policy_path", help="Checkpoint folder of the learned policy", otherwise="the one shipped with Sieve"
        ),
        openai_base_url: Optional[str] = setting_option("openai_base_url"),
        openai_model: Optional[str] = setting_option("openai_model"),
        budget_tokens: Optional[int] = setting_option("budget_tokens"),
        max_k: Optional[int] = setting_option(
            "max_request_k", "--max-request-k", "--max-k", help="Largest k (results per query) a request may ask for"
        ),
        timeout: Optional[float] = setting_option("request_timeout_s", "--timeout"),
        embed_backend: Optional[str] = EmbedBackendOpt,
        embed_dtype: Optional[str] = EmbedDtypeOpt,
        bf16: bool = Bf16Opt,
        device: Optional[str] = DeviceOpt,
        no_mcp: bool = typer.Option(False, "--no-mcp", help="Do not mount the MCP endpoint at /mcp."),
        log_level: Optional[str] = setting_option("log_level"),
        data_dir: Optional[Path] = DataDirOpt,
        chroma_url: Optional[str] = ChromaUrlOpt,
        embedder: Optional[str] = EmbedderOpt,
    ) -> None:
        """Serve the HTTP API: agentic search, retrieval, documents, metrics and MCP.

        Set SIEVE_SERVER_API_KEY (or SIEVE_API_KEY) to require `Authorization: Bearer KEY` on writes (SIEVE_REQUIRE_AUTH=1: on everything).
        """
        import uvicorn

        from sieve.core.runtime import export_to_children
        from sieve.server.main import create_app
        from sieve.server.serving import uvicorn_config

        s = settings_from(
            data_dir,
            chroma_url,
            embedder,
            host=host,
            port=port,
            workers=workers,
            collection=collection,
            preload=preload or None,
            policy=policy,
            policy_path=policy_path,
            openai_base_url=openai_base_url,
            openai_model=openai_model,
            budget_tokens=budget_tokens,
            max_request_k=max_k,
            request_timeout_s=timeout,
            **embed_overrides(embed_backend, embed_dtype, bf16),
            device=device,
            mcp=False if no_mcp else None,
            log_level=log_level,
        )
        if s.workers > 1 and not s.chroma_url:
            from sieve.core.errors import InvalidInput

            # Several processes *can* share the embedded store (each reopens it after another's write:
            # docs/one-writer.md), so a second `sieve serve` on it works; but N workers behind one port
            # would each reload the whole vector index from disk after every write through any of them.
            raise InvalidInput(
                f"Expected --chroma-url with --workers {s.workers}, got the embedded store: its processes "
                "stay correct by reloading the vector index from disk after every other process's write, "
                "so workers sharing one port would reload on nearly every write; start a Chroma server "
                "(`chroma run --path DIR --port 8001`) and pass --chroma-url http://127.0.0.1:8001"
            )
        if s.policy == "learned" and s.policy_path:  # a checkpoint that cannot load fails now, not every search
            from sieve.agent.factory import make_policy

            make_policy("learned", s.agent_config())
        if s.device == "cuda":  # the model loads at the first request: fail now, not then
            from sieve.retriever.device import resolve_device

            resolve_device(s.device, s.embed_backend)
        auth = "on all" if s.require_auth else "on writes" if s.server_api_key else "off"
        typer.echo(
            f"Sieve on http://{s.host}:{s.port} (playground at /, API docs at /docs; "
            f"{plural(s.workers, 'worker')}; collection {s.collection!r}; policy {s.policy}; auth {auth})",
            err=True,
        )
        if s.workers == 1:
            # One process: the indexes, the embedder and the BM25 caches live in it. Concurrency
            # comes from the thread pool the routes hand blocking work to, bounded by admission control.
            uvicorn.Server(uvicorn_config(create_app(s), s)).run()
            return
        # N processes accept on one socket; each loads its own embedder and BM25 caches (and has
        # its own admission limits), all share the Chroma server, and each re-reads a collection's
        # generation per request, so a write through one worker is seen by the next request to any
        # other. The workers import the app by name and read these settings back from SIEVE_*.
        from uvicorn.supervisors import Multiprocess

        export_to_children(s.to_env())
        config = uvicorn_config("sieve.server.main:app_from_env", s, factory=True, workers=s.workers)
        Multiprocess(config, sockets=[config.bind_socket()]).run()


__all__ = ["register"]
