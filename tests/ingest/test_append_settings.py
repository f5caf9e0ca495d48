"""An append repeats the folder's run as its config (:func:`latechunk.ingest.append.config_from_settings`:
``EmbedConfig.from_dict(recorded=True)``), except ``trust_remote_code``, which is the caller's choice and never
taken from run.json: a folder embedded with it refuses an append (and ``Index.add``) that does not ask again."""

from __future__ import annotations

import json

import pytest

from latechunk import Document, Index
from latechunk.config import EmbedConfig, ModelConfig, PipelineConfig
from latechunk.ingest import ingest
from latechunk.ingest.append import append, check_append_options, config_from_settings
from latechunk.output import OutputFolder
from tests.models import save_tiny_remote_code

pytestmark = pytest.mark.filterwarnings("ignore:trust_remote_code=True:UserWarning")  # the warning asked for


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    """A folder embedded with a model that ships its own code (trust_remote_code recorded in run.json), the
    model's folder, and a new document to append."""
    from latechunk.encoder import Encoder

    base = tmp_path_factory.mktemp("remote")
    model = save_tiny_remote_code(base / "model")
    docs = base / "docs"
    docs.mkdir()
    (docs / "heron.md").write_text("# Herons\n\nA heron stands in the reeds. It waits for fish.\n", encoding="utf-8")
    new = base / "owl.md"
    new.write_text("An owl hunts at night.\n", encoding="utf-8")
    out = base / "out"
    config = EmbedConfig(inputs=(docs,), out=out, pipeline=PipelineConfig(("fixed:size=8",)),
                         model=ModelConfig(name=str(model), device="cpu", trust_remote_code=True))
    encoder = Encoder(str(model), device="cpu", trust_remote_code=True)
    ingest(config, encoder, header={"model": encoder.describe()})  # as embed records it: Index finds the model
    return out, model, new, encoder


def test_trust_remote_code_is_never_taken_from_run_json(remote):
    out, model, new, _ = remote
    settings = OutputFolder(out).read_run()["settings"]
    assert settings["model"]["trust_remote_code"] is True
    config = config_from_settings(settings, [new], out, model=str(model), device="cpu")
    assert config.model.trust_remote_code is False
    asked = config_from_settings(settings, [new], out, model=str(model), device="cpu", trust_remote_code=True)
    assert asked.model.trust_remote_code is True
    # everything else is the recorded run: only the options the append sets differ
    recorded = EmbedConfig.from_dict(settings, out=out, inputs=[new], recorded=True)
    assert asked == recorded.with_overrides(model=str(model), device="cpu", sentence_workers=0)


def test_an_append_without_trust_remote_code_is_refused_and_changes_nothing(remote):
    out, model, new, encoder = remote
    settings = OutputFolder(out).read_run()["settings"]
    before = (out / "manifest.json").read_bytes()
    config = config_from_settings(settings, [new], out, model=str(model), device="cpu")
    with pytest.raises(ValueError, match="pass --trust-remote-code to --append too") as err:
        append(config, encoder)
    assert "never taken from run.json" in str(err.value)
    with pytest.raises(ValueError, match="pass --trust-remote-code to --append too"):  # before the model loads
        check_append_options(config)
    assert (out / "manifest.json").read_bytes() == before
    with pytest.raises(ValueError, match="trust_remote_code=True"):  # Index.add asks again too
        Index.load(out, "cpu").add([Document("owl", "An owl hunts at night.")])
    assert (out / "manifest.json").read_bytes() == before


def test_index_add_with_trust_remote_code_appends(remote, tmp_path):
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(remote[0], out)
    result = Index.load(out, "cpu", trust_remote_code=True).add([Document("owl", "An owl hunts at night.")])
    assert result.added == ("owl",)
    manifest = json.loads((out / "manifest.json").read_text())
    assert "owl" in {d["doc_id"] for d in manifest["documents"]}
    assert OutputFolder(out).read_run()["settings"]["model"]["trust_remote_code"] is True
