"""The server's Prometheus metrics (``GET /metrics``), in a registry of their own per app (prometheus-client,
https://prometheus.github.io/client_python/): requests by endpoint and status, tokens by endpoint, latency per
endpoint, the batcher's batch sizes (requests and tokens per encoder call) and encoder seconds, the queue depth.

Tests: ``tests/serve/test_serve_http.py``.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

_LATENCY = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
_TOKENS = (16, 64, 256, 1024, 4096, 16384, 65536, 262144)


class Metrics:
    """The metrics of one app (``latechunk_`` prefix).

    Attributes:
        requests: Counter ``latechunk_requests_total{endpoint, status}``.
        tokens: Counter ``latechunk_tokens_total{endpoint}``: tokens of the requests answered (frames included).
        latency: Histogram ``latechunk_request_seconds{endpoint}``: from the request's arrival to its answer.
        batch_requests: Histogram ``latechunk_batch_requests``: requests per encoder call.
        batch_tokens: Histogram ``latechunk_batch_tokens``: tokens per encoder call.
        encode_seconds: Histogram ``latechunk_encode_seconds``: seconds per encoder call.
        queue_depth: Gauge ``latechunk_queue_depth``: requests waiting for the encoder.
        in_flight: Gauge ``latechunk_requests_in_flight``.
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("latechunk_requests", "Requests answered, by endpoint and status.",
                                ["endpoint", "status"], registry=r)
        self.tokens = Counter("latechunk_tokens", "Tokens of the requests answered (frames included).",
                              ["endpoint"], registry=r)
        self.latency = Histogram("latechunk_request_seconds", "Seconds from a request's arrival to its answer.",
                                 ["endpoint"], buckets=_LATENCY, registry=r)
        self.batch_requests = Histogram("latechunk_batch_requests", "Requests merged into one encoder call.",
                                        buckets=_SIZES, registry=r)
        self.batch_tokens = Histogram("latechunk_batch_tokens", "Tokens of one encoder call.", buckets=_TOKENS,
                                      registry=r)
        self.encode_seconds = Histogram("latechunk_encode_seconds", "Seconds of one encoder call.",
                                        buckets=_LATENCY, registry=r)
        self.queue_depth = Gauge("latechunk_queue_depth", "Requests waiting for the encoder.", registry=r)
        self.in_flight = Gauge("latechunk_requests_in_flight", "Requests being answered.", registry=r)

    def observe_batch(self, jobs, tokens: int, seconds: float) -> None:
        """Count one encoder call of ``len(jobs)`` requests and ``tokens`` tokens that took ``seconds``."""
        self.batch_requests.observe(len(jobs))
        self.batch_tokens.observe(tokens)
        self.encode_seconds.observe(seconds)

    def render(self) -> bytes:
        """The text exposition format of every metric."""
        return generate_latest(self.registry)
