"""latechunk/ingest/plan.py: what `embed` does with its folder, decided before the model loads (issue 37 §2):
a new run's settings are the defaults with the options given; --resume and --append take the folder's run.json
settings (the model by the manifest's folder for --append, never trust_remote_code), --reuse OLD's; a finished
folder resumed with nothing given is done; each conflict is refused, naming it."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from latechunk.config import DEFAULT_MODE, DEFAULT_STRATEGY, EmbedConfig
from latechunk.ingest.plan import finished_run_note, interrupted_append_shards, plan_embed, settings_folder
from tests.models import save_tiny_bert


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished output folder of a tiny model (strategy fixed:size=16, naive), with its inputs and model."""
    from latechunk.cli import app

    root = tmp_path_factory.mktemp("plan")
    model = save_tiny_bert(root / "model")
    docs = root / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Herons\n\nHerons wait by the reeds. The tide comes in slowly.\n", encoding="utf-8")
    (docs / "b.txt").write_text("Rivers flow to the sea, and the sea is salt.\n", encoding="utf-8")
    out = root / "out"
    res = CliRunner().invoke(app, ["embed", str(docs), "--out", str(out), "--model", str(model), "--strategy",
                                   "fixed:size=16", "--mode", "naive", "--device", "cpu", "-q"])
    assert res.exit_code == 0, res.output
    return docs, out, model


@pytest.fixture
def folder(finished, tmp_path):
    """A copy of the finished folder and its inputs (the same relative place), free to change."""
    docs, out, model = finished
    shutil.copytree(docs, tmp_path / "docs")
    shutil.copytree(out, tmp_path / "out")
    return tmp_path / "docs", tmp_path / "out", model


def _run_json(out):
    return json.loads((out / "run.json").read_text(encoding="utf-8"))


def test_a_new_run_is_the_defaults_with_the_options_given(finished, tmp_path):
    docs, _, _ = finished
    notes = []
    plan = plan_embed([docs], tmp_path / "new", {"strategy": "fixed:size=8", "mode": None},
                      run={"device": "cpu", "sentence_workers": 0}, note=notes.append)
    expected = EmbedConfig.from_dict({"inputs": [str(docs)], "out": str(tmp_path / "new")}).with_overrides(
        strategy="fixed:size=8", device="cpu")
    assert plan.config == expected and plan.config.mode == DEFAULT_MODE
    assert (plan.append, plan.reuse, plan.resumed, plan.finished, plan.done, plan.model_recorded) == (
        False, None, False, "", False, False)
    assert notes == [] and settings_folder(tmp_path / "new") is None
    plan.check_folder()  # a new folder: nothing in the way


def test_resume_of_a_finished_folder_with_nothing_given_is_done(folder):
    docs, out, _ = folder
    plan = plan_embed([docs], out, {}, run={"device": "cpu"}, resume=True)
    assert plan.done and plan.resumed and plan.finished == finished_run_note(out)
    assert "holds a finished run (2 documents" in plan.finished
    # the settings are the folder's (run.json), with the recorded model name
    assert plan.config.strategy.spec == "fixed:size=16,overlap=0" and plan.config.mode == "naive"
    assert plan.config.model.name == _run_json(out)["settings"]["model"]["name"] and plan.model_recorded
    # an option given: not done (checked against the folder once the model loads), a different one refused
    assert not plan_embed([docs], out, {"mode": "naive"}, resume=True).done
    with pytest.raises(ValueError, match=r"--resume of a finished run with settings that differ from it: mode"):
        plan_embed([docs], out, {"mode": "late"}, resume=True)


def test_resume_and_force_exclude_each_other(folder):
    docs, out, _ = folder
    with pytest.raises(ValueError, match="--force .* and --resume .* exclude each other"):
        plan_embed([docs], out, {}, resume=True, force=True)


def test_resume_without_run_json_starts_a_new_run_and_says_so(finished, tmp_path):
    docs, _, _ = finished
    notes = []
    plan = plan_embed([docs], tmp_path / "fresh", {"strategy": "fixed:size=8"}, resume=True, note=notes.append)
    assert not plan.resumed and plan.config.resume and plan.config.strategy.spec.startswith("fixed:size=8")
    assert len(notes) == 1 and "holds no run to continue (no run.json)" in notes[0]


def test_append_takes_the_folders_settings_and_its_model_folder(folder, tmp_path):
    _docs, out, model = folder
    new = tmp_path / "new"
    new.mkdir()
    (new / "c.md").write_text("Owls hunt at night.\n", encoding="utf-8")
    plan = plan_embed([new], out, {}, run={"device": "cpu"}, append=True)
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert plan.append and plan.config.strategy.spec == "fixed:size=16,overlap=0" and plan.config.mode == "naive"
    assert plan.config.model.name == manifest["model"]["path"] == str(model)
    assert plan.config.model.batch_tokens is None  # the budget that run used is not a setting: this device's
    with pytest.raises(ValueError, match=r"--append into .* strategy \(--strategy\) was 'fixed:size=16"):
        plan_embed([new], out, {"strategy": "fixed:size=8"}, append=True)
    with pytest.raises(ValueError, match="--append excludes --force and --resume"):
        plan_embed([new], out, {}, append=True, force=True)


def test_trust_remote_code_is_never_taken_from_run_json(folder, tmp_path):
    docs, out, _ = folder
    run = _run_json(out)
    run["settings"]["model"]["trust_remote_code"] = True
    (out / "run.json").write_text(json.dumps(run), encoding="utf-8")
    new = tmp_path / "new"
    new.mkdir()
    (new / "c.md").write_text("Owls hunt at night.\n", encoding="utf-8")
    with pytest.raises(ValueError, match="pass --trust-remote-code to --append too"):
        plan_embed([new], out, {}, append=True)
    plan = plan_embed([new], out, {}, run={"trust_remote_code": True}, append=True)
    assert plan.config.model.trust_remote_code
    # a resume does not take it either: the settings then differ from the run's
    assert not plan_embed([docs], out, {}, resume=True).config.model.trust_remote_code


def test_reuse_takes_olds_settings_and_refuses_what_it_cannot_do(finished, tmp_path):
    docs, old, _ = finished
    plan = plan_embed([docs], tmp_path / "new", {}, reuse=old)
    assert plan.reuse == old and plan.config.strategy.spec == "fixed:size=16,overlap=0"
    assert settings_folder(tmp_path / "new", reuse=old) == old
    with pytest.raises(ValueError, match="is --out itself"):
        plan_embed([docs], old, {}, reuse=old, force=True)
    with pytest.raises(ValueError, match="does not combine with --engine ray"):
        plan_embed([docs], tmp_path / "new", {}, reuse=old, engine="ray")
    with pytest.raises(ValueError, match="does not combine with --dedup"):
        plan_embed([docs], tmp_path / "new", {"dedup": 0.9}, reuse=old)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="not a finished output folder"):
        plan_embed([docs], tmp_path / "new", {}, reuse=empty)


def test_reuse_of_a_folder_embedded_with_dedup_is_refused(folder, tmp_path):
    docs, old, _ = folder
    run = _run_json(old)
    run["settings"]["dedup"] = 0.95
    (old / "run.json").write_text(json.dumps(run), encoding="utf-8")
    with pytest.raises(ValueError, match="it was embedded with --dedup"):
        plan_embed([docs], tmp_path / "new", {}, reuse=old)


def test_a_resumed_reuse_run_reuses_old_again_or_says_it_is_gone(finished, tmp_path):
    _, old, _ = finished
    docs = shutil.copytree(finished[0], tmp_path / "docs")  # where run.json's inputs_from_out (../docs) points
    out = tmp_path / "interrupted"
    out.mkdir()
    run = {**_run_json(old), "reuse": str(old)}
    (out / "run.json").write_text(json.dumps(run), encoding="utf-8")
    assert plan_embed([docs], out, {}, resume=True).reuse == old
    run["reuse"] = str(tmp_path / "gone")
    (out / "run.json").write_text(json.dumps(run), encoding="utf-8")
    with pytest.raises(ValueError, match="is a --reuse run of .*gone, which is no longer there"):
        plan_embed([docs], out, {}, resume=True)


def test_a_finished_folder_with_an_interrupted_append_is_not_resumed(folder):
    docs, out, _ = folder
    assert interrupted_append_shards(out) == 0
    last = json.loads((out / "manifest.json").read_text(encoding="utf-8"))["shards"][-1]["name"]
    shutil.copy2(out / "shards" / f"{last}.json", out / "shards" / f"{int(last) + 1:05d}.json")
    assert interrupted_append_shards(out) == 1
    with pytest.raises(ValueError, match="1 shard\\(s\\) of an --append that was interrupted"):
        plan_embed([docs], out, {}, resume=True)


def test_a_new_runs_folder_must_be_empty_or_ours_to_clear(finished, tmp_path):
    docs, out, _ = finished
    with pytest.raises(ValueError, match="exists and is not empty; pass --force"):
        plan_embed([docs], out, {}).check_folder()
    plan_embed([docs], out, {}, force=True).check_folder()  # a latechunk output: --force may clear it
    other = tmp_path / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("keep me\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not a latechunk output folder"):
        plan_embed([docs], other, {}, force=True).check_folder()
    assert plan_embed([docs], out, {}, resume=True).check_folder() is None  # --resume keeps the folder
    assert plan_embed([docs], out, {}).config.strategy.spec == EmbedConfig.from_dict(
        {"inputs": [str(docs)], "out": str(out)}).strategy.spec == EmbedConfig.from_dict(
        {"strategy": DEFAULT_STRATEGY, "inputs": [str(docs)], "out": str(out)}).strategy.spec
