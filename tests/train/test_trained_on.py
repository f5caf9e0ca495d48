"""``compare`` warns when its model was trained on the dataset it scores (a trial: a model trained on a dataset
was compared on the same questions without a word), following the chain of base models."""

from __future__ import annotations

import json

from models import save_tiny_bert
from test_train import _squad
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.train import TRAIN_FILE, trained_on

runner = CliRunner()


def _record(folder, dataset, base, ict=None):
    (folder / TRAIN_FILE).write_text(json.dumps({"config": {"dataset": dataset, "ict": ict}, "base_model": base}),
                                     encoding="utf-8")


def test_trained_on_follows_base_models(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    _record(a, "xquad", "all-MiniLM-L6-v2")
    _record(b, None, str(a), ict=["docs/"])  # label-free on top of a supervised model
    assert trained_on(b) == [("xquad", None)] and trained_on(a) == [("xquad", None)]
    assert trained_on(tmp_path) == [] and trained_on(None) == [] and trained_on("all-MiniLM-L6-v2") == []


def test_compare_warns_on_the_training_dataset(tmp_path):
    data = _squad(tmp_path)
    model = save_tiny_bert(tmp_path / "m")
    args = ["compare", "--dataset", str(data), "--model", str(model), "--strategies", "fixed:size=16", "-q",
            "--resamples", "20", "--device", "cpu"]
    _record(model, str(tmp_path / "." / data.name), "all-MiniLM-L6-v2")  # the same file, written another way
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "r1")])
    assert res.exit_code == 0, res.output
    assert "trained on" in res.output and "not held out" in res.output
    _record(model, "xquad", "all-MiniLM-L6-v2")
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "r2")])
    assert res.exit_code == 0 and "not held out" not in res.output, res.output


def test_the_dataset_is_recognised_by_any_of_its_names(tmp_path, monkeypatch):
    """A trial: trained with a relative --dataset, compared from another directory (or the bundled name against
    its path): no warning."""
    from latechunk.eval.datasets import dataset_path
    from latechunk.train import _dataset_path, same_dataset

    data = _squad(tmp_path)
    monkeypatch.chdir(tmp_path)
    recorded = _dataset_path(data.name)  # what train records for `--dataset toy.json` run here
    monkeypatch.chdir("/")
    assert same_dataset(data.name, recorded, str(data))  # from another directory, by its absolute path
    assert not same_dataset(data.name, recorded, "xquad")
    xquad = dataset_path("xquad")
    assert same_dataset("xquad", _dataset_path("xquad"), str(xquad)) and same_dataset("xquad", None, str(xquad.parent))
    assert not same_dataset("xquad", None, "XQuAD")  # not a name compare knows
