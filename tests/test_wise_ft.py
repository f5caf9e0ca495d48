"""scripts/wise_ft.py (issue 14): the weights of (1 - alpha) * base + alpha * trained, a loadable model folder
with its record; bad inputs are refused."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from latechunk.encoder import Encoder
from tests.models import save_tiny_bert
from tests.scripts import load_script

wise = load_script("wise_ft")


def test_interpolate_is_the_weighted_mean_of_float_tensors():
    base = {"w": torch.zeros(2, 3), "ids": torch.arange(3)}
    trained = {"w": torch.full((2, 3), 4.0), "ids": torch.arange(3) + 7}
    for alpha, want in ((0.0, 0.0), (0.25, 1.0), (0.5, 2.0), (1.0, 4.0)):
        out = wise.interpolate(base, trained, alpha)
        assert torch.equal(out["w"], torch.full((2, 3), want)) and torch.equal(out["ids"], trained["ids"])
    with pytest.raises(ValueError, match="alpha must be in"):
        wise.interpolate(base, trained, 1.5)
    with pytest.raises(ValueError, match="shape"):
        wise.interpolate({"w": torch.zeros(3, 2)}, trained, 0.5)
    with pytest.raises(ValueError, match="not in the base"):
        wise.interpolate({}, trained, 0.5)
    with pytest.raises(ValueError, match="not in the trained model"):  # second trial: it was dropped silently
        wise.interpolate(base | {"ln": torch.ones(3)}, trained, 0.5)


def test_main_writes_a_model_that_loads_between_its_endpoints(tmp_path):
    base = save_tiny_bert(tmp_path / "base")
    trained = save_tiny_bert(tmp_path / "trained")
    weights = load_file(trained / "model.safetensors")
    save_file({k: v + 1.0 if v.is_floating_point() else v for k, v in weights.items()},
              trained / "model.safetensors", metadata={"format": "pt"})
    out = wise.main(["--base", str(base), "--trained", str(trained), "--alpha", "0.5", "--out", str(tmp_path / "mix")])
    mixed, b = load_file(out / "model.safetensors"), load_file(base / "model.safetensors")
    name = next(k for k, v in mixed.items() if v.is_floating_point() and k in b)
    torch.testing.assert_close(mixed[name], b[name] + 0.5)
    record = json.loads((out / "wise_ft.json").read_text())
    assert record["alpha"] == 0.5 and len(record["base_sha256"]) == len(record["trained_sha256"]) == 64
    vec = Encoder(str(out), device="cpu", dtype="float32").encode(["Rivers reach the sea."])
    assert vec.shape == (1, 32)
    with pytest.raises(SystemExit, match="exists"):
        wise.main(["--base", str(base), "--trained", str(trained), "--out", str(out)])
