"""The FastAPI app of ``latechunk serve``: :func:`create_app` (routes, the error shape, the gate in front of every
request), over a :class:`~latechunk.serve.service.Service`.

Every refusal is a JSON body in OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``, with a 4xx
status (never a 500 for what a client sent): 400 a body that is not UTF-8, not JSON, not an object, or has a
missing, unknown or mistyped field or an empty input; 401 a missing or wrong bearer key; 404 another model or no
index; 413 a body, input count or token count past its limit (the message names the limit and its option); 429 a
full queue and 503 a server shutting down (both with ``Retry-After``); 504 a request past its timeout.

Each answered request is logged as one JSON line on the ``latechunk.serve.access`` logger (method, path, status,
seconds, tokens, client, request id).

Tests: ``tests/serve/test_serve_http.py``, ``tests/serve/test_serve_bad_input.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import time
import uuid

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from latechunk.serve.batcher import Draining, QueueFull
from latechunk.serve.metrics import Metrics
from latechunk.serve.schemas import (
    BadRequest,
    ChunkRequest,
    EmbeddingRequest,
    EmbeddingResponse,
    SearchRequest,
    parse_body,
)

access_log = logging.getLogger("latechunk.serve.access")
log = logging.getLogger("latechunk.serve")

#: the endpoints whose requests need the bearer key (when the server has one)
_PROTECTED = "/v1/"


def _error(err: BadRequest) -> JSONResponse:
    return JSONResponse(err.body(), status_code=err.status, headers=err.headers)


def _body_schema(model) -> dict:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": model.model_json_schema()}}}}


class Gate:
    """Pure ASGI middleware in front of every HTTP request: the bearer key, refusal while shutting down, the
    in-flight gauge, latency and request metrics, and one access-log line per request."""

    def __init__(self, app, state) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope, receive, send) -> None:
        """Answer one ASGI connection scope (HTTP requests gated and logged; others passed through)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        st = self.state
        t0 = time.perf_counter()
        path = scope.get("path", "")
        rid = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"x-request-id"), None) \
            or uuid.uuid4().hex[:16]
        scope.setdefault("state", {})["request_id"] = rid
        sent = {"status": 0}

        async def send_logged(message) -> None:
            if message["type"] == "http.response.start":
                sent["status"] = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", rid.encode("latin-1"))]
            await send(message)

        refusal = self._refusal(scope, path)
        st.metrics.in_flight.inc()
        try:
            if refusal is not None:
                await _error(refusal)(scope, receive, send_logged)
            else:
                await self.app(scope, receive, send_logged)
        finally:
            st.metrics.in_flight.dec()
            seconds = time.perf_counter() - t0
            status = sent["status"] or 499  # no answer: the client went away first
            endpoint = path if path in st.endpoints else "other"
            st.metrics.requests.labels(endpoint, str(status)).inc()
            st.metrics.latency.labels(endpoint).observe(seconds)
            tokens = scope["state"].get("tokens", 0)
            if tokens:
                st.metrics.tokens.labels(endpoint).inc(tokens)
            client = scope.get("client")
            access_log.info(json.dumps({
                "event": "request", "request_id": rid, "method": scope.get("method"), "path": path,
                "status": status, "seconds": round(seconds, 6), "tokens": tokens,
                "client": f"{client[0]}:{client[1]}" if client else None,
            }))

    def _refusal(self, scope, path: str) -> BadRequest | None:
        st = self.state
        if st.draining and path.startswith(_PROTECTED):
            return BadRequest("the server is shutting down; retry on another instance", status=503,
                              code="shutting_down", headers={"Retry-After": str(st.config.retry_after)})
        key = st.config.api_key
        if key is not None and path.startswith(_PROTECTED):
            auth = next((v for k, v in scope.get("headers", ()) if k == b"authorization"), b"")
            scheme, _, given = auth.decode("latin-1").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), key.encode()):
                return BadRequest("missing or wrong API key: send Authorization: Bearer KEY (latechunk serve "
                                  "--api-key)", status=401, code="invalid_api_key",
                                  headers={"WWW-Authenticate": "Bearer"})
        return None


async def _read_body(request: Request, limit: int) -> bytes:
    """The request body, refused (413) as soon as it is known to pass ``limit`` bytes."""
    length = request.headers.get("content-length")
    too_large = BadRequest(f"the request body is larger than this server's limit of {limit:,} bytes "
                           "(--max-body-bytes)", status=413, code="body_too_large")
    if length is not None:
        if not length.strip().isdigit():
            raise BadRequest(f"bad Content-Length header: {length[:40]!r}", code="invalid_header")
        if int(length) > limit:
            raise too_large
    chunks, n = [], 0
    async for part in request.stream():
        n += len(part)
        if n > limit:
            raise too_large
        chunks.append(part)
    return b"".join(chunks)


async def _disconnected(request: Request) -> None:
    """Return when the client closes its connection (the body already read: the next message is the end)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


def create_app(service, *, index_path: str | None = None) -> FastAPI:
    """The app over ``service``: its routes, error handlers and gate; the batcher starts and stops with it.

    Args:
        service: The :class:`~latechunk.serve.service.Service` (its encoder, config, index and batcher).
        index_path: The ``--index`` folder, for ``/health``.

    Returns:
        The FastAPI app; ``app.state`` holds ``service``, ``config``, ``metrics``, ``draining``, ``ready``.
    """
    import latechunk

    config = service.config
    metrics = service.metrics or Metrics()
    service.metrics = metrics
    service.batcher.metrics = metrics

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        service.batcher.start()
        app.state.ready = True
        try:
            yield
        finally:
            app.state.draining = True
            app.state.ready = False
            await service.batcher.close(config.shutdown_timeout)

    app = FastAPI(title="latechunk serve", version=latechunk.__version__, lifespan=lifespan,
                  description="Late chunking over HTTP: OpenAI-compatible /v1/embeddings (with Jina's task and "
                              "late_chunking), /v1/chunk, /v1/search.")
    app.state.service, app.state.config, app.state.metrics = service, config, metrics
    app.state.draining, app.state.ready = False, False
    app.state.endpoints = {"/v1/embeddings", "/v1/chunk", "/v1/search", "/v1/models", "/health", "/ready",
                           "/metrics"}

    async def wait_for(request: Request, future: asyncio.Future):
        """The job's result; a 504 past the request timeout; the job dropped if the client goes away."""
        watcher = asyncio.ensure_future(_disconnected(request))
        try:
            done, _ = await asyncio.wait({future, watcher}, timeout=config.request_timeout,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            watcher.cancel()
        if future in done:
            return future.result()
        future.cancel()
        if watcher in done:
            raise _ClientGone()
        raise BadRequest(f"the request took longer than this server's timeout of {config.request_timeout:g} s "
                         "(--request-timeout)", status=504, code="timeout")

    async def handle(request: Request, model, work) -> Response:
        try:
            req = parse_body(await _read_body(request, config.max_body_bytes), model)
            body, tokens = await work(req, lambda fut: wait_for(request, fut))
            request.scope["state"]["tokens"] = tokens
            return JSONResponse(body)
        except BadRequest as err:
            return _error(err)
        except QueueFull:
            return _error(BadRequest(f"the queue holds {config.max_queue:,} requests (--max-queue); retry later",
                                     status=429, code="queue_full",
                                     headers={"Retry-After": str(config.retry_after)}))
        except Draining:
            return _error(BadRequest("the server is shutting down; retry on another instance", status=503,
                                     code="shutting_down", headers={"Retry-After": str(config.retry_after)}))
        except _ClientGone:
            return Response(status_code=499)  # nobody reads it
        except Exception as err:
            log.exception("unexpected error on %s %s", request.method, request.url.path)
            return _error(BadRequest(f"internal error: {type(err).__name__}: {err}", status=500,
                                     code="internal_error"))

    @app.post("/v1/embeddings", openapi_extra=_body_schema(EmbeddingRequest),
              responses={200: {"model": EmbeddingResponse}}, tags=["embeddings"])
    async def embeddings(request: Request) -> Response:
        """OpenAI's embeddings API (``input``, ``model``, ``encoding_format``, ``dimensions``), plus Jina's
        ``task`` and ``late_chunking``: the inputs as chunks of one document, one late-pooled vector each."""
        return await handle(request, EmbeddingRequest, service.embeddings)

    @app.post("/v1/chunk", openapi_extra=_body_schema(ChunkRequest), tags=["chunk"])
    async def chunk(request: Request) -> Response:
        """A document (or several) and a strategy SPEC in; chunks with char and token spans, heading paths and
        late (naive, contextual, fused) vectors out: what ``LateChunker`` returns."""
        return await handle(request, ChunkRequest, service.chunk)

    @app.post("/v1/search", openapi_extra=_body_schema(SearchRequest), tags=["search"])
    async def search(request: Request) -> Response:
        """Search the ``--index`` folder: the hits ``latechunk search --json`` prints (chunk ids included)."""
        return await handle(request, SearchRequest, service.search)

    @app.get("/v1/models", tags=["embeddings"])
    async def models() -> dict:
        """The served model, as OpenAI lists models."""
        return {"object": "list", "data": [{"id": service.model_name, "object": "model", "owned_by": "latechunk",
                                            "dim": service.encoder.dim}]}

    @app.get("/health", tags=["operations"])
    async def health() -> dict:
        """Liveness: the process answers; the model, its dimension, the index."""
        return {"status": "ok", "model": service.model_name, "dim": service.encoder.dim, "index": index_path,
                "version": latechunk.__version__}

    @app.get("/ready", tags=["operations"])
    async def ready() -> Response:
        """Readiness: 200 while requests are taken, 503 before start-up ends and while shutting down."""
        if app.state.ready and not app.state.draining:
            return JSONResponse({"status": "ready", "queue": service.batcher.depth})
        return JSONResponse({"status": "draining" if app.state.draining else "starting"}, status_code=503,
                            headers={"Retry-After": str(config.retry_after)})

    @app.get("/metrics", tags=["operations"])
    async def metrics_page() -> Response:
        """Prometheus metrics (text exposition format)."""
        return Response(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException as StarletteHTTPException

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        msg = {404: f"no such endpoint: {request.method} {request.url.path}",
               405: f"{request.method} is not allowed on {request.url.path}"}.get(exc.status_code, str(exc.detail))
        return _error(BadRequest(msg, status=exc.status_code, code="not_found" if exc.status_code == 404 else
                                 "method_not_allowed" if exc.status_code == 405 else "http_error",
                                 headers=dict(exc.headers or {})))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        return _error(BadRequest(str(exc.errors())[:2000], code="invalid_field"))

    @app.exception_handler(Exception)
    async def server_error(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return _error(BadRequest(f"internal error: {type(exc).__name__}: {exc}", status=500, code="internal_error"))

    app.add_middleware(Gate, state=app.state)
    return app


class _ClientGone(Exception):
    """The client closed its connection before its answer was ready."""
