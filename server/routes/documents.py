"""Collections and documents: list, add/update (idempotent by content hash), fetch and delete."""

from __future__ import annotations

from fastapi import APIRouter, Path, Query

from sieve.errors import InvalidInput, NotFound
from sieve.retriever.store import validate_collection_name
from sieve.retriever.types import Document
from sieve.server.convert import document_out
from sieve.server.deps import ReadAuth, StateDep, WriteAuth, run_blocking
from sieve.server.schemas import (
    COLLECTION_PATTERN, CollectionOut, CollectionsResponse, DeleteResponse, DocumentOut, Problem, UpsertRequest,
    UpsertResponse,
)

ERRORS = {401: {"model": Problem}, 404: {"model": Problem}, 422: {"model": Problem}, 504: {"model": Problem}}
NamePath = Path(pattern=COLLECTION_PATTERN, description="Collection name.")

router = APIRouter(tags=["documents"], responses=ERRORS)


@router.get("/v1/collections", response_model=CollectionsResponse, dependencies=[ReadAuth])
async def list_collections(state: StateDep) -> CollectionsResponse:
    cols = await run_blocking(state.collections, timeout=state.settings.request_timeout_s)
    return CollectionsResponse(collections=[CollectionOut(name=n, chunks=c) for n, c in cols.items()])


@router.post("/v1/collections/{name}/documents", response_model=UpsertResponse, dependencies=[WriteAuth],
             summary="Add or update documents (idempotent)")
async def upsert_documents(body: UpsertRequest, state: StateDep, name: str = NamePath) -> UpsertResponse:
    """Creates the collection if needed. Unchanged documents (same content hash) are skipped, changed
    ones re-chunked and replaced, so sending the same batch twice writes nothing the second time."""
    validate_collection_name(name)
    if len(body.documents) > state.settings.max_documents:
        raise InvalidInput(f"Expected at most {state.settings.max_documents} documents per request, "
                           f"got {len(body.documents)}")
    docs = [Document(doc_id=d.id, text=d.text, title=d.title, source=d.source, metadata=dict(d.metadata))
            for d in body.documents]

    def work() -> UpsertResponse:
        index = state.index(name, create=True)
        report = index.index_documents(docs, progress=False)
        return UpsertResponse(collection=name, added=report.added, updated=report.updated + report.resumed,
                              unchanged=report.unchanged, chunks_written=report.chunks_written,
                              skipped=[w for w, _ in report.ingest.skipped], seconds=round(report.seconds, 3))

    return await run_blocking(work, timeout=state.settings.request_timeout_s)


@router.delete("/v1/collections/{name}/documents/{doc_id:path}", response_model=DeleteResponse,
               dependencies=[WriteAuth])
async def delete_document(state: StateDep, doc_id: str, name: str = NamePath) -> DeleteResponse:
    def work() -> DeleteResponse:
        index = state.index(name)
        deleted = index.delete_documents([doc_id])
        if not deleted:
            raise NotFound(f"Expected a document id of collection {name!r}, got {doc_id!r}")
        return DeleteResponse(collection=name, deleted=deleted)

    return await run_blocking(work, timeout=state.settings.request_timeout_s)


@router.delete("/v1/collections/{name}", response_model=DeleteResponse, dependencies=[WriteAuth])
async def delete_collection(state: StateDep, name: str = NamePath) -> DeleteResponse:
    def work() -> DeleteResponse:
        n = state.index(name).count()  # UnknownCollection (404) when missing
        state.delete_collection(name)
        return DeleteResponse(collection=name, deleted=n)

    return await run_blocking(work, timeout=state.settings.request_timeout_s)


@router.get("/v1/documents/{doc_id:path}", response_model=DocumentOut, dependencies=[ReadAuth],
            summary="A whole document (or the document of a chunk id)")
async def get_document(
    state: StateDep, doc_id: str,
    collection: str | None = Query(default=None, pattern=COLLECTION_PATTERN, description="Default: server's."),
) -> DocumentOut:
    def work() -> DocumentOut:
        index = state.index(collection)
        chunks = index.read(doc_id)  # a chunk id reads its whole document; NotFound (404) otherwise
        return document_out(chunks, index.name)

    return await run_blocking(work, timeout=state.settings.request_timeout_s)


__all__ = ["router"]
