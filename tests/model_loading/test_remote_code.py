"""A model that ships its own Python code (``auto_map``, as jina-embeddings-v2 on the hub) loads only when the user
asks (``--trust-remote-code``), in every command that loads a model, and a folder embedded with it is never
trusted by itself: ``search`` and ``Index.load`` ask again, naming the option (a trial: ``search`` on such a folder
had no option for it and failed with "if it moved, give its new place")."""

from __future__ import annotations

import json

import pytest
from models import save_tiny_remote_code
from typer.testing import CliRunner

from latechunk import Index
from latechunk.cli import app
from tests.train.test_train import _squad

runner = CliRunner()
pytestmark = pytest.mark.filterwarnings("ignore:trust_remote_code=True:UserWarning")  # the warning asked for


@pytest.fixture(scope="module")
def custom(tmp_path_factory):
    return save_tiny_remote_code(tmp_path_factory.mktemp("rc") / "model")


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    d = tmp_path_factory.mktemp("docs")
    (d / "heron.md").write_text("# Herons\n\nA heron stands in the reeds. It waits for fish at dawn.\n", encoding="utf-8")
    (d / "bread.md").write_text("# Bread\n\nSourdough rises slowly. The oven must be hot.\n", encoding="utf-8")
    return d


@pytest.fixture(scope="module")
def folder(custom, docs, tmp_path_factory):
    out = tmp_path_factory.mktemp("out") / "o"
    res = runner.invoke(app, ["embed", str(docs), "--out", str(out), "--model", str(custom), "--device", "cpu",
                              "-q", "--sentence-workers", "0", "--trust-remote-code"])
    assert res.exit_code == 0, res.output
    return out


def _flat(res) -> str:
    return " ".join(res.output.split())


def test_embed_without_the_option_names_it(custom, docs, tmp_path):
    res = runner.invoke(app, ["embed", str(docs), "--out", str(tmp_path / "o"), "--model", str(custom),
                              "--device", "cpu", "-q", "--sentence-workers", "0"])
    text = _flat(res)
    assert res.exit_code == 2 and "--trust-remote-code" in text and "runs its own Python code" in text, res.output
    assert not (tmp_path / "o" / "index.faiss").exists()


def test_search_asks_again_for_a_folder_embedded_with_remote_code(folder):
    res = runner.invoke(app, ["search", str(folder), "heron", "-k", "1", "--device", "cpu"])
    text = _flat(res)
    assert res.exit_code == 2 and "embedded with --trust-remote-code" in text, res.output
    assert "moved" not in text  # not the hint for a model folder that moved
    res = runner.invoke(app, ["search", str(folder), "heron", "-k", "1", "--device", "cpu", "--json",
                              "--trust-remote-code"])
    assert res.exit_code == 0, res.output
    (hit,) = json.loads(res.stdout)
    assert hit["doc_id"] in {"heron.md", "bread.md"}


def test_index_load_asks_again(folder):
    index = Index.load(folder, "cpu")
    with pytest.raises(ValueError, match="trust_remote_code=True"):
        index.search("heron")
    hits = Index.load(folder, "cpu", trust_remote_code=True).search("heron", k=2)
    assert {h.doc_id for h in hits} == {"heron.md", "bread.md"}


def test_chunk_and_agree_take_the_option(custom, docs):
    args = [str(docs), "--model", str(custom), "--device", "cpu"]
    res = runner.invoke(app, ["chunk", *args, "--strategy", "semantic"])
    assert res.exit_code == 2 and "--trust-remote-code" in _flat(res), res.output
    res = runner.invoke(app, ["chunk", *args, "--strategy", "semantic", "--trust-remote-code"])
    assert res.exit_code == 0, res.output
    assert {json.loads(line)["doc_id"] for line in res.stdout.splitlines() if line.startswith("{")} == \
        {"heron.md", "bread.md"}
    res = runner.invoke(app, ["agree", *args, "-q", "--json", "--sentence-workers", "0"])
    assert res.exit_code == 2 and "--trust-remote-code" in _flat(res), res.output
    res = runner.invoke(app, ["agree", *args, "-q", "--json", "--sentence-workers", "0", "--trust-remote-code"])
    assert res.exit_code == 0, res.output


def test_compare_and_train_take_the_option(custom, tmp_path):
    data = _squad(tmp_path)
    common = ["--model", str(custom), "--device", "cpu"]
    res = runner.invoke(app, ["compare", "--dataset", str(data), *common, "--strategies", "fixed:size=16",
                              "--out", str(tmp_path / "r"), "-q", "--resamples", "50", "--no-cache"])
    assert res.exit_code == 2 and "--trust-remote-code" in _flat(res), res.output
    res = runner.invoke(app, ["compare", "--dataset", str(data), *common, "--strategies", "fixed:size=16",
                              "--out", str(tmp_path / "r"), "-q", "--resamples", "50", "--no-cache",
                              "--trust-remote-code"])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "r" / "results.json").read_text())["config"]["trust_remote_code"] is True
    train = ["train", "--dataset", str(data), *common, "--strategy", "fixed:size=8", "--window", "32",
             "--batch-size", "6", "--max-queries", "6", "-q"]
    res = runner.invoke(app, [*train, "--out", str(tmp_path / "m1")])
    assert res.exit_code == 2 and "--trust-remote-code" in _flat(res), res.output
    res = runner.invoke(app, [*train, "--out", str(tmp_path / "m2"), "--trust-remote-code"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "m2" / "config.json").is_file()


def test_append_asks_again(folder, custom, tmp_path):
    new = tmp_path / "owl.md"
    new.write_text("An owl hunts at night.\n", encoding="utf-8")
    res = runner.invoke(app, ["embed", str(new), "--out", str(folder), "--append", "-q", "--device", "cpu"])
    text = _flat(res)
    # not "leave out the options that differ": the option must be given
    assert res.exit_code == 2 and "pass --trust-remote-code to --append too" in text, res.output
    res = runner.invoke(app, ["embed", str(new), "--out", str(folder), "--append", "-q", "--device", "cpu",
                              "--trust-remote-code"])
    assert res.exit_code == 0, res.output
    assert "owl.md" in {d["doc_id"] for d in json.loads((folder / "manifest.json").read_text())["documents"]}
