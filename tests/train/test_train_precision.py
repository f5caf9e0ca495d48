"""``latechunk train --precision`` (latechunk/train/): which dtype the training forward is autocast to per
device and CPU capability, that the autocast really reaches the model's matrix products while the weights stay
float32, and that a bf16 training run still lowers the loss."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from models import save_tiny_bert
from test_train import _squad

from latechunk.train import PRECISIONS, TrainConfig, _forward, autocast_dtype, train
from latechunk.train import forward as train_mod


@pytest.mark.parametrize(("precision", "device", "amx", "expected"), [
    ("auto", "cpu", True, torch.bfloat16),
    ("auto", "cpu", False, None),
    ("auto", "cuda", False, torch.bfloat16),
    ("auto", "mps", True, None),
    ("float32", "cpu", True, None),
    ("float32", "cuda", True, None),
    ("bfloat16", "cpu", False, torch.bfloat16),
    ("bfloat16", "cuda", False, torch.bfloat16),
    ("bfloat16", "mps", True, None),
])
def test_autocast_dtype_rule(precision, device, amx, expected):
    assert autocast_dtype(precision, device, amx=amx) is expected


def test_autocast_dtype_asks_the_cpu(monkeypatch):
    monkeypatch.delenv("LATECHUNK_CPU_DTYPE", raising=False)
    monkeypatch.setattr(train_mod, "_cpu_has_amx", lambda: True)
    assert autocast_dtype("auto", "cpu") is torch.bfloat16
    monkeypatch.setattr(train_mod, "_cpu_has_amx", lambda: False)
    assert autocast_dtype("auto", "cpu") is None


def test_latechunk_cpu_dtype_sets_the_cpu_training_precision_too(monkeypatch):
    """Trial: `latechunk train` autocast to bf16 on an AVX-512 BF16 CPU with $LATECHUNK_CPU_DTYPE=float32, which
    embed and compare obey; auto on the CPU now follows it (an explicit --precision still wins)."""
    monkeypatch.setattr(train_mod, "_cpu_has_amx", lambda: True)
    monkeypatch.setenv("LATECHUNK_CPU_DTYPE", "float32")
    assert autocast_dtype("auto", "cpu") is None and autocast_dtype("bfloat16", "cpu") is torch.bfloat16
    monkeypatch.setattr(train_mod, "_cpu_has_amx", lambda: False)
    monkeypatch.setenv("LATECHUNK_CPU_DTYPE", "bf16")
    assert autocast_dtype("auto", "cpu") is torch.bfloat16 and autocast_dtype("auto", "cuda") is torch.bfloat16
    monkeypatch.setenv("LATECHUNK_CPU_DTYPE", "fp8")
    with pytest.raises(ValueError, match="LATECHUNK_CPU_DTYPE"):
        autocast_dtype("auto", "cpu")


def test_bad_precision_fails(tmp_path):
    assert PRECISIONS == ("auto", "float32", "bfloat16")
    with pytest.raises(ValueError, match="precision"):
        autocast_dtype("float16", "cpu", amx=True)
    with pytest.raises(ValueError, match="--dtype"):
        TrainConfig(out=str(tmp_path / "m"), dataset="xquad", precision="fp16")


def test_forward_autocast_reaches_the_linear_layers(tmp_path):
    """Under ``amp=bfloat16`` the model's Linear layers compute in bf16 (their outputs are bf16) while their
    weights stay float32 and the returned states are float32; without it everything is float32."""
    from transformers import AutoModel

    model = AutoModel.from_pretrained(save_tiny_bert(tmp_path / "tiny"))
    seen = []
    hook = model.encoder.layer[0].attention.self.query.register_forward_hook(lambda m, i, o: seen.append(o.dtype))
    rows = [np.array([101, 2023, 2003, 102]), np.array([101, 7592, 102])]
    fp32, n = _forward(model, rows, 0, torch.device("cpu"))
    bf16, n2 = _forward(model, rows, 0, torch.device("cpu"), torch.bfloat16)
    hook.remove()
    assert seen == [torch.float32, torch.bfloat16]
    assert n == n2 == 4 and fp32.dtype == bf16.dtype == torch.float32 and fp32.shape == bf16.shape
    assert all(p.dtype == torch.float32 for p in model.parameters())
    diff = (fp32 - bf16).abs().max().item()
    assert 0 < diff < 0.2, diff  # bf16 rounding: not bit-equal, but close


def test_bf16_training_lowers_the_loss(tmp_path, monkeypatch):
    """``--precision auto`` on an AMX CPU (AMX faked: the rule, not the hardware, is under test; bf16 autocast
    runs on any CPU) trains in bf16 autocast, records it, lowers the loss, and saves float32 weights."""
    from safetensors import safe_open

    monkeypatch.delenv("LATECHUNK_CPU_DTYPE", raising=False)  # the tests' float32 pin would decide first
    monkeypatch.setattr(train_mod, "_cpu_has_amx", lambda: True)
    tiny = save_tiny_bert(tmp_path / "tiny")
    out = tmp_path / "model"
    cfg = TrainConfig(out=str(out), dataset=str(_squad(tmp_path)), model=str(tiny), strategy="fixed:size=8",
                      macro_window=32, window_overlap=4, epochs=6, lr=2e-3, batch_size=6, naive_weight=0.5,
                      device="cpu", seed=0)
    assert cfg.precision == "auto"
    res = train(cfg, progress=False)
    means = res.epoch_means()
    assert len(res.losses) == 12 and all(np.isfinite(res.losses))
    assert means[-1] < 0.8 * means[0], means
    record = json.loads((out / "latechunk_train.json").read_text())
    assert record["autocast"] == "bfloat16" and record["config"]["precision"] == "auto"
    with safe_open(str(out / "model.safetensors"), "pt") as f:
        assert {f.get_tensor(k).dtype for k in f.keys()}  # noqa: SIM118 - safe_open is not iterable == {torch.float32}


def test_float32_run_records_float32(tmp_path, monkeypatch):
    monkeypatch.setattr(train_mod, "_cpu_has_amx", lambda: True)
    tiny = save_tiny_bert(tmp_path / "tiny")
    out = tmp_path / "model"
    cfg = TrainConfig(out=str(out), dataset=str(_squad(tmp_path)), model=str(tiny), strategy="fixed:size=8",
                      macro_window=32, window_overlap=4, epochs=1, lr=2e-3, batch_size=6, device="cpu",
                      precision="float32")
    train(cfg, progress=False)
    assert json.loads((out / "latechunk_train.json").read_text())["autocast"] == "float32"


def test_the_cli_passes_precision_and_refuses_a_bad_one(tmp_path):
    from typer.testing import CliRunner

    from latechunk.cli import app

    res = CliRunner().invoke(app, ["train", "--dataset", "xquad", "--out", str(tmp_path / "m"), "--precision", "fp16"])
    assert res.exit_code != 0 and "--dtype must be one of" in res.output, res.output  # the old name still works
    assert not (tmp_path / "m").exists()
    # embed names the compute dtype --dtype (its --precision is the index's storage): train's is --dtype too
    res = CliRunner().invoke(app, ["train", "--dataset", "xquad", "--out", str(tmp_path / "m"), "--dtype", "fp16"])
    assert res.exit_code != 0 and "must be one of" in res.output and "No such option" not in res.output, res.output
