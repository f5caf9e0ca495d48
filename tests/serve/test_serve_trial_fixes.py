"""Fixes from a fresh-user trial of ``latechunk serve``: the encoder's real work of a /v1/chunk request counted
against ``--max-request-tokens`` before it runs (413, and reported as ``usage``);
a strategy ``source`` other than ``late`` refused (400, no model loaded per request); duplicate document ids and
whitespace-only texts refused (400); ``serve --port 0`` announcing the bound port, and the warning of a
non-loopback host without ``--api-key``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
from serve_helpers import post, served
from typer.testing import CliRunner

from latechunk.cli import app

REPEATED = "The cat sat. The dog ran. " * 40  # ~280 tokens; sentence_window:window=20 encodes each ~40 times


def _refused(resp, status: int, *words: str) -> dict:
    assert resp.status_code == status, (resp.status_code, resp.text[:500])
    msg = resp.json()["error"]["message"]
    for w in words:
        assert w.lower() in msg.lower(), msg
    return resp.json()["error"]


def test_chunk_counts_the_encoders_work_before_running(encoder):
    with served(encoder, max_request_tokens=2000) as (url, _):
        body = {"document": REPEATED, "strategy": "sentence_window:window=20", "mode": "naive"}
        doc_tokens = len(encoder.tokenizer.batch([REPEATED])[0])
        assert doc_tokens < 2000  # the document alone passes the limit
        split = post(url, "/v1/chunk", {**body, "vectors": False})
        assert split.status_code == 200, split.text[:300]
        work = sum(c["token_end"] - c["token_start"] for c in split.json()["documents"][0]["chunks"])
        assert work > 2000
        err = _refused(post(url, "/v1/chunk", body), 413, "limit of 2,000 tokens", f"{work:,}")
        assert err["code"] == "request_too_large"
        small = {"document": "The cat sat. The dog ran. The bird flew.", "strategy": "sentence_window:window=1"}
        naive = post(url, "/v1/chunk", {**small, "mode": "naive", "vectors": False}).json()["documents"][0]
        expect = sum(c["token_end"] - c["token_start"] for c in naive["chunks"])
        got = post(url, "/v1/chunk", {**small, "mode": "naive"})
        assert got.status_code == 200 and got.json()["usage"]["total_tokens"] == expect
        late = post(url, "/v1/chunk", {**small, "mode": "late"}).json()["usage"]["total_tokens"]
        fused = post(url, "/v1/chunk", {**small, "mode": "fused"}).json()["usage"]["total_tokens"]
        assert fused == late + expect


def test_strategy_source_and_split_errors_are_4xx(server):
    url, _ = server
    for spec in ("semantic:source=nonexistent/model", "semantic:source=/etc"):
        _refused(post(url, "/v1/chunk", {"document": "One. Two.", "strategy": spec}), 400, "source")
        _refused(post(url, "/v1/chunk", {"document": "One. Two.", "strategy": spec, "vectors": False}), 400, "late")


def test_duplicate_ids_and_whitespace_texts_are_400(server):
    url, _ = server
    dup = {"documents": [{"id": "x", "text": "Hello."}, {"id": "x", "text": "Goodbye friend."}]}
    _refused(post(url, "/v1/chunk", dup), 400, "'x'", "documents[1]")
    _refused(post(url, "/v1/chunk", {"documents": ["Hello.", {"id": "0", "text": "Bye."}]}), 400, "'0'")
    _refused(post(url, "/v1/chunk", {"documents": ["Hello.", " \n\t "]}), 400, "documents[1]", "whitespace")
    _refused(post(url, "/v1/embeddings", {"input": "   "}), 400, "whitespace")
    _refused(post(url, "/v1/embeddings", {"input": ["a", "\n"]}), 400, "input[1]")
    good = post(url, "/v1/chunk", {"documents": [{"id": "x", "text": "Hello."}, {"id": "y", "text": "Bye now."}]})
    assert good.status_code == 200 and all(d["chunks"] for d in good.json()["documents"])


def test_cli_warns_on_open_host_and_announces_the_bound_port(monkeypatch):
    from latechunk.serve import run

    class FakeApp:
        class state:
            class service:
                model_name, encoder = "m", type("E", (), {"dim": 3, "device": "cpu", "dtype": "float32"})()

    calls = []

    def fake_serve(app_, config, log_level="info", on_started=None):
        calls.append(config.port)
        on_started(config.host, 43210)

    monkeypatch.setattr(run, "build_app", lambda *a, **k: FakeApp)
    monkeypatch.setattr(run, "serve", fake_serve)
    res = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "0", "--quiet"])
    assert res.exit_code == 0, res.output
    assert calls == [0] and "warning" in res.output and "--api-key" in res.output
    assert "http://0.0.0.0:43210" in res.output and ":0 " not in res.output + " "
    res = CliRunner().invoke(app, ["serve", "--host", "127.0.0.1", "--port", "0", "--quiet"])
    assert res.exit_code == 0 and "warning" not in res.output and "http://127.0.0.1:43210" in res.output


def test_port_zero_process_prints_the_bound_port(tmp_path):
    env = {**os.environ, "LATECHUNK_CPU_DTYPE": "float32"}
    err_path = tmp_path / "stderr.txt"
    with open(err_path, "w", encoding="utf-8") as err:
        proc = subprocess.Popen([sys.executable, "-m", "latechunk", "serve", "--port", "0", "--quiet", "--device",
                                 "cpu"], stderr=err, env=env)
    try:
        t_end = time.monotonic() + 120
        line = ""
        while "on http://" not in line:
            assert proc.poll() is None and time.monotonic() < t_end, err_path.read_text()
            time.sleep(0.2)
            line = next((x for x in err_path.read_text().splitlines() if "on http://" in x), "")
        port = int(line.split("on http://127.0.0.1:")[1].split(",")[0].split(";")[0].split()[0])
        assert port > 0
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).json()["status"] == "ok"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not [x for x in err_path.read_text().splitlines() if x.startswith('{"event"')]  # --quiet
