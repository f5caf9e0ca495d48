"""``latechunk serve``: late chunking over HTTP, speaking the APIs clients already use (the optional extra
``[serve]``: FastAPI, uvicorn, prometheus-client).

Endpoints: ``POST /v1/embeddings`` (OpenAI's embeddings API, plus Jina's ``task`` and ``late_chunking``),
``POST /v1/chunk`` (what :class:`~latechunk.api.LateChunker` returns), ``POST /v1/search`` (what
``latechunk search --json`` prints, over ``--index DIR``), ``GET /v1/models``, ``/health``, ``/ready``,
``/metrics`` (Prometheus) and FastAPI's OpenAPI page (``/docs``). The server is one more command over the same
configs, encoder and pipeline as the others.

One module per concern: :mod:`~latechunk.serve.config` (:class:`ServeConfig`: listen address, key, limits,
batching; no heavy import), :mod:`~latechunk.serve.schemas` (request and response models, :func:`parse_body`),
:mod:`~latechunk.serve.batcher` (the dynamic batcher: one asyncio queue, one encoder thread),
:mod:`~latechunk.serve.service` (what each endpoint does below HTTP), :mod:`~latechunk.serve.app` (the FastAPI
app, the error shape, auth and access logs), :mod:`~latechunk.serve.metrics` (Prometheus),
:mod:`~latechunk.serve.run` (:func:`build_app`, :func:`serve`, :class:`ServerThread`). Names are exposed lazily
(PEP 562): importing this package imports no FastAPI or torch.

Tests: ``tests/serve/``.
"""

from __future__ import annotations

from latechunk.serve.config import LATE_CHUNKING_SEPARATOR, ServeConfig

__all__ = ["LATE_CHUNKING_SEPARATOR", "ServeConfig", "ServerThread", "build_app", "create_app", "serve"]

_LAZY = {"build_app": "latechunk.serve.run", "serve": "latechunk.serve.run", "ServerThread": "latechunk.serve.run",
         "create_app": "latechunk.serve.app"}


def __getattr__(name: str):
    """:func:`build_app`, :func:`serve`, :class:`ServerThread` and :func:`create_app`, imported on first use."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
