"""``latechunk serve`` as a user runs it (latechunk/cli/commands/serve.py, latechunk/serve/run.py): its help, a bad
option refused before the model loads, and the real process on a free loopback port: ready, an access-log JSON
line per request, and SIGTERM lets the request in flight finish, then refuses new ones and exits 0."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest
import typer
from typer.testing import CliRunner

from latechunk.cli import app

runner = CliRunner()


def test_help_options_are_short():
    command = typer.main.get_command(app).commands["serve"]
    res = runner.invoke(app, ["serve", "--help"])
    assert res.exit_code == 0 and "/v1/embeddings" in res.output and "--max-request-tokens" in res.output
    for p in command.params:
        text = " ".join((p.help or "").split())
        assert text and len(text) < 300, (p.name, len(text))
        prose = text.split("  [default:")[0].replace("e.g.", "eg")
        assert prose.count(". ") + prose.count("? ") <= 1, (p.name, text)  # at most two sentences


@pytest.mark.parametrize(("args", "words"), [
    (["--port", "70000"], "port"),
    (["--max-queue", "0"], "max_queue"),
    (["--macro-window", "4"], "macro"),
    (["--index", "/nonexistent/folder"], "not a folder"),
])
def test_bad_options_fail_before_loading(args, words):
    res = runner.invoke(app, ["serve", *args])
    assert res.exit_code == 2 and words in res.output, res.output


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_process_serves_then_drains_on_sigterm(tmp_path):
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "LATECHUNK_CPU_DTYPE": "float32"}
    err = open(tmp_path / "stderr.txt", "w+", encoding="utf-8")  # noqa: SIM115  (read after the process ends)
    proc = subprocess.Popen([sys.executable, "-m", "latechunk", "serve", "--port", str(port), "--device", "cpu",
                             "--api-key", "k1", "--max-request-tokens", "200000"], stderr=err, env=env)
    auth = {"Authorization": "Bearer k1"}
    try:
        t_end = time.monotonic() + 120
        while True:
            assert proc.poll() is None, "the server exited"
            try:
                if httpx.get(url + "/ready", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < t_end, "the server did not get ready"
            time.sleep(0.2)
        ok = httpx.post(url + "/v1/embeddings", json={"input": "hello"}, headers=auth, timeout=30)
        assert ok.status_code == 200 and len(ok.json()["data"][0]["embedding"]) == 384
        result = {}
        big = {"input": ["a river runs through the valley " * 40] * 48}  # ~14,000 tokens: seconds on a CPU

        def slow() -> None:
            result["resp"] = httpx.post(url + "/v1/embeddings", json=big, headers=auth, timeout=120)

        worker = threading.Thread(target=slow)
        worker.start()
        t_end = time.monotonic() + 30
        while "latechunk_requests_in_flight 2.0" not in httpx.get(url + "/metrics", timeout=5).text:
            assert time.monotonic() < t_end and worker.is_alive(), "the big request never got in flight"
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        worker.join(120)
        assert result["resp"].status_code == 200 and len(result["resp"].json()["data"]) == 48
        assert proc.wait(60) == 0
        with pytest.raises(httpx.TransportError):
            httpx.post(url + "/v1/embeddings", json={"input": "late"}, headers=auth, timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err.seek(0)
    lines = [json.loads(line) for line in err.read().splitlines() if line.startswith('{"event"')]
    posts = [x for x in lines if x["path"] == "/v1/embeddings"]
    assert [x["status"] for x in posts] == [200, 200] and posts[1]["tokens"] > 10_000
    assert all({"request_id", "seconds", "client", "method"} <= x.keys() for x in lines)
