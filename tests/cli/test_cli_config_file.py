"""``latechunk embed --config run.toml`` (issue 37 §1): a TOML file with run.json's settings keys; its settings
reach run.json, an option given on the command line overrides it, an unknown key or a bad value fails before any
work naming the file and the key, and with --append the file's settings are compared with the folder's."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from tests.models import save_tiny_bert

runner = CliRunner()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return save_tiny_bert(tmp_path_factory.mktemp("model") / "tiny")


@pytest.fixture
def docs(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Herons\n\nHerons wait by the reeds. The tide comes in slowly.\n", encoding="utf-8")
    (folder / "b.txt").write_text("Rivers flow to the sea, and the sea is salt.\n", encoding="utf-8")
    return folder


def _toml(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


def _embed(*args):
    return runner.invoke(app, ["embed", *map(str, args), "--device", "cpu", "-q"])


def _settings(out) -> dict:
    return json.loads((out / "run.json").read_text(encoding="utf-8"))["settings"]


def test_the_files_settings_reach_run_json_and_the_command_line_overrides_them(tmp_path, docs, tiny_model):
    config = _toml(tmp_path / "run.toml", f"""
strategy = "fixed:size=16"
mode = "naive"
macro_window_overlap = 8

[model]
name = "{tiny_model.as_posix()}"
dtype = "float32"

[index]
index = "hnsw"
hnsw_m = 16
precision = "int8"

[record_fields]
title = "heading"
""")
    res = _embed(docs, "--out", tmp_path / "a", "--config", config)
    assert res.exit_code == 0, res.output
    s = _settings(tmp_path / "a")
    assert (s["strategy"], s["mode"], s["macro_window_overlap"]) == ("fixed:size=16,overlap=0", "naive", 8)
    assert (s["index"]["factory"], s["index"]["precision"], s["model"]["dtype"]) == ("HNSW16", "int8", "float32")
    assert s["record_fields"] == {"title": "heading"}
    # options given on the command line win; the file's other settings stay
    res = _embed(docs, "--out", tmp_path / "b", "--config", config, "--strategy", "fixed:size=8", "--mode", "late",
                 "--index", "flat", "--precision", "float32")
    assert res.exit_code == 0, res.output
    s = _settings(tmp_path / "b")
    assert (s["strategy"], s["mode"], s["index"]["factory"]) == ("fixed:size=8,overlap=0", "late", "Flat")
    assert "precision" not in s["index"] and s["macro_window_overlap"] == 8 and s["model"]["dtype"] == "float32"


def test_inputs_and_out_may_come_from_the_file(tmp_path, docs, tiny_model):
    config = _toml(tmp_path / "run.toml", f"""
inputs = ["{docs.as_posix()}"]
out = "{(tmp_path / 'out').as_posix()}"
strategy = "fixed:size=16"
[model]
name = "{tiny_model.as_posix()}"
""")
    res = runner.invoke(app, ["embed", "--config", str(config), "--device", "cpu", "-q"])
    assert res.exit_code == 0, res.output
    assert _settings(tmp_path / "out")["strategy"] == "fixed:size=16,overlap=0"
    res = runner.invoke(app, ["embed", str(docs), "--config", str(_toml(tmp_path / "no_out.toml", 'mode = "late"\n'))])
    assert res.exit_code == 2 and "no_out.toml gives no out" in res.output, res.output


@pytest.mark.parametrize(("text", "key", "words"), [
    ("bogus = 1\n", "bogus", "unknown setting(s) 'bogus'"),
    ('[index]\nfacotry = "Flat"\n', "index.facotry", "unknown setting(s) 'facotry'"),
    ('mode = "lat"\n', "mode", "got 'lat'"),
    ('[index]\nprecision = "int9"\n', "index.precision", "got 'int9'"),
    ("macro_window_overlap = -1\n", "macro_window_overlap", ">= 0"),
    ('[record_fields]\nencoding_errors = "ignore"\n', "record_fields.encoding_errors", "ignore"),
])
def test_an_unknown_key_or_a_bad_value_names_the_file_and_the_key(tmp_path, docs, text, key, words):
    config = _toml(tmp_path / "run.toml", text)
    res = _embed(docs, "--out", tmp_path / "o", "--config", config)
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and f"--config {config}: {key}: " in said and words in said, res.output
    assert not (tmp_path / "o").exists()


def test_a_file_that_is_not_toml_or_not_there_is_named(tmp_path, docs):
    res = _embed(docs, "--out", tmp_path / "o", "--config", _toml(tmp_path / "run.toml", "mode = \n"))
    assert res.exit_code == 2 and "run.toml: not a TOML file" in res.output, res.output
    res = _embed(docs, "--out", tmp_path / "o", "--config", tmp_path / "missing.toml")
    assert res.exit_code == 2 and "missing.toml: cannot read it" in res.output, res.output


def test_with_append_the_files_settings_are_compared_with_the_folders(tmp_path, docs, tiny_model):
    config = _toml(tmp_path / "run.toml", f'strategy = "fixed:size=16"\n[model]\nname = "{tiny_model.as_posix()}"\n')
    out = tmp_path / "out"
    assert _embed(docs, "--out", out, "--config", config).exit_code == 0
    new = tmp_path / "new"
    new.mkdir()
    (new / "c.md").write_text("Owls hunt at night in the quiet woods.\n", encoding="utf-8")
    other = _toml(tmp_path / "other.toml", f'strategy = "fixed:size=8"\n[model]\nname = "{tiny_model.as_posix()}"\n')
    res = _embed(new, "--out", out, "--config", other, "--append")
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "strategy (--strategy) was 'fixed:size=16,overlap=0', now 'fixed:size=8" in said
    res = _embed(new, "--out", out, "--config", config, "--append")
    assert res.exit_code == 0 and "appended 1/1 documents" in res.output, res.output


@pytest.mark.parametrize(("text", "key", "instead"), [
    ('[index]\nfactory = "hnsw"\n', "index.factory", "set index"),
    ('[index]\nmetric = "l2"\n', "index.metric", "set precision"),
    ('[index]\nmetric = "cosine"\n', "index.metric", "set precision"),
    ("[index]\nrenormalize = false\n", "index.renormalize", "set normalize"),
    ("[index]\nrescore_multiplier = 9\n", "index.rescore_multiplier", "set precision"),
    ("[index]\nntotal = 3\n", "index.ntotal", "leave it out"),
    ('inputs_from_out = ["x"]\n', "inputs_from_out", "set inputs"),
    ("[model]\nwindow = 64\n", "model.window", "set macro_window"),
])
def test_a_recorded_or_derived_key_is_refused_naming_what_to_set(tmp_path, docs, text, key, instead):
    config = _toml(tmp_path / "run.toml", text)
    res = _embed(docs, "--out", tmp_path / "o", "--config", config)
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and f"--config {config}: {key}: " in said and instead in said, res.output
    assert not (tmp_path / "o").exists()


def test_the_unknown_key_error_lists_only_settable_keys(tmp_path, docs):
    res = _embed(docs, "--out", tmp_path / "o", "--config", _toml(tmp_path / "run.toml", "bogus = 1\n"))
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "macro_window_overlap" in said and "inputs_from_out" not in said, res.output
    res = _embed(docs, "--out", tmp_path / "o", "--config", _toml(tmp_path / "run.toml", "[index]\nbogus = 1\n"))
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "hnsw_m" in said and "factory" not in said and "metric" not in said, res.output


def test_index_and_hnsw_m_set_the_index(tmp_path, docs, tiny_model):
    config = _toml(tmp_path / "run.toml", f'[model]\nname = "{tiny_model.as_posix()}"\n[index]\nindex = "hnsw"\n'
                   "hnsw_m = 8\nef_search = 16\n")
    res = _embed(docs, "--out", tmp_path / "a", "--config", config)
    assert res.exit_code == 0, res.output
    assert (_settings(tmp_path / "a")["index"]["factory"], _settings(tmp_path / "a")["index"]["ef_search"]) == (
        "HNSW8", 16)
    res = _embed(docs, "--out", tmp_path / "b", "--config", _toml(tmp_path / "m.toml", "[index]\nhnsw_m = 8\n"))
    said = " ".join(res.output.split())
    assert res.exit_code == 2 and "index.hnsw_m: " in said and 'index = "hnsw"' in said, res.output
