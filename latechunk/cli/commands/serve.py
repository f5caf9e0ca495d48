"""``latechunk serve``: the model (and optionally an index folder) over HTTP (:mod:`latechunk.serve`; the extra
``[serve]``). The options build a :class:`~latechunk.config.ModelConfig`, a :class:`~latechunk.config.PipelineConfig`
(the late pass's macro window) and a :class:`~latechunk.serve.ServeConfig`, whose field defaults the help shows."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from latechunk.cli.app import _fail
from latechunk.config import ModelConfig
from latechunk.serve.config import ServeConfig

_D = ServeConfig()

#: the examples under the command's help (the command's epilog, registered by latechunk.cli)
EPILOG = (
    "\b\nExamples:\n"
    "  latechunk serve\n"
    "  latechunk serve --index out/docs --api-key \"$KEY\" --port 8080\n"
    "  latechunk serve --model BAAI/bge-small-en-v1.5 --max-request-tokens 32768 --quiet\n"
)


def _opt(*names: str, help: str, **kw):
    return typer.Option(*names, help=help, show_default=False, **kw)


def serve(
    model: Annotated[Optional[str], _opt("--model", "-m", help="Hugging Face model id or local folder.  [default: bundled all-MiniLM-L6-v2, offline]")] = None,
    index: Annotated[Optional[Path], _opt("--index", metavar="DIR", help="A folder written by `latechunk embed`, searched by POST /v1/search.")] = None,
    host: Annotated[Optional[str], _opt("--host", help=f"Address to bind; 0.0.0.0 listens on every interface.  [default: {_D.host}]")] = None,
    port: Annotated[Optional[int], _opt("--port", help=f"TCP port (0: a free one).  [default: {_D.port}]")] = None,
    api_key: Annotated[Optional[str], _opt("--api-key", envvar="LATECHUNK_API_KEY", help="Bearer key every /v1/ request must send (Authorization: Bearer KEY); also read from $LATECHUNK_API_KEY.  [default: none]")] = None,
    device_name: Annotated[Optional[str], _opt("--device", help=f"auto (CUDA when present), cpu, cuda, cuda:N.  [default: {ModelConfig.device}]")] = None,
    dtype: Annotated[Optional[str], _opt("--dtype", help="float32, bfloat16 or float16.  [default: bfloat16 on CUDA and on CPUs with AMX or AVX-512 BF16, else float32]")] = None,
    backend: Annotated[Optional[str], _opt("--backend", help=f"torch, onnx or onnx-int8 (ONNX Runtime on the CPU; the [onnx] extra).  [default: {ModelConfig.backend}]")] = None,
    batch_tokens: Annotated[Optional[int], _opt("--batch-tokens", help="Token budget of one forward batch (padded tokens); it never changes a vector.  [default: 4096 on the CPU, 16384 on a GPU]")] = None,
    macro_window: Annotated[Optional[int], _opt("--macro-window", help="Macro-window size in tokens of late_chunking and /v1/chunk, frame included.  [default: the model's max_seq_length, 256 for all-MiniLM-L6-v2]")] = None,
    macro_window_overlap: Annotated[Optional[int], _opt("--macro-window-overlap", help="Content tokens shared by consecutive macro windows.  [default: 0]")] = None,
    late_pooling: Annotated[Optional[str], _opt("--late-pooling", help="mean: late chunking for a model whose own pooling is not mean (refused without it).")] = None,
    max_request_tokens: Annotated[Optional[int], _opt("--max-request-tokens", help=f"Tokens of one request; more is a 413 naming this limit (nothing is truncated).  [default: {_D.max_request_tokens}]")] = None,
    max_inputs: Annotated[Optional[int], _opt("--max-inputs", help=f"Inputs (or documents) of one request; more is a 413.  [default: {_D.max_inputs}]")] = None,
    max_body_bytes: Annotated[Optional[int], _opt("--max-body-bytes", help=f"Bytes of one request body; more is a 413.  [default: {_D.max_body_bytes}]")] = None,
    max_queue: Annotated[Optional[int], _opt("--max-queue", help=f"Requests waiting for the model; one more is a 429 with Retry-After.  [default: {_D.max_queue}]")] = None,
    request_timeout: Annotated[Optional[float], _opt("--request-timeout", help=f"Seconds a request may wait and run; past it, a 504.  [default: {_D.request_timeout:g}]")] = None,
    max_batch_requests: Annotated[Optional[int], _opt("--max-batch-requests", help=f"Concurrent requests merged into one encoder call (1: one request at a time).  [default: {_D.max_batch_requests}]")] = None,
    max_batch_tokens: Annotated[Optional[int], _opt("--max-batch-tokens", help=f"Tokens merged into one encoder call; a larger request runs alone.  [default: {_D.max_batch_tokens}]")] = None,
    shutdown_timeout: Annotated[Optional[float], _opt("--shutdown-timeout", help=f"Seconds the requests in flight get to finish after SIGTERM.  [default: {_D.shutdown_timeout:g}]")] = None,
    trust_remote_code: Annotated[bool, typer.Option("--trust-remote-code", help="Run the model repository's own Python code (only for models that need it).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No access log (one JSON line per request on stderr).")] = False,
) -> None:
    """Serve the model over HTTP: OpenAI-compatible /v1/embeddings (with late_chunking), /v1/chunk, /v1/search over
    --index, /health, /ready and /metrics. See docs/how-to/serve.md."""
    try:
        import fastapi  # noqa: F401
        import prometheus_client  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as err:
        _fail(f"latechunk serve needs the [serve] extra ({err.name} is missing): pip install 'latechunk[serve]'")
    from latechunk.config import DEFAULT_STRATEGY, PipelineConfig
    from latechunk.models import ModelFacts

    try:
        config = _D.with_overrides(host=host, port=port, api_key=api_key, max_request_tokens=max_request_tokens,
                                   max_inputs=max_inputs, max_body_bytes=max_body_bytes, max_queue=max_queue,
                                   request_timeout=request_timeout, max_batch_requests=max_batch_requests,
                                   max_batch_tokens=max_batch_tokens, shutdown_timeout=shutdown_timeout)
        given = {"name": model, "device": device_name, "dtype": dtype, "backend": backend,
                 "batch_tokens": batch_tokens}
        model_config = ModelConfig(**{k: v for k, v in given.items() if v is not None},
                                   trust_remote_code=trust_remote_code)
        pipeline = PipelineConfig(strategies=(DEFAULT_STRATEGY,), macro_window=macro_window,
                                  macro_window_overlap=macro_window_overlap, late_pooling=late_pooling)
        pipeline.check_model(ModelFacts.read(model))  # a bad window fails before torch loads a weight
    except ValueError as err:
        _fail(str(err))
    if index is not None and not index.is_dir():
        _fail(f"--index {index}: not a folder (give an output folder of `latechunk embed`)")
    _access_log(quiet)
    from latechunk.serve.run import build_app
    from latechunk.serve.run import serve as run_server

    try:
        app = build_app(model_config, config, pipeline, None if index is None else str(index))
    except ValueError as err:
        _fail(str(err))
    service = app.state.service
    if config.api_key is None and not _loopback(config.host):
        typer.echo(f"latechunk serve: warning: --host {config.host} listens beyond this machine and there is no "
                   "--api-key: anyone who can reach it can use it", err=True)

    def announce(bound_host: str, bound_port: int) -> None:  # after the bind: the real port (--port 0)
        typer.echo(f"latechunk serve: {service.model_name} ({service.encoder.dim} dim, {service.encoder.device}, "
                   f"{str(service.encoder.dtype).replace('torch.', '')}) on http://{config.host}:{bound_port}"
                   + (f", index {index}" if index is not None else "")
                   + ("; API key required" if config.api_key else ""), err=True)

    run_server(app, config, log_level="warning" if quiet else "info", on_started=announce)


def _loopback(host: str) -> bool:
    """Whether ``host`` only listens on this machine (127.0.0.0/8, ::1, localhost)."""
    import ipaddress

    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _access_log(quiet: bool) -> None:
    """The access log's JSON lines on stderr (not with ``--quiet``)."""
    log = logging.getLogger("latechunk.serve.access")
    log.propagate = False
    log.setLevel(logging.WARNING if quiet else logging.INFO)
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        log.addHandler(handler)
