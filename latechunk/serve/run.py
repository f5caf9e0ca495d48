"""Running the server: :func:`build_app` (the encoder, the optional index and the app, from the configs the command
line builds), :func:`serve` (uvicorn in the foreground, graceful on SIGTERM/SIGINT) and :class:`ServerThread` (the
same server in a background thread on a free port: tests, benchmarks, notebooks).

Shutdown: on SIGTERM the server stops listening, answers every new ``/v1/*`` request on an open connection with
a 503 and ``Retry-After``, lets the requests in flight finish (up to ``shutdown_timeout`` seconds), then stops the
batcher. uvicorn: https://www.uvicorn.org/.

Tests: ``tests/serve/test_serve_cli.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time

from latechunk.config import ModelConfig, PipelineConfig
from latechunk.serve.config import ServeConfig

log = logging.getLogger("latechunk.serve")


def build_app(model: ModelConfig | None = None, config: ServeConfig | None = None,
              pipeline: PipelineConfig | None = None, index: str | None = None, encoder=None):
    """The app of ``latechunk serve``: the model loaded once, the index opened (its query model loaded), the
    batcher ready to start with the app.

    Args:
        model: Which model and how to run it (default ``ModelConfig()``: the bundled all-MiniLM-L6-v2).
        config: Where to listen and the limits (default ``ServeConfig()``).
        pipeline: The late pass's macro window, overlap and ``late_pooling`` (default ``PipelineConfig(DEFAULT_STRATEGY)``).
        index: An output folder of ``latechunk embed`` for ``/v1/search``, or None.
        encoder: An :class:`~latechunk.encoder.Encoder` already loaded (then ``model`` is not used).

    Returns:
        The FastAPI app (:func:`latechunk.serve.app.create_app`).

    Raises:
        ValueError: on a model that does not load, a macro window it cannot take, or an index folder that does not
            open (or whose model does not load).
    """
    from latechunk.encoder import Encoder
    from latechunk.serve.app import create_app
    from latechunk.serve.metrics import Metrics
    from latechunk.serve.service import Service

    config = config or ServeConfig()
    if encoder is None:
        encoder = Encoder.from_config(model or ModelConfig())
    idx = None
    if index is not None:
        from latechunk.api import Index

        idx = Index.load(index, (model or ModelConfig()).device)
        if len(idx):
            _ = idx.encoder  # the query model loads now, not on the first search
    service = Service(encoder, config, pipeline, idx, Metrics())
    return create_app(service, index_path=None if index is None else str(index))


def _uvicorn_server(app, config: ServeConfig, log_level: str = "info", on_started=None):
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server that marks the app as draining the moment a signal asks it to stop, and calls
        ``on_started(host, port)`` once it listens (the port really bound: ``--port 0`` gives a free one)."""

        async def startup(self, sockets=None) -> None:
            await super().startup(sockets)
            if self.started and on_started is not None and self.servers and self.servers[0].sockets:
                host, port = self.servers[0].sockets[0].getsockname()[:2]
                on_started(host, port)

        def handle_exit(self, sig, frame) -> None:
            app.state.draining = True
            app.state.ready = False
            super().handle_exit(sig, frame)

        @contextlib.contextmanager
        def capture_signals(self):
            """uvicorn's, without raising the signal again once the shutdown is done: a drained server exits 0."""
            with super().capture_signals():
                yield
                captured = getattr(self, "_captured_signals", None)
                if isinstance(captured, list):
                    captured.clear()

    cfg = uvicorn.Config(app, host=config.host, port=config.port, log_level=log_level, access_log=False,
                         lifespan="on", timeout_graceful_shutdown=int(max(1, config.shutdown_timeout)),
                         limit_concurrency=None, timeout_keep_alive=5, server_header=False)
    return Server(cfg)


def serve(app, config: ServeConfig, log_level: str = "info", on_started=None) -> None:
    """Serve ``app`` in the foreground until SIGTERM or SIGINT (then gracefully: see the module docstring).

    Args:
        app: The app of :func:`build_app`.
        config: Its :class:`~latechunk.serve.config.ServeConfig` (host, port, shutdown timeout).
        log_level: uvicorn's log level.
        on_started: Called as ``on_started(host, port)`` once the socket is bound and the app started (the
            bound port: a free one for port 0); never called when the bind fails.
    """
    _uvicorn_server(app, config, log_level, on_started).run()


class ServerThread:
    """The server in a background thread, on ``config.host`` and a free port unless ``config.port`` is set.

    Use as a context manager: ``with ServerThread(app, config) as url: ...`` (``url`` like
    ``http://127.0.0.1:PORT``); on exit the server shuts down gracefully.

    Args:
        app: The app of :func:`build_app` (or :func:`~latechunk.serve.app.create_app`).
        config: Its :class:`~latechunk.serve.config.ServeConfig` (the port 8000 default is replaced by 0: free).
        start_timeout: Seconds to wait for the server to listen.

    Raises:
        RuntimeError: if the server does not start within ``start_timeout``.
    """

    def __init__(self, app, config: ServeConfig | None = None, start_timeout: float = 60.0,
                 log_level: str = "warning") -> None:
        import dataclasses

        config = config or ServeConfig()
        if config.port == ServeConfig.port:
            config = dataclasses.replace(config, port=0)
        self.app, self.config = app, config
        self.server = _uvicorn_server(app, config, log_level)
        self.start_timeout = start_timeout
        self.thread: threading.Thread | None = None
        self.url = ""

    def __enter__(self) -> str:
        self.thread = threading.Thread(target=lambda: asyncio.run(self.server.serve()), name="latechunk-serve",
                                       daemon=True)
        self.thread.start()
        t_end = time.monotonic() + self.start_timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > t_end:
                raise RuntimeError("the server did not start (see the log)")
            time.sleep(0.01)
        host, port = self.server.servers[0].sockets[0].getsockname()[:2]
        self.url = f"http://{host}:{port}"
        return self.url

    def stop(self) -> None:
        """Ask the server to stop (as SIGTERM does) and wait for it."""
        self.app.state.draining = True
        self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout=self.config.shutdown_timeout + 10)

    def __exit__(self, *exc) -> None:
        self.stop()
