"""``sieve serve``: the HTTP server (FastAPI under uvicorn)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from sieve.agent.factory import policy_help
from sieve.cli.commands._flags import flag, takes
from sieve.cli.commands._listing import listing, refresh
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

if TYPE_CHECKING:
    from sieve.settings import Settings


@dataclass(frozen=True)
class ServeFlags:
    """``sieve serve``'s options, in the order its help lists them."""

    host: Optional[str] = flag(setting_option("host", help="Bind address"))
    port: Optional[int] = flag(setting_option("port", help="Port"))
    workers: Optional[int] = flag(
        setting_option("workers", help="Worker processes sharing the port; more than one needs --chroma-url")
    )
    collection: Optional[str] = flag(setting_option("collection", "--collection", "-c", help="Default collection"))
    preload: Optional[list[str]] = flag(
        typer.Option(None, "--preload", help="Open this collection at start-up (repeatable).")
    )
    policy: Optional[str] = flag(
        listing(
            setting_option("policy"),
            help=lambda: setting_option("policy", help=f"Default agent policy: {policy_help()}").help,
        )
    )
    policy_path: Optional[str] = flag(
        setting_option(
            "policy_path", help="Checkpoint folder of the learned policy", otherwise="the one shipped with Sieve"
        )
    )
    openai_base_url: Optional[str] = flag(setting_option("openai_base_url"))
    openai_model: Optional[str] = flag(setting_option("openai_model"))
    budget_tokens: Optional[int] = flag(setting_option("budget_tokens"))
    max_k: Optional[int] = flag(
        setting_option(
            "max_request_k", "--max-request-k", "--max-k", help="Largest k (results per query) a request may ask for"
        )
    )
    timeout: Optional[float] = flag(setting_option("request_timeout_s", "--timeout"))
    embed_backend: Optional[str] = flag(EmbedBackendOpt)
    embed_dtype: Optional[str] = flag(EmbedDtypeOpt)
    bf16: bool = flag(Bf16Opt)
    device: Optional[str] = flag(DeviceOpt)
    no_mcp: bool = flag(typer.Option(False, "--no-mcp", help="Do not mount the MCP endpoint at /mcp."))
    log_level: Optional[str] = flag(setting_option("log_level"))
    data_dir: Optional[Path] = flag(DataDirOpt)
    chroma_url: Optional[str] = flag(ChromaUrlOpt)
    embedder: Optional[str] = flag(EmbedderOpt)


def _serve_settings(flags: ServeFlags) -> Settings:
    """The server's settings: the environment's, with the flags given (not None) on top."""
    return settings_from(
        flags.data_dir,
        flags.chroma_url,
        flags.embedder,
        host=flags.host,
        port=flags.port,
        workers=flags.workers,
        collection=flags.collection,
        preload=flags.preload or None,
        policy=flags.policy,
        policy_path=flags.policy_path,
        openai_base_url=flags.openai_base_url,
        openai_model=flags.openai_model,
        budget_tokens=flags.budget_tokens,
        max_request_k=flags.max_k,
        request_timeout_s=flags.timeout,
        **embed_overrides(flags.embed_backend, flags.embed_dtype, flags.bf16),
        device=flags.device,
        mcp=False if flags.no_mcp else None,
        log_level=flags.log_level,
    )


def _check_before_start(s: Settings) -> None:
    """Fail now, not at the first request, on what settings alone can tell: workers without a shared
    store, a learned checkpoint that cannot load, ``--device cuda`` without a GPU."""
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


def _run(s: Settings) -> None:
    """Serve until stopped: in this process, or in ``s.workers`` processes sharing one socket."""
    import uvicorn

    from sieve.core.runtime import export_to_children
    from sieve.server.main import create_app
    from sieve.server.serving import uvicorn_config

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


@cli_errors
@takes(ServeFlags)
def serve_cmd(flags: ServeFlags) -> None:
    """Serve the HTTP API: agentic search, retrieval, documents, metrics and MCP.

    Set SIEVE_SERVER_API_KEY (or SIEVE_API_KEY) to require `Authorization: Bearer KEY` on writes (SIEVE_REQUIRE_AUTH=1: on everything).
    """
    s = _serve_settings(flags)
    _check_before_start(s)
    auth = "on all" if s.require_auth else "on writes" if s.server_api_key else "off"
    typer.echo(
        f"Sieve on http://{s.host}:{s.port} (playground at /, API docs at /docs; "
        f"{plural(s.workers, 'worker')}; collection {s.collection!r}; policy {s.policy}; auth {auth})",
        err=True,
    )
    _run(s)


def register(app: typer.Typer) -> None:
    refresh()  # help that lists a registry lists what registered before the command line is assembled
    app.command("serve")(serve_cmd)


__all__ = ["ServeFlags", "register", "serve_cmd"]
