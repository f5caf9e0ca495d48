"""What the server's endpoints take and give: pydantic models of the request bodies (unknown fields refused, no
type coercion: ``"3"`` is not a number, ``1`` is not a string) and of the responses (for the OpenAPI page), and
:func:`parse_body` (bytes in, a validated request or a :class:`BadRequest` saying what was wrong).

``POST /v1/embeddings`` follows OpenAI's embeddings API (https://platform.openai.com/docs/api-reference/embeddings:
``input``, ``model``, ``encoding_format``, ``dimensions``, ``user``) with the two fields of Jina's
(https://jina.ai/embeddings/: ``task``, ``late_chunking``).

Tests: ``tests/serve/test_serve_bad_input.py``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
)

from latechunk.config import MODES

#: Jina's task names and the prompt of the model each one takes (``Encoder.prompts``' names)
TASK_PROMPTS = {"retrieval.query": "query", "retrieval.passage": "document"}

_FORBID = ConfigDict(extra="forbid", strict=True)


class BadRequest(ValueError):
    """A request the server refuses: its HTTP status, an OpenAI-style error type and code, the field (``param``).

    Args:
        message: What was wrong, for the client.
        status: The HTTP status (4xx).
        param: The field at fault, or None.
        code: A short machine-readable code.
        headers: Extra response headers (``Retry-After``).
    """

    def __init__(self, message: str, status: int = 400, param: str | None = None, code: str = "invalid_request",
                 headers: dict | None = None) -> None:
        super().__init__(message)
        self.message, self.status, self.param, self.code = message, status, param, code
        self.headers = headers or {}

    def body(self) -> dict:
        """The JSON error body: ``{"error": {"message", "type", "param", "code"}}`` (OpenAI's shape)."""
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        if self.status == 401:
            kind = "authentication_error"
        elif self.status == 429:
            kind = "rate_limit_error"
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}}


def _texts(value: Any, field: str) -> Any:
    """Refuse token-id arrays with a message saying so (the server takes text only)."""
    items = value if isinstance(value, list) else [value]
    for i, v in enumerate(items):
        if isinstance(v, int) or (isinstance(v, list) and v and all(isinstance(x, int) for x in v)):
            raise ValueError(f"{field}[{i}] is a token id or an array of token ids; this server takes text only "
                             "(send the strings)")
    return value


class EmbeddingRequest(BaseModel):
    """``POST /v1/embeddings``: OpenAI's request, plus Jina's ``task`` and ``late_chunking``."""

    model_config = _FORBID

    input: StrictStr | list[StrictStr] = Field(
        description="A text or a list of texts (one vector each, in order). With late_chunking: the chunks of one "
                    "document, in order.")
    model: StrictStr | None = Field(None, description="The served model's name (GET /v1/models); optional.")
    encoding_format: Literal["float", "base64"] = Field(
        "float", description="float: a list of numbers; base64: the little-endian float32 bytes, base64-encoded.")
    dimensions: Annotated[StrictInt, Field(ge=1)] | None = Field(
        None, description="Keep the first N dimensions (Matryoshka), L2-normalised again.")
    user: StrictStr | None = Field(None, description="Accepted for OpenAI compatibility; unused.")
    task: StrictStr | None = Field(
        None, description="retrieval.query or retrieval.passage (Jina): the model's query or document prompt; or a "
                          "prompt name of the model. Default: no prompt (late_chunking: the document prompt).")
    late_chunking: StrictBool = Field(
        False, description="The inputs are consecutive chunks of one document: joined with a single space, encoded "
                           "in one pass (macro windows past the model's input, never truncated), one late-pooled "
                           "vector per input.")

    @field_validator("input", mode="before")
    @classmethod
    def _no_token_ids(cls, v: Any) -> Any:
        return _texts(v, "input")


class DocumentItem(BaseModel):
    """One document of ``POST /v1/chunk``."""

    model_config = _FORBID

    id: StrictStr | None = Field(None, description="Its id (doc_id of its chunks); default its position.")
    text: StrictStr = Field(description="Its text.")
    metadata: dict[str, Any] | None = Field(None, description="Copied into each of its chunks.")


class ChunkRequest(BaseModel):
    """``POST /v1/chunk``: a document (or several) and a strategy SPEC; what ``LateChunker`` takes."""

    model_config = _FORBID

    document: StrictStr | None = Field(None, description="One document's text (doc_id \"0\").")
    documents: list[StrictStr | DocumentItem] | None = Field(
        None, description="Several documents: texts or {id, text, metadata} objects.")
    strategy: StrictStr | None = Field(None, description="A SPEC (`latechunk strategies`); default embed's.")
    mode: Literal[MODES] = Field("late", description="late, naive, contextual or fused vectors.")  # type: ignore[valid-type]
    vectors: StrictBool = Field(True, description="False: chunks and spans only, no model pass.")
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: Annotated[StrictInt, Field(ge=1)] | None = None
    macro_window: Annotated[StrictInt, Field(ge=1)] | None = Field(
        None, description="Macro-window size in tokens, frame included; default the server's.")
    markdown: StrictBool | None = Field(None, description="Read the documents as markdown (headings, fences).")
    model: StrictStr | None = None


class SearchRequest(BaseModel):
    """``POST /v1/search`` over the server's ``--index`` folder: what ``latechunk search`` takes."""

    model_config = _FORBID

    query: StrictStr = Field(description="The query text (embedded with the model's query prompt).")
    k: Annotated[StrictInt, Field(ge=1, le=10000)] = Field(5, description="Number of hits.")
    where: dict[str, StrictStr | StrictInt | float | StrictBool] | list[StrictStr] | None = Field(
        None, description="{FIELD: VALUE} (or [\"FIELD=VALUE\", ...]): only chunks that meet every condition.")
    expand: StrictStr | None = Field(None, description="section, neighbors:N or document: each hit's context.")
    nprobe: Annotated[StrictInt, Field(ge=1)] | None = Field(None, description="IVF lists probed per query.")


class EmbeddingItem(BaseModel):
    """One vector of an embeddings response."""

    object: Literal["embedding"] = "embedding"
    index: int
    embedding: list[float] | str


class Usage(BaseModel):
    """Tokens a request cost (frames included)."""

    prompt_tokens: int
    total_tokens: int


class EmbeddingResponse(BaseModel):
    """``POST /v1/embeddings``' answer (OpenAI's shape)."""

    object: Literal["list"] = "list"
    data: list[EmbeddingItem]
    model: str
    usage: Usage


def _where(errors: list[dict]) -> str:
    """One line per pydantic error: ``field.path: message``."""
    lines = []
    for e in errors[:10]:
        loc = ".".join(str(p) for p in e.get("loc", ()) if not (isinstance(p, str) and p.startswith("function-")))
        msg = e.get("msg", "invalid").removeprefix("Value error, ")
        lines.append(f"{loc or 'body'}: {msg}")
    more = len(errors) - 10
    return "; ".join(lines) + (f"; and {more} more" if more > 0 else "")


def _no_constant(name: str):
    raise ValueError(f"{name} is not valid JSON (use a number)")


def parse_body(raw: bytes, model: type[BaseModel]) -> BaseModel:
    """A request body read as ``model``: strict UTF-8, strict JSON (no NaN/Infinity), the model's checks.

    Args:
        raw: The body's bytes.
        model: The request model.

    Returns:
        The validated request.

    Raises:
        BadRequest: (400) on bytes that are not UTF-8 (naming the offset), JSON that does not parse (naming line
            and column), a body that is not an object, or a field that is missing, unknown or of the wrong type
            or value (naming each).
    """
    if not raw:
        raise BadRequest("the request body is empty: send a JSON object", code="empty_body")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadRequest(f"the request body is not UTF-8: byte {err.start} ({raw[err.start:err.start + 1]!r}) "
                         "cannot be decoded", code="invalid_utf8") from None
    try:
        obj = json.loads(text, parse_constant=_no_constant)
    except ValueError as err:
        where = f" (line {err.lineno}, column {err.colno})" if isinstance(err, json.JSONDecodeError) else ""
        msg = err.msg if isinstance(err, json.JSONDecodeError) else str(err)
        raise BadRequest(f"the request body is not valid JSON: {msg}{where}", code="invalid_json") from None
    except RecursionError:
        raise BadRequest("the request body's JSON is nested too deeply", code="invalid_json") from None
    if not isinstance(obj, dict):
        raise BadRequest(f"the request body must be a JSON object, got {type(obj).__name__}", code="invalid_json")
    try:
        return model.model_validate(obj)
    except ValidationError as err:
        errors = err.errors(include_url=False)
        param = ".".join(str(p) for p in errors[0].get("loc", ())[:1]) if errors else None
        raise BadRequest(_where(errors), param=param or None, code="invalid_field") from None
