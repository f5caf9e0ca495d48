"""scripts/model_soup.py (issue 14): the uniform soup is the mean of the models' float tensors, a loadable model
folder with its record; inputs that are not fine-tunes of one architecture are refused."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from latechunk.encoder import Encoder
from tests.models import save_tiny_bert
from tests.scripts import load_script

soup = load_script("model_soup")


def test_uniform_soup_is_the_mean_of_float_tensors():
    a = {"w": torch.zeros(2, 3), "ids": torch.arange(3)}
    b = {"w": torch.full((2, 3), 3.0), "ids": torch.arange(3)}
    c = {"w": torch.full((2, 3), 6.0), "ids": torch.arange(3)}
    out = soup.uniform_soup([a, b, c])
    assert torch.equal(out["w"], torch.full((2, 3), 3.0)) and torch.equal(out["ids"], a["ids"])
    assert torch.equal(soup.uniform_soup([a, b])["w"], torch.full((2, 3), 1.5))
    with pytest.raises(ValueError, match="at least two"):
        soup.uniform_soup([a])
    with pytest.raises(ValueError, match="shape"):
        soup.uniform_soup([a, {"w": torch.zeros(3, 2), "ids": torch.arange(3)}])
    with pytest.raises(ValueError, match="'ln' is in one of"):
        soup.uniform_soup([a, b | {"ln": torch.ones(3)}])
    with pytest.raises(ValueError, match="not floating point"):
        soup.uniform_soup([a, {"w": b["w"], "ids": torch.arange(3) + 1}])


def test_main_writes_a_loadable_soup_with_its_record(tmp_path):
    folders = []
    for i in range(3):
        folder = save_tiny_bert(tmp_path / f"m{i}")
        weights = load_file(folder / "model.safetensors")
        save_file({k: v + float(i) if v.is_floating_point() else v for k, v in weights.items()},
                  folder / "model.safetensors", metadata={"format": "pt"})
        folders.append(folder)
    first = load_file(folders[0] / "model.safetensors")
    out = soup.main(["--models", *map(str, folders), "--out", str(tmp_path / "soup")])
    mixed = load_file(out / "model.safetensors")
    name = next(k for k, v in mixed.items() if v.is_floating_point())
    torch.testing.assert_close(mixed[name], first[name] + 1.0)  # mean of +0, +1, +2
    record = json.loads((out / "model_soup.json").read_text())
    assert [m["path"] for m in record["models"]] == [str(f.resolve()) for f in folders]
    assert all(len(m["sha256"]) == 64 for m in record["models"])
    assert Encoder(str(out), device="cpu", dtype="float32").encode(["Rivers reach the sea."]).shape == (1, 32)
    with pytest.raises(SystemExit, match="exists"):
        soup.main(["--models", *map(str, folders), "--out", str(out)])
    with pytest.raises(SystemExit, match="listed twice"):
        soup.main(["--models", str(folders[0]), str(folders[0]), "--out", str(tmp_path / "twice")])
    with pytest.raises(SystemExit, match="no model.safetensors"):
        soup.main(["--models", str(folders[0]), str(tmp_path), "--out", str(tmp_path / "none")])
