"""latechunk/serve refuses what it cannot take with a 4xx and a body saying what was wrong, never a 500, and keeps
serving: malformed JSON, wrong types, empty input, NaN dimensions, unknown fields, a 10 MB string, 10,000 inputs,
invalid UTF-8; the limits (413 naming the limit, 429 with Retry-After on a full queue, 504 past the timeout);
a client that goes away; and a hypothesis fuzz over the request schema (bounded here, more under ``-m slow``)."""

from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_helpers import RIVERS, post, served

GOOD = {"input": ["hello there", "late chunking"]}

BAD = [
    ("/v1/embeddings", b'{"input": ', 400, "not valid JSON"),
    ("/v1/embeddings", b"", 400, "empty"),
    ("/v1/embeddings", b'{"input": "\xff\xfe"}', 400, "not UTF-8"),
    ("/v1/embeddings", b'{"input": "a", "dimensions": NaN}', 400, "NaN"),
    ("/v1/embeddings", b'{"input": "a", "dimensions": Infinity}', 400, "Infinity"),
    ("/v1/embeddings", b'{"input": "\\ud800"}', 400, "surrogate"),
    ("/v1/embeddings", b"[1, 2]", 400, "JSON object"),
    ("/v1/embeddings", b'"text"', 400, "JSON object"),
    ("/v1/embeddings", b"[" * 100000, 400, "JSON"),
    ("/v1/embeddings", {"input": 5}, 400, "input"),
    ("/v1/embeddings", {"input": None}, 400, "input"),
    ("/v1/embeddings", {"input": ["a", 3]}, 400, "input"),
    ("/v1/embeddings", {"input": [[101, 2003]]}, 400, "token id"),
    ("/v1/embeddings", {"input": [{"text": "a"}]}, 400, "input"),
    ("/v1/embeddings", {}, 400, "input: Field required"),
    ("/v1/embeddings", {"input": []}, 400, "empty"),
    ("/v1/embeddings", {"input": ""}, 400, "empty"),
    ("/v1/embeddings", {"input": ["a", ""]}, 400, "input[1] is an empty string"),
    ("/v1/embeddings", {"input": "a", "foo": 1}, 400, "foo: Extra inputs are not permitted"),
    ("/v1/embeddings", {"input": "a", "dimensions": "64"}, 400, "dimensions"),
    ("/v1/embeddings", {"input": "a", "dimensions": 0}, 400, "dimensions"),
    ("/v1/embeddings", {"input": "a", "dimensions": 3.5}, 400, "dimensions"),
    ("/v1/embeddings", {"input": "a", "dimensions": 385}, 400, "more than the model's 384"),
    ("/v1/embeddings", {"input": "a", "dimensions": 10**30}, 400, "dimensions"),
    ("/v1/embeddings", {"input": "a", "encoding_format": "int8"}, 400, "encoding_format"),
    ("/v1/embeddings", {"input": "a", "late_chunking": "yes"}, 400, "late_chunking"),
    ("/v1/embeddings", {"input": "a", "task": "retrieval.everything"}, 400, "retrieval.query"),
    ("/v1/embeddings", {"input": ["a", "  "], "late_chunking": True}, 400, "input[1] is whitespace only"),
    ("/v1/embeddings", {"input": "a", "model": "text-embedding-3-small"}, 404, "not served"),
    ("/v1/embeddings", {"input": "a" * 10_000_000}, 413, "--max-body-bytes"),
    ("/v1/embeddings", {"input": ["a"] * 10_000}, 413, "--max-inputs"),
    ("/v1/chunk", {"document": "a", "documents": ["b"]}, 400, "one of document"),
    ("/v1/chunk", {}, 400, "one of document"),
    ("/v1/chunk", {"document": "a", "strategy": "nope"}, 400, "nope"),
    ("/v1/chunk", {"document": "a", "strategy": "fixed:size=-3"}, 400, "size"),
    ("/v1/chunk", {"document": "a", "mode": "late-ish"}, 400, "mode"),
    ("/v1/chunk", {"document": "a", "macro_window": 4}, 400, "macro"),
    ("/v1/chunk", {"documents": [{"id": "x"}]}, 400, "text"),
    ("/v1/search", {"query": "rivers"}, 404, "--index"),
]


def _refused(resp, status: int, words: str) -> None:
    assert resp.status_code == status, (resp.status_code, resp.text[:500])
    msg = resp.json()["error"]["message"]
    assert words.lower() in msg.lower(), msg


@pytest.mark.parametrize(("path", "body", "status", "words"), BAD,
                         ids=[f"{i}-{str(b)[:30]}" for i, (_, b, _s, _w) in enumerate(BAD)])
def test_bad_request_is_a_4xx_with_a_reason(server, path, body, status, words):
    url, _ = server
    _refused(post(url, path, body), status, words)


def test_still_serving_after_bad_requests(server):
    url, _ = server
    for path, body, _status, _words in BAD[:12]:
        assert 400 <= post(url, path, body).status_code < 500
    resp = post(url, "/v1/embeddings", GOOD)
    assert resp.status_code == 200 and len(resp.json()["data"]) == 2
    assert httpx.get(url + "/v1/embeddings").status_code == 405


def test_limits_413_name_the_limit(encoder):
    with served(encoder, max_request_tokens=64, max_inputs=4, max_body_bytes=20_000) as (url, _):
        _refused(post(url, "/v1/embeddings", {"input": RIVERS}), 413, "limit of 64 tokens")
        _refused(post(url, "/v1/embeddings", {"input": RIVERS.split("\n\n")[:4], "late_chunking": True}), 413,
                 "--max-request-tokens")
        _refused(post(url, "/v1/chunk", {"document": RIVERS}), 413, "limit of 64 tokens")
        _refused(post(url, "/v1/embeddings", {"input": ["a"] * 5}), 413, "limit of 4 per request")
        _refused(post(url, "/v1/embeddings", {"input": "word " * 5000}), 413, "20,000 bytes")
        assert post(url, "/v1/embeddings", {"input": ["a"] * 4}).status_code == 200  # at the limits: served


def _blocked(app) -> threading.Event:
    """Hold the encoder's worker thread until the returned event is set (the queue then fills)."""
    release = threading.Event()
    app.state.service.batcher._executor.submit(release.wait, 30)
    return release


def test_full_queue_429_with_retry_after(encoder):
    with served(encoder, max_queue=1) as (url, app):
        release = _blocked(app)
        with ThreadPoolExecutor(6) as pool:
            futures = [pool.submit(post, url, "/v1/embeddings", {"input": f"text {i}"}) for i in range(6)]
            time.sleep(1.0)
            release.set()
            codes = [f.result().status_code for f in futures]
        assert set(codes) <= {200, 429} and codes.count(429) >= 4, codes  # 1 running + 1 queued
        refused = next(f.result() for f in futures if f.result().status_code == 429)
        assert refused.headers["Retry-After"] == "1" and "--max-queue" in refused.json()["error"]["message"]
        assert post(url, "/v1/embeddings", GOOD).status_code == 200


def test_timeout_504_and_disconnected_clients_never_stall(encoder):
    with served(encoder, request_timeout=0.5) as (url, app):
        release = _blocked(app)
        _refused(post(url, "/v1/embeddings", GOOD), 504, "--request-timeout")
        for _ in range(3):  # clients that send a request and go away at once
            with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1]))) as s:
                body = b'{"input": ["gone before the answer"]}'
                s.sendall(b"POST /v1/embeddings HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                          b"content-length: %d\r\n\r\n%s" % (len(body), body))
        time.sleep(0.3)
        release.set()
        resp = post(url, "/v1/embeddings", GOOD)
        assert resp.status_code == 200 and len(resp.json()["data"]) == 2
        assert app.state.service.batcher.depth == 0


_TEXT = st.text(min_size=0, max_size=40)
_VALUE = st.recursive(st.none() | st.booleans() | st.integers(-10, 10**6) | st.floats(allow_nan=False, allow_infinity=False) | _TEXT,
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
                      max_leaves=6)
_FIELDS = {"input": st.one_of(_TEXT, st.lists(_TEXT, max_size=4), _VALUE), "model": st.one_of(st.none(), _TEXT,
           st.just("all-MiniLM-L6-v2")), "encoding_format": st.sampled_from(["float", "base64", "int8", 3]),
           "dimensions": st.one_of(st.none(), st.integers(-2, 400), _VALUE), "task": st.one_of(
           st.sampled_from(["retrieval.query", "retrieval.passage", "query"]), _VALUE),
           "late_chunking": st.one_of(st.booleans(), _VALUE), "user": _VALUE, "extra": _VALUE}
_REQUEST = st.fixed_dictionaries({"input": _FIELDS["input"]}, optional={k: v for k, v in _FIELDS.items()
                                                                        if k != "input"})


def _check_answer(resp, body) -> None:
    assert resp.status_code < 500, (resp.status_code, resp.text[:500], body)
    if resp.status_code == 200:
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        assert len(resp.json()["data"]) == len(inputs)
    else:
        assert resp.json()["error"]["message"]


def _fuzz(url: str, body) -> None:
    if isinstance(body, bytes):
        resp = post(url, "/v1/embeddings", body)
        assert 400 <= resp.status_code < 500, (resp.status_code, resp.text[:300])
        return
    _check_answer(post(url, "/v1/embeddings", body), body)


_CHUNK = st.fixed_dictionaries({}, optional={
    "document": st.one_of(_TEXT, _VALUE), "documents": st.one_of(st.lists(st.one_of(_TEXT, st.fixed_dictionaries(
        {"text": _TEXT}, optional={"id": _TEXT, "metadata": _VALUE})), max_size=3), _VALUE),
    "strategy": st.one_of(st.sampled_from(["fixed:size=16", "recursive", "heading", "nope", "fixed:size=0"]), _VALUE),
    "mode": st.sampled_from(["late", "naive", "x"]), "vectors": st.just(False), "markdown": st.one_of(st.booleans(),
    _VALUE), "macro_window": st.one_of(st.integers(-1, 600), _VALUE), "extra": _VALUE})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(body=_CHUNK)
def test_fuzz_chunk_schema(server, body):
    resp = post(server[0], "/v1/chunk", body)
    assert resp.status_code < 500, (resp.status_code, resp.text[:500], body)
    if resp.status_code == 200:
        docs = [body["document"]] if "document" in body else body["documents"]
        assert len(resp.json()["documents"]) == len(docs)
    else:
        assert resp.json()["error"]["message"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(body=_REQUEST | st.binary(max_size=64))
def test_fuzz_request_schema(server, body):
    _fuzz(server[0], body)


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(body=_REQUEST | st.binary(max_size=256))
def test_fuzz_request_schema_long(server, body):
    _fuzz(server[0], body)
