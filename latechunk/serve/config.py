"""The settings of ``latechunk serve``: :class:`ServeConfig` (where it listens, the key, the limits and the dynamic
batcher), frozen and validated once; the command line's defaults are its field defaults. The model is a
:class:`~latechunk.config.ModelConfig` beside it, the late pass's macro window a
:class:`~latechunk.config.PipelineConfig` (built by :func:`latechunk.serve.app.create_app`'s caller). Nothing here
imports torch or FastAPI.

Tests: ``tests/serve/test_serve_bad_input.py``, ``tests/serve/test_serve_cli.py``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from latechunk.config import _positive_int, _require

#: the separator put between the inputs of a ``late_chunking`` request to make its one document
LATE_CHUNKING_SEPARATOR = " "


@dataclass(frozen=True)
class ServeConfig:
    """How ``latechunk serve`` listens, what it accepts and how it batches.

    Attributes:
        host: The address to bind (``127.0.0.1``: this machine only; ``0.0.0.0`` to every interface).
        port: The TCP port (0: a free one, picked by the system).
        api_key: A bearer key every ``/v1/*`` request must carry (``Authorization: Bearer KEY``); ``None``: none.
        max_request_tokens: Tokens of one request (all its inputs, frames included); more is a 413 naming the
            limit (nothing is truncated).
        max_inputs: Inputs of one request (``input`` items, ``documents``); more is a 413.
        max_body_bytes: Bytes of one request body; more is a 413 (checked as the body arrives).
        max_queue: Requests waiting for the encoder; one more is a 429 with ``Retry-After``.
        request_timeout: Seconds a request may wait and run before a 504 (its work is dropped if not begun).
        max_batch_requests: Requests merged into one encoder call at most (1: one request at a time).
        max_batch_tokens: Tokens merged into one encoder call at most (a longer request runs alone); the encoder
            splits them into forward batches of its own token budget.
        retry_after: Seconds a 429 or 503 tells the client to wait (``Retry-After``).
        shutdown_timeout: Seconds in-flight requests get to finish after SIGTERM.

    Raises:
        ValueError: on a limit below 1 (a timeout not above 0), a port outside 0-65535, or an empty host or key.
    """

    host: str = "127.0.0.1"
    port: int = 8000
    api_key: str | None = None
    max_request_tokens: int = 65536
    max_inputs: int = 2048
    max_body_bytes: int = 8 * 1024 * 1024
    max_queue: int = 1024
    request_timeout: float = 120.0
    max_batch_requests: int = 64
    max_batch_tokens: int = 16384
    retry_after: int = 1
    shutdown_timeout: float = 30.0

    def __post_init__(self) -> None:
        _require(isinstance(self.host, str) and bool(self.host.strip()), f"host must be an address, got {self.host!r}")
        _require(isinstance(self.port, int) and not isinstance(self.port, bool) and 0 <= self.port <= 65535,
                 f"port must be an integer in 0-65535, got {self.port!r}")
        _require(self.api_key is None or (isinstance(self.api_key, str) and bool(self.api_key.strip())),
                 "api_key must be a non-empty string (or None: no key)")
        for name in ("max_request_tokens", "max_inputs", "max_body_bytes", "max_queue", "max_batch_requests",
                     "max_batch_tokens", "retry_after"):
            _positive_int(f"{name} (--{name.replace('_', '-')})", getattr(self, name))
        for name in ("request_timeout", "shutdown_timeout"):
            v = getattr(self, name)
            _require(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < float("inf"),
                     f"{name} (--{name.replace('_', '-')}) must be a number of seconds > 0, got {v!r}")

    def with_overrides(self, **given) -> ServeConfig:
        """This config with the settings given (``None`` values left out: an option not given).

        Args:
            **given: ``{field: value}``.

        Returns:
            A new, validated :class:`ServeConfig`.

        Raises:
            ValueError: on an unknown field or a bad value.
        """
        fields = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(given) - fields)
        _require(not unknown, f"unknown serve setting(s): {', '.join(unknown)}")
        return dataclasses.replace(self, **{k: v for k, v in given.items() if v is not None})
