"""Collections and documents: list, add/update (idempotent by content hash), fetch, browse and delete."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from fastapi import APIRouter, Path, Query

from sieve.core.errors import InvalidInput, NotFound
from sieve.retriever.index import MAX_OFFSET
from sieve.retriever.store import validate_collection_name
from sieve.retriever.types import Document
from sieve.server.convert import chunk_out, document_out
from sieve.server.deadline import time_left
from sieve.server.deps import ReadAuth, StateDep, WriteAuth, run_blocking
from sieve.server.errors import RequestTimeout
from sieve.server.schemas import (
    COLLECTION_PATTERN,
    ChunkContextOut,
    CollectionOut,
    CollectionsResponse,
    DeleteResponse,
    DocumentOut,
    DocumentsPage,
    DocumentSummaryOut,
    Problem,
    UpsertRequest,
    UpsertResponse,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from sieve.server.admission import Slot

ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem},
    404: {"model": Problem},
    422: {"model": Problem},
    503: {"model": Problem},
    504: {"model": Problem},
}
NamePath = Path(pattern=COLLECTION_PATTERN, description="Collection name.")
CollectionQuery = Query(default=None, pattern=COLLECTION_PATTERN, description="Collection (default: the server's).")

router = APIRouter(tags=["documents"], responses=ERRORS)
T = TypeVar("T")


async def run_write(fn: Callable[[], T], *, timeout: float, slot: Slot, stop: threading.Event | None = None) -> T:
    """Run a write in the thread pool and answer only once it has ended: never a timeout that writes later.

    Unlike :func:`run_blocking`, the worker is never abandoned. At ``timeout`` (or when the request
    is cancelled) ``stop`` is set: an upsert then stops before writing anything
    (``IndexWriter.upsert_documents``) and answers 504; a write already under way, which is short,
    finishes and answers what it did. A delete waits for another writer at most half the request
    time (``store_locked`` after that), so it ends soon after the deadline too.
    """
    stop = stop if stop is not None else threading.Event()

    def job() -> T | None:
        if not slot.begin():
            return None  # the request ended before this thread got to it
        try:
            return fn()
        finally:
            slot.release()

    left = time_left(timeout)  # the request's deadline counts its wait for a place

    async def deadline() -> None:
        try:
            await anyio.sleep(left)
        finally:
            stop.set()  # the deadline passed, or the request was cancelled (client gone)

    outcome: dict[str, Any] = {}
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(deadline)
            try:
                outcome["value"] = await anyio.to_thread.run_sync(job)
            except Exception as exc:  # raised below, outside the group (which would wrap it)
                outcome["error"] = exc
            finally:
                group.cancel_scope.cancel()
    finally:
        slot.release_unless_running()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]


@router.get("/v1/collections", response_model=CollectionsResponse, dependencies=[ReadAuth])
async def list_collections(
    state: StateDep,
    include_eval: bool = Query(default=False, description="Also list `sieve eval`'s cached corpora."),
) -> CollectionsResponse:
    cols = await run_blocking(
        state.collections,
        include_eval=include_eval,
        timeout=state.settings.request_timeout_s,
        slot=await state.retrievals.enter(),
    )
    return CollectionsResponse(collections=[CollectionOut(name=n, chunks=c) for n, c in cols.items()])


@router.get(
    "/v1/collections/{name}/documents",
    response_model=DocumentsPage,
    dependencies=[ReadAuth],
    summary="List a collection's documents (paged)",
)
async def list_documents(
    state: StateDep,
    name: str = NamePath,
    offset: int = Query(default=0, ge=0, le=MAX_OFFSET, description="Documents to skip (Chroma pages are 32-bit)."),
    limit: int = Query(default=50, ge=1, le=1000),
) -> DocumentsPage:
    def work() -> DocumentsPage:
        index = state.index(name)
        total, firsts = index.list_documents(offset, limit)
        return DocumentsPage(
            collection=index.name,
            total=total,
            offset=offset,
            documents=[DocumentSummaryOut(id=c.doc_id, title=c.title, source=c.source, chunks=n) for c, n in firsts],
        )

    return await run_blocking(work, timeout=state.settings.request_timeout_s, slot=await state.retrievals.enter())


@router.get(
    "/v1/chunks/{chunk_id:path}",
    response_model=ChunkContextOut,
    dependencies=[ReadAuth],
    summary="A chunk by id, with its neighbours",
)
async def get_chunk(
    state: StateDep,
    chunk_id: str,
    collection: str | None = CollectionQuery,
    window: int = Query(default=1, ge=0, le=20, description="Neighbouring chunks shown on each side."),
) -> ChunkContextOut:
    def work() -> ChunkContextOut:
        index = state.index(collection)
        chunks, n_chunks = index.chunk_context(chunk_id, window)
        focus = next(c for c in chunks if c.chunk_id == chunk_id)
        return ChunkContextOut(
            id=chunk_id,
            doc_id=focus.doc_id,
            collection=index.name,
            title=focus.title,
            source=focus.source,
            metadata=dict(focus.metadata),
            n_chunks=n_chunks,
            chunks=[chunk_out(c) for c in chunks],
        )

    return await run_blocking(work, timeout=state.settings.request_timeout_s, slot=await state.retrievals.enter())


@router.post(
    "/v1/collections/{name}/documents",
    response_model=UpsertResponse,
    dependencies=[WriteAuth],
    summary="Add or update documents (idempotent)",
)
async def upsert_documents(body: UpsertRequest, state: StateDep, name: str = NamePath) -> UpsertResponse:
    """Creates the collection if needed. Unchanged documents (same content hash) are skipped, changed
    ones re-chunked and replaced, so sending the same batch twice writes nothing the second time."""
    validate_collection_name(name)
    if len(body.documents) > state.settings.max_documents:
        raise InvalidInput(
            f"Expected at most {state.settings.max_documents} documents per request, got {len(body.documents)}"
        )
    # MetaValue's lists may mix scalar types on paper; validate_metadata rejects mixed lists (a 422).
    docs = [
        Document(doc_id=d.id, text=d.text, title=d.title, source=d.source, metadata=dict(d.metadata), context=d.context)  # type: ignore[arg-type]
        for d in body.documents
    ]

    timeout = state.settings.request_timeout_s
    stop = threading.Event()

    def work() -> UpsertResponse:
        index = state.index(name, create=True)
        try:
            report = index.writer.upsert_documents(docs, stop=stop)
        except Exception:
            state.invalidate()  # a failed first write removed the new collection: re-check before reuse
            raise
        if report.cancelled:
            state.invalidate()
            raise RequestTimeout(
                f"Expected the write to finish within {timeout:g} s, got longer; it was cancelled "
                f"before writing anything (the collection is as it was): send fewer documents per "
                f"request or raise SIEVE_REQUEST_TIMEOUT_S"
            )
        return UpsertResponse(
            collection=name,
            added=report.added,
            updated=report.updated + report.resumed,
            unchanged=report.unchanged,
            chunks_written=report.chunks_written,
            skipped=[w for w, _ in report.ingest.skipped],
            seconds=round(report.seconds, 3),
        )

    return await run_write(work, timeout=timeout, stop=stop, slot=await state.writes.enter())


@router.delete(
    "/v1/collections/{name}/documents/{doc_id:path}", response_model=DeleteResponse, dependencies=[WriteAuth]
)
async def delete_document(state: StateDep, doc_id: str, name: str = NamePath) -> DeleteResponse:
    def work() -> DeleteResponse:
        index = state.index(name)
        deleted = index.writer.delete_documents([doc_id])
        if not deleted:
            raise NotFound(f"Expected a document id of collection {name!r}, got {doc_id!r}")
        return DeleteResponse(collection=name, deleted=deleted)

    return await run_write(work, timeout=state.settings.request_timeout_s, slot=await state.writes.enter())


@router.delete("/v1/collections/{name}", response_model=DeleteResponse, dependencies=[WriteAuth])
async def delete_collection(state: StateDep, name: str = NamePath) -> DeleteResponse:
    def work() -> DeleteResponse:
        n = state.index(name).count()  # UnknownCollection (404) when missing
        state.delete_collection(name)
        return DeleteResponse(collection=name, deleted=n)

    return await run_write(work, timeout=state.settings.request_timeout_s, slot=await state.writes.enter())


@router.get(
    "/v1/documents/{doc_id:path}",
    response_model=DocumentOut,
    dependencies=[ReadAuth],
    summary="A whole document (or the document of a chunk id)",
)
async def get_document(
    state: StateDep,
    doc_id: str,
    collection: str | None = CollectionQuery,
) -> DocumentOut:
    def work() -> DocumentOut:
        index = state.index(collection)
        chunks = index.read(doc_id)  # a chunk id reads its whole document; NotFound (404) otherwise
        return document_out(chunks, index.name)

    return await run_blocking(work, timeout=state.settings.request_timeout_s, slot=await state.retrievals.enter())


__all__ = ["router"]
