"""Request and response models of the HTTP API (pydantic lives here and nowhere below ``server/``).

Routes convert these to the library's dataclasses (``Document``, ``Hit``, ``Trace``) at once, so
nothing past the route handler sees a pydantic object. Limits that depend on the settings (max k,
max budget, batch sizes) are checked in the routes with the library's validators; the static
bounds here only keep absurd values from reaching them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, model_validator

from sieve.core.defaults import DEFAULT_MODE, MAX_QUERY_CHARS, MIN_BUDGET_TOKENS
from sieve.agent.factory import POLICIES
from sieve.core.choices import one_of
from sieve.retriever.base import validate_text
from sieve.retriever.filters import FILTER_LIMITS, validate_where
from sieve.retriever.metadata import MAX_STRING_CHARS
from sieve.retriever.modes import MODES
from sieve.retriever.store import COLLECTION_NAME_PATTERN

# Chroma's metadata rules: non-empty keys not starting with "$" or "#", scalar values, 64-bit ints,
# or non-empty lists of one scalar type (the library's validate_metadata rejects mixed lists with a 422).
MetaKey = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^$#]")]
Scalar = (
    Annotated[str, StringConstraints(max_length=MAX_STRING_CHARS)]
    | Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
    | Annotated[float, Field(allow_inf_nan=False)]
    | bool
)
MetaValue = Scalar | Annotated[list[Scalar], Field(min_length=1, max_length=1000)]
COLLECTION_PATTERN = COLLECTION_NAME_PATTERN  # validate_collection_name, which routes also call, adds: no ".."
# A metadata filter, bounded before any store call (sieve.retriever.filters says why and holds the limits).
Filters = Annotated[
    dict[str, Any] | None,
    AfterValidator(lambda where: None if where is None else validate_where(where)),
    Field(
        description="Chroma `where` metadata filter, e.g. "
        '`{"$and": [{"year": {"$gte": 2000}}, {"country": {"$in": ["France", "Italy"]}}]}`; '
        f"{FILTER_LIMITS.describe()} (else 422).",
        json_schema_extra={"x-sieve-limits": dict(vars(FILTER_LIMITS))},
    ),
]
QueryText = Field(min_length=1, max_length=MAX_QUERY_CHARS, pattern=r"\S", description="The question or query text.")
CollectionName = Field(
    default=None,
    pattern=COLLECTION_PATTERN,
    description="Collection to search (default: the server's `collection` setting).",
)
# Names read from the registries when a request is validated or the schema generated (not frozen here).
if TYPE_CHECKING:
    PolicyName = str
    ModeName = str
else:
    PolicyName = one_of(lambda: POLICIES)
    ModeName = one_of(lambda: MODES)


class _Strict(BaseModel):
    # Unknown fields are an error: a typo ("top_k" for "k") must not be ignored silently.
    model_config = ConfigDict(extra="forbid")


class _UnicodeBody(BaseModel):
    """A request body whose every string (keys, values, nested) encodes as UTF-8.

    JSON can carry a lone surrogate (``"\\ud800"``) that Python accepts and no tokenizer or store
    can encode; one in a Search-R1 query was a 500. Checked once per body, before any field, with
    an explicit stack (no recursion on deep input).
    """

    @model_validator(mode="before")
    @classmethod
    def _unicode_strings(cls, data: Any) -> Any:
        stack = [data]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                validate_text(item, "every string of the body")
            elif isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        return data


def _agent_help(name: str) -> str:
    """The help of the ``AgentConfig`` field ``name``: written once, there."""
    import dataclasses

    from sieve.agent.config import AgentConfig

    return str(next(f for f in dataclasses.fields(AgentConfig) if f.name == name).metadata["help"])


# -- shared result shapes ---------------------------------------------------------------------------
class EvidenceOut(BaseModel):
    """One ranked result: a chunk, its score and where it came from."""

    id: str = Field(description="Chunk id, `doc_id#position`.")
    doc_id: str
    rank: int
    score: float = Field(
        description="Never rises with rank. Agentic search: the floor's merged score "
        "1/(60 + place) of the policy's ranking interleaved with the question's hybrid ranking, or "
        "with the floor off "
        "the policy's evidence score; retrieval: the mode's score (cosine, BM25 or hybrid RRF)."
    )
    title: str = ""
    text: str = ""
    source: str = ""
    justification: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)


class UsageOut(BaseModel):
    turns: int = 0
    tool_calls: int = 0
    searches: int = 0
    tokens: int = 0
    peak_context_tokens: int = 0
    ms: float = 0.0


# -- /v1/retrieve -----------------------------------------------------------------------------------
class RetrieveRequest(_Strict, _UnicodeBody):
    query: str = QueryText
    collection: str | None = CollectionName
    k: int | None = Field(default=None, ge=1, description="Results to return (the server caps it at max_request_k).")
    mode: ModeName = DEFAULT_MODE
    filters: Filters = None
    exclude: list[str] = Field(default_factory=list, max_length=10_000, description="Chunk ids to leave out.")


class RetrieveResponse(BaseModel):
    query: str
    collection: str
    mode: str
    results: list[EvidenceOut]
    usage: UsageOut


# -- /v1/search (agentic) ---------------------------------------------------------------------------
class SearchRequest(_Strict, _UnicodeBody):
    query: str = QueryText
    collection: str | None = CollectionName
    k: int | None = Field(
        default=None, ge=1, description="Evidence items to return (the server caps it at max_request_k)."
    )
    budget_tokens: int | None = Field(
        default=None,
        ge=MIN_BUDGET_TOKENS,
        le=10_000_000,
        description="Agent context budget (server caps at max_budget_tokens).",
    )
    max_turns: int | None = Field(default=None, ge=1, le=1000)
    policy: PolicyName | None = None
    filters: Filters = None  # applied to every search of the episode
    rollouts: int = Field(default=1, ge=1, le=8, description="Independent episodes fused by RRF.")
    group_by_doc: bool = Field(
        default=False,
        description="Each document's best chunk only (default: the k best "
        "chunks, several of one document when they are the best evidence).",
    )
    include_trace: bool = False
    stream: bool = Field(default=False, description="Send Server-Sent Events: one per tool call, then the result.")
    # LLM policies (openai, local): unset = the server's setting; caps may be lowered, never raised.
    reasoning_effort: Literal["low", "medium", "high"] | None = Field(
        default=None, description=_agent_help("reasoning_effort")
    )
    tool_choice: Literal["auto", "required"] | None = Field(default=None, description=_agent_help("tool_choice"))
    max_new_tokens: int | None = Field(
        default=None, ge=1, description=_agent_help("max_new_tokens") + " At most the server's SIEVE_MAX_NEW_TOKENS."
    )
    max_tool_calls: int | None = Field(
        default=None, ge=1, description=_agent_help("max_tool_calls") + " At most the server's SIEVE_MAX_TOOL_CALLS."
    )
    max_wall_s: float | None = Field(
        default=None,
        gt=0,
        description="Wall-time limit of an LLM policy's episode, in seconds (at most the server's SIEVE_MAX_WALL_S; "
        "other policies stay within SIEVE_REQUEST_TIMEOUT_S).",
    )


class CitationOut(BaseModel):
    """A chunk the answer cites by its handle (``[c1]``), resolved."""

    handle: str = Field(description="The handle as the answer writes it, e.g. `c1`.")
    chunk_id: str
    doc_id: str
    title: str = ""


class SearchResponse(BaseModel):
    query: str
    collection: str
    policy: str
    results: list[EvidenceOut]
    answer: str | None = Field(
        default=None, description="The policy's answer, if it wrote one; it cites chunks by handle (`[c1]`)."
    )
    citations: list[CitationOut] = Field(
        default_factory=list, description="The chunks the answer cites, in order of first mention."
    )
    stop_reason: str = ""
    warnings: list[str] = Field(
        default_factory=list,
        description="How the episode went wrong, if it did (a "
        "policy that wrote no tool call, a failed backend: results are then the floor's), or why its "
        "scores mean little (a question with no word the collection holds).",
    )
    usage: UsageOut
    trace: dict[str, Any] | None = None


# -- POST /search (the stream Chroma's services use to call Context-1) ------------------------------
class Context1Request(_UnicodeBody):
    # Chroma sends credentials and tenant fields Sieve has no use for: extra keys are accepted.
    model_config = ConfigDict(extra="allow")

    query: str = QueryText
    model: str | None = Field(default=None, max_length=200, description="Policy name; unknown names use the default.")
    collection_name: str | None = CollectionName


# -- POST /retrieve (Search-R1) ---------------------------------------------------------------------
class SearchR1Request(_UnicodeBody):
    model_config = ConfigDict(extra="allow")

    queries: list[str] = Field(min_length=1, max_length=10_000)
    topk: int | None = Field(default=3, ge=1)  # capped at max_request_k, with the same message as k
    return_scores: bool = False
    collection: str | None = CollectionName


class SearchR1Doc(BaseModel):
    id: str
    contents: str = Field(description='`"Title"\\ntext`, as Search-R1 corpora store it.')


class SearchR1Scored(BaseModel):
    document: SearchR1Doc
    score: float


class SearchR1Response(BaseModel):
    result: list[list[SearchR1Scored]] | list[list[SearchR1Doc]]


# -- documents and collections ----------------------------------------------------------------------
class DocumentIn(_Strict):
    id: str = Field(min_length=1, max_length=512)
    text: str = Field(min_length=1, max_length=5_000_000)
    title: str = Field(default="", max_length=2000)
    source: str = Field(default="", max_length=2000)
    metadata: dict[MetaKey, MetaValue] = Field(
        default_factory=dict,
        max_length=100,
        description="Filterable values: string, integer, float, bool, or a non-empty list of one of those types "
        '(filter lists with `{"key": {"$contains": value}}`).',
    )
    context: str = Field(
        default="",
        max_length=5_000_000,
        description="Text searched with the document but never returned: for a chat turn sent in a request "
        "of its own, the turn before it (`Name: ...`; within one request Sieve takes it from the previous "
        "document of the same title). Its speaker and its last 400 characters are kept.",
    )


class UpsertRequest(_Strict, _UnicodeBody):
    documents: list[DocumentIn] = Field(min_length=1, max_length=100_000)


class UpsertResponse(BaseModel):
    collection: str
    added: int
    updated: int
    unchanged: int
    chunks_written: int
    skipped: list[str] = Field(default_factory=list, description="Document ids that produced no chunks.")
    seconds: float


class DeleteResponse(BaseModel):
    collection: str
    deleted: int


class CollectionOut(BaseModel):
    name: str
    chunks: int


class DocumentSummaryOut(BaseModel):
    id: str
    title: str = ""
    source: str = ""
    chunks: int = Field(description="Chunks the document was split into.")


class DocumentsPage(BaseModel):
    """One page of a collection's documents (in store order)."""

    collection: str
    total: int
    offset: int
    documents: list[DocumentSummaryOut]


class CollectionsResponse(BaseModel):
    collections: list[CollectionOut]


class ChunkOut(BaseModel):
    id: str
    position: int
    text: str
    char_start: int = 0
    char_end: int = 0
    n_tokens: int = 0


class DocumentOut(BaseModel):
    id: str
    collection: str
    title: str = ""
    source: str = ""
    text: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    chunks: list[ChunkOut]


class ChunkContextOut(BaseModel):
    """A chunk with its neighbours in the same document (``window`` each side), in document order."""

    id: str = Field(description="The chunk asked for.")
    doc_id: str
    collection: str
    title: str = ""
    source: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    n_chunks: int = Field(description="Chunks in the whole document.")
    chunks: list[ChunkOut]


class HealthResponse(BaseModel):
    status: Literal["ok"]
    version: str
    collections_loaded: list[str]
    embedder_loaded: bool


class McpSearchResult(BaseModel):
    """One hit in the shape OpenAI's deep-research MCP connectors require of ``search``."""

    id: str
    title: str
    text: str
    url: str


class McpSearchResults(BaseModel):
    results: list[McpSearchResult]


class McpDocument(BaseModel):
    """``fetch``'s result, as the deep-research connectors require."""

    id: str
    title: str
    text: str
    url: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class Problem(BaseModel):
    """RFC 9457 problem details; ``code`` is Sieve's stable machine code."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    code: str
    errors: list[dict[str, Any]] | None = None


__all__ = [
    "COLLECTION_PATTERN",
    "ChunkContextOut",
    "ChunkOut",
    "CollectionOut",
    "CollectionsResponse",
    "Context1Request",
    "DeleteResponse",
    "DocumentIn",
    "DocumentOut",
    "DocumentSummaryOut",
    "DocumentsPage",
    "EvidenceOut",
    "HealthResponse",
    "McpDocument",
    "McpSearchResult",
    "McpSearchResults",
    "Problem",
    "RetrieveRequest",
    "RetrieveResponse",
    "SearchR1Doc",
    "SearchR1Request",
    "SearchR1Response",
    "SearchR1Scored",
    "SearchRequest",
    "SearchResponse",
    "UpsertRequest",
    "UpsertResponse",
    "UsageOut",
]
