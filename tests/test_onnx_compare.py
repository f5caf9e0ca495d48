"""``latechunk compare --backend`` (issue 15 part 4): the comparison runs on the ONNX Runtime backend, records the
backend in results.json (config and manifest), and refuses bad backend settings before any work."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from latechunk.cli import app
from latechunk.eval.config import CompareConfig
from latechunk.eval.harness import run_compare
from tests.eval.test_eval_harness import _write_dataset
from tests.models import save_tiny_bert

runner = CliRunner()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(dataset folder, tiny BERT model folder)."""
    root = tmp_path_factory.mktemp("onnx_compare")
    return _write_dataset(root / "tiny_chroma"), save_tiny_bert(root / "model")


def _compare(tiny, out, cache, *extra):
    dataset, model = tiny
    return runner.invoke(app, ["compare", "--dataset", str(dataset), "--model", str(model), "--out", str(out),
                               "--strategies", "fixed:size=24", "--modes", "late,naive", "--k", "1,3",
                               "--resamples", "50", "--quiet", *extra], env={"LATECHUNK_CACHE": str(cache)})


def test_compare_runs_on_the_onnx_backend_and_records_it(tiny, tmp_path):
    cache = tmp_path / "cache"
    res = _compare(tiny, tmp_path / "onnx", cache, "--backend", "onnx", "--device", "cpu")
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "onnx" / "results.json").read_text())
    assert data["config"]["backend"] == "onnx"
    assert data["manifest"]["model"]["backend"] == "onnx"
    assert len(list((cache / "onnx").glob("*/model.onnx"))) == 1  # the export was made and cached
    # the same comparison on torch: same systems, same queries, (nearly) the same scores (fp32 within 1e-4)
    ref = _compare(tiny, tmp_path / "torch", cache, "--device", "cpu")
    assert ref.exit_code == 0, ref.output
    base = json.loads((tmp_path / "torch" / "results.json").read_text())
    assert base["config"]["backend"] == "torch" and "backend" not in base["manifest"]["model"]
    assert base["manifest"]["query_vectors"]["n"] == data["manifest"]["query_vectors"]["n"]
    assert [s["label"] for s in base["systems"]] == [s["label"] for s in data["systems"]]
    for a, b in zip(base["systems"], data["systems"]):
        for metric, value in a["metrics"].items():
            assert abs(value - b["metrics"][metric]) <= 0.05, (a["label"], metric)


@pytest.mark.parametrize("extra, msg", [
    (["--backend", "tensorrt"], "backend must be torch, onnx or onnx-int8"),
    (["--backend", "onnx-int8", "--device", "cuda"], "runs on the CPU in float32"),
])
def test_compare_refuses_bad_backend_settings_before_work(tiny, tmp_path, extra, msg):
    res = _compare(tiny, tmp_path / "rep", tmp_path / "cache", *extra)
    assert res.exit_code == 2 and msg in " ".join(res.output.replace("│", " ").split()), res.output
    assert not (tmp_path / "rep").exists() and not (tmp_path / "cache").exists()


def test_a_given_encoder_of_another_backend_is_refused(tiny, tmp_path):
    from latechunk.encoder import Encoder

    dataset, model = tiny
    config = CompareConfig(dataset=str(dataset), strategies=("fixed:size=24",), backend="onnx", device="cpu",
                           n_resamples=50, cache_dir=str(tmp_path / "c"))
    with pytest.raises(ValueError, match="runs backend 'torch', the config asks for 'onnx'"):
        run_compare(config, encoder=Encoder(str(model), device="cpu"))
