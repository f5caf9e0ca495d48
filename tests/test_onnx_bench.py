"""scripts/bench_onnx.py (issue 15 part 4): a dry run on a tiny BERT and a small corpus writes the report with all
three backends, their ratios and the quality columns (no timing is asserted)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from tests.models import save_tiny_bert
from tests.scripts import load_script


def test_bench_onnx_dry_run(tmp_path, monkeypatch):
    monkeypatch.setenv("LATECHUNK_CACHE", str(tmp_path / "cache"))
    data = tmp_path / "corpora"
    data.mkdir()
    (data / "a.md").write_text("Rivers carve valleys over long ages. " * 120, encoding="utf-8")
    (data / "b.md").write_text("A short note on tides.\n", encoding="utf-8")
    out = tmp_path / "bench.md"
    res = load_script("bench_onnx").main(
        ["--corpora", "a", "b", "--data", str(data), "--fraction", "1", "--model", str(save_tiny_bert(tmp_path / "m")),
         "--rounds", "1", "--shape", "2x16", "--window", "64", "--batch-tokens", "256", "--gemm", "--out", str(out)])
    text = out.read_text()
    # --gemm: every linear shape of a layer at the batch's tokens, the forward on/off, and the estimated ceiling
    for k, n in ((32, 32), (32, 96)):
        assert re.search(rf"\| \(256, {k}\) x \({k}, {n}\) \| \d+ \| \d+ \| \d+ \|", text), text
    assert re.search(r"torch backend forward of a \(1, 256\) batch: ", text), text
    assert re.search(r"share of that forward's wall time .*: \d+\.\d%; .* at most about \d+\.\d\dx torch", text), text
    for backend in ("| torch |", "| onnx |", "| onnx-int8 |"):
        assert backend in text
    assert "Command: `python3 scripts/bench_onnx.py" in text and "onnxruntime" in text
    assert set(res["forward_s"]) == {"torch", "onnx", "onnx-int8"} and res["corpus_tokens"] > 64
    diff, cos = res["quality"]["onnx"]
    assert diff <= 1e-4 and cos > 0.9999  # fp32 matches torch; int8 is only reported
    assert res["quality"]["torch"] == (0.0, pytest.approx(1.0, abs=1e-5))


def test_bench_onnx_needs_torch_among_backends():
    with pytest.raises(SystemExit):
        load_script("bench_onnx").main(["--backends", "onnx,onnx-int8"])
