"""latechunk/serve over real HTTP on 127.0.0.1 (the bundled MiniLM, fp32): /v1/embeddings equals Encoder.encode,
late_chunking and /v1/chunk equal LateChunker for the same spans, the openai client and LangChain's
OpenAIEmbeddings round-trip, the bearer key, /v1/models, /health, /ready, /metrics and the OpenAPI page."""

from __future__ import annotations

import base64
import itertools
import json

import httpx
import numpy as np
import pytest
from serve_helpers import RIVERS, post, served

import latechunk
from latechunk.pooling import segment_mean
from latechunk.serve.service import late_spans

TEXTS = ["The Danube flows through ten countries.", "Sourdough rises slowly.", "Etna erupts almost every year. " * 40]
TOL = 1e-5


def _vectors(resp) -> np.ndarray:
    assert resp.status_code == 200, resp.text
    data = sorted(resp.json()["data"], key=lambda d: d["index"])
    rows = [np.frombuffer(base64.b64decode(d["embedding"]), "<f4") if isinstance(d["embedding"], str)
            else np.asarray(d["embedding"], np.float32) for d in data]
    return np.stack(rows)


def test_embeddings_equal_encoder_encode(server, encoder):
    url, _ = server
    ref = encoder.encode(TEXTS)
    got = _vectors(post(url, "/v1/embeddings", {"input": TEXTS, "model": "all-MiniLM-L6-v2"}))
    np.testing.assert_allclose(got, ref, atol=TOL)  # the third text is past 256 tokens: macro windows, no truncation
    one = _vectors(post(url, "/v1/embeddings", {"input": TEXTS[0], "encoding_format": "base64"}))
    np.testing.assert_allclose(one[0], ref[0], atol=TOL)
    query = _vectors(post(url, "/v1/embeddings", {"input": TEXTS[:2], "task": "retrieval.query"}))
    np.testing.assert_allclose(query, encoder.encode_query(TEXTS[:2]), atol=TOL)
    resp = post(url, "/v1/embeddings", {"input": TEXTS[:2], "dimensions": 64})
    short = _vectors(resp)
    trunc = ref[:2, :64] / np.linalg.norm(ref[:2, :64], axis=1, keepdims=True)
    np.testing.assert_allclose(short, trunc, atol=TOL)
    assert resp.json()["usage"]["prompt_tokens"] == sum(len(encoder.plain_tokenizer(t)) for t in TEXTS[:2])


def _tiling_chunks(encoder):
    """LateChunker's chunks of RIVERS twice (434 tokens), checked to tile it with only whitespace between them (so that joining their
    texts with one space gives the document's tokens)."""
    chunker = latechunk.LateChunker(encoder, strategy="recursive:max_tokens=40")
    chunks = chunker(RIVERS * 2)
    assert len(chunks) >= 6 and chunks[-1].token_end > 256  # several macro windows of 256 tokens
    for a, b in itertools.pairwise(chunks):
        assert a.char_end <= b.char_start and not (RIVERS * 2)[a.char_end:b.char_start].strip()
    return chunks


def test_late_chunking_equals_late_chunker(server, encoder):
    url, _ = server
    chunks = _tiling_chunks(encoder)
    texts = [c.text for c in chunks]
    resp = post(url, "/v1/embeddings", {"input": texts, "late_chunking": True})
    got = _vectors(resp)
    np.testing.assert_allclose(got, np.stack([c.embedding for c in chunks]), atol=TOL)
    # the spans: each input's tokens in the space-joined text, the same token spans LateChunker found
    joined = latechunk.serve.LATE_CHUNKING_SEPARATOR.join(texts)
    tok = encoder.tokenizer(joined)
    starts = np.cumsum([0] + [len(t) + 1 for t in texts[:-1]])
    spans = late_spans(starts, starts + np.array([len(t) for t in texts]), tok)
    assert spans.tolist() == [[c.token_start, c.token_end] for c in chunks]
    states = encoder.token_states([tok], encoder.macro_window())[0]
    np.testing.assert_allclose(got, segment_mean(states, spans, normalize=True).numpy(), atol=TOL)
    assert resp.json()["usage"]["prompt_tokens"] == len(tok)


@pytest.mark.parametrize("mode", ["late", "naive", "fused"])
def test_chunk_equals_late_chunker(server, encoder, mode):
    url, _ = server
    spec = "heading:max_tokens=64"
    ref = latechunk.LateChunker(encoder, strategy=spec, mode=mode, markdown=True)
    docs = [{"id": "rivers.md", "text": RIVERS, "metadata": {"lang": "en"}}, {"text": "A short note on bread."}]
    want = list(ref.map([latechunk.Document("rivers.md", RIVERS, {"lang": "en"}), ("1", "A short note on bread.")]))
    resp = post(url, "/v1/chunk", {"documents": docs, "strategy": spec, "mode": mode, "markdown": True})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["mode"] == mode and body["strategy"] == ref.strategy
    assert [d["id"] for d in body["documents"]] == ["rivers.md", "1"]
    for d, chunks in zip(body["documents"], want):
        assert len(d["chunks"]) == len(chunks) > 0
        for got, c in zip(d["chunks"], chunks):
            assert (got["text"], got["char_start"], got["char_end"], got["token_start"], got["token_end"]) == \
                (c.text, c.char_start, c.char_end, c.token_start, c.token_end)
            assert tuple(got["heading_path"]) == c.heading_path and got["metadata"] == c.metadata
            np.testing.assert_allclose(np.asarray(got["embedding"], np.float32), c.embedding, atol=TOL)
    # vectors=false: the same chunks, no vectors
    bare = post(url, "/v1/chunk", {"documents": docs, "strategy": spec, "mode": mode, "markdown": True,
                                   "vectors": False}).json()
    for d, full in zip(bare["documents"], body["documents"]):
        assert [{k: v for k, v in c.items() if k != "embedding"} for c in full["chunks"]] == d["chunks"]
        assert all("embedding" not in c for c in d["chunks"])


def test_openai_client_round_trip(server, encoder):
    openai = pytest.importorskip("openai")
    url, _ = server
    client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
    resp = client.embeddings.create(model="all-MiniLM-L6-v2", input=TEXTS[:2])  # base64 on the wire
    got = np.array([d.embedding for d in resp.data], np.float32)
    np.testing.assert_allclose(got, encoder.encode(TEXTS[:2]), atol=TOL)
    assert resp.usage.prompt_tokens > 0
    with pytest.raises(openai.BadRequestError, match="empty"):
        client.embeddings.create(model="all-MiniLM-L6-v2", input="")
    with pytest.raises(openai.NotFoundError, match="not served"):
        client.embeddings.create(model="text-embedding-3-small", input="x")


def test_langchain_openai_embeddings_round_trip(server, encoder):
    lc = pytest.importorskip("langchain_openai")
    url, _ = server
    emb = lc.OpenAIEmbeddings(model="all-MiniLM-L6-v2", base_url=url + "/v1", api_key="unused",
                              check_embedding_ctx_length=False, max_retries=0)
    docs = emb.embed_documents(TEXTS[:2])
    np.testing.assert_allclose(np.array(docs, np.float32), encoder.encode(TEXTS[:2]), atol=TOL)
    np.testing.assert_allclose(np.array(emb.embed_query(TEXTS[0]), np.float32), encoder.encode(TEXTS[0]), atol=TOL)


def test_api_key(encoder):
    with served(encoder, api_key="s3cret") as (url, _):
        body = {"input": "hello"}
        for headers in (None, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
            resp = post(url, "/v1/embeddings", body, headers)
            assert resp.status_code == 401, resp.text
            assert "API key" in resp.json()["error"]["message"]
        assert post(url, "/v1/embeddings", body, {"Authorization": "Bearer s3cret"}).status_code == 200
        assert httpx.get(url + "/health").status_code == 200  # probes need no key


def test_operations_endpoints(server):
    url, _ = server
    health = httpx.get(url + "/health").json()
    assert health["model"] == "all-MiniLM-L6-v2" and health["dim"] == 384
    assert httpx.get(url + "/ready").json()["status"] == "ready"
    assert httpx.get(url + "/v1/models").json()["data"][0]["id"] == "all-MiniLM-L6-v2"
    post(url, "/v1/embeddings", {"input": ["one", "two"]})
    metrics = httpx.get(url + "/metrics").text
    for name in ("latechunk_requests_total", "latechunk_tokens_total", "latechunk_batch_requests_bucket",
                 "latechunk_batch_tokens_bucket", "latechunk_queue_depth", "latechunk_request_seconds_bucket"):
        assert name in metrics, name
    assert 'latechunk_requests_total{endpoint="/v1/embeddings",status="200"}' in metrics
    spec = httpx.get(url + "/openapi.json").json()
    assert {"/v1/embeddings", "/v1/chunk", "/v1/search"} <= set(spec["paths"])
    schema = spec["paths"]["/v1/embeddings"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert {"input", "late_chunking", "task", "dimensions"} <= set(schema["properties"])
    assert httpx.get(url + "/docs").status_code == 200
    missing = httpx.get(url + "/v1/nothing")
    assert missing.status_code == 404 and "no such endpoint" in json.loads(missing.text)["error"]["message"]
