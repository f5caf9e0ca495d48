"""latechunk.models: the offline default model, local folders, hub ids (fast failure offline or with the hub
unreachable, the local cache, the probe and its memo), sentence-transformers settings, the weight hash, loading."""

from __future__ import annotations

import dataclasses
import http.server
import json
import shutil
import threading
from pathlib import Path

import pytest

from latechunk import models
from latechunk.models import (
    DEFAULT_MODEL,
    HUB_PROBE_ENV_VAR,
    HubProbe,
    LoadedModel,
    ModelSettings,
    hub_reachable,
    input_limit,
    resolve_model_path,
    weight_hash,
)
from tests.models import minilm_parts, tiny_bert

CLOSED_ENDPOINT = "http://127.0.0.1:9"  # the discard port: nothing listens, the connection is refused


# --------------------------------------------------------------------------- the default model, local folders
def test_default_model_loads_offline_with_its_st_settings(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    loaded = LoadedModel.load()
    assert loaded.name == DEFAULT_MODEL and Path(loaded.path) == Path(resolve_model_path(None))
    assert loaded.model.config.hidden_size == 384 and loaded.input_limit == 512 and not loaded.model.training
    s = loaded.settings
    assert (s.pooling, s.normalize, s.max_seq_length, s.include_prompt) == ("mean", True, 256, True)
    assert s.query_prompt == s.document_prompt == ""
    assert loaded.sha256 == weight_hash(loaded.path) and len(loaded.sha256) == 64


def test_default_aliases_resolve_to_the_bundled_folder():
    folder = resolve_model_path(None)
    assert (Path(folder) / "config.json").is_file()
    for alias in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "default"):
        assert resolve_model_path(alias) == folder


def test_missing_or_bad_model_paths_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        resolve_model_path(str(tmp_path / "no_such_model"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="has no config.json"):
        LoadedModel.load(str(tmp_path / "empty"))
    (tmp_path / "file.bin").write_bytes(b"x")
    with pytest.raises(ValueError, match="is a file"):
        resolve_model_path(str(tmp_path / "file.bin"))


def test_model_settings_defaults_for_plain_hf_folder(tmp_path):
    assert ModelSettings.read(str(tmp_path)) == ModelSettings()


def test_model_settings_read_st_files(tmp_path):
    (tmp_path / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True,
                                                                    "include_prompt": False}))
    (tmp_path / "config_sentence_transformers.json").write_text(json.dumps(
        {"prompts": {"query": "search_query: ", "passage": "search_document: "}}))
    (tmp_path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 8192}))
    assert ModelSettings.read(str(tmp_path)) == ModelSettings(
        pooling="cls", normalize=True, query_prompt="search_query: ", document_prompt="search_document: ",
        max_seq_length=8192, include_prompt=False)


def test_input_limit_takes_the_smaller_limit_and_roberta_reserve():
    model, tok, _ = minilm_parts()
    assert input_limit(model, tok) == 512

    class Tok:
        model_max_length = int(1e30)  # "unset" in transformers

    class Cfg:
        max_position_embeddings, pad_token_id, model_type = 514, 1, "xlm-roberta"

    class Model:
        config = Cfg()

    assert input_limit(Model(), Tok()) == 512  # 514 positions less padding_idx + 1
    Cfg.model_type = "bert"
    assert input_limit(Model(), Tok()) == 514
    Tok.model_max_length = 128
    assert input_limit(Model(), Tok()) == 128


def test_weight_hash_covers_every_safetensors_file(tmp_path):
    (tmp_path / "a.safetensors").write_bytes(b"one")
    h1 = weight_hash(tmp_path)
    (tmp_path / "b.safetensors").write_bytes(b"two")
    h2 = weight_hash(tmp_path)
    assert len(h1) == len(h2) == 64 and h1 != h2
    assert weight_hash(tmp_path / "none") == "" and weight_hash(tmp_path.parent) == ""


def test_loaded_model_in_memory_defaults_its_path_to_its_name():
    lm = LoadedModel("tiny", tiny_bert(layers=1, heads=2), minilm_parts()[1])
    assert lm.path == "tiny" and lm.settings == ModelSettings() and lm.input_limit == 512


# --------------------------------------------------------------------------- hub ids offline
@pytest.fixture
def hub_env(monkeypatch):
    """No offline flag and no probe switch from the environment."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.delenv(HUB_PROBE_ENV_VAR, raising=False)
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)


def _assert_fast_clear_failure(name: str) -> str:
    with pytest.raises(ValueError) as info:
        LoadedModel.load(name)
    msg = str(info.value)
    assert repr(name) in msg and "not a local path" in msg and "HF_HUB_OFFLINE" in msg
    return msg


def test_unreachable_hub_fails_fast_naming_the_model(hub_env, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_ENDPOINT", CLOSED_ENDPOINT)
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty_cache"))
    msg = _assert_fast_clear_failure("jinaai/jina-embeddings-v2-small-en")
    assert "could not be reached" in msg and CLOSED_ENDPOINT in msg


def test_real_hub_unreachable_here_fails_fast(hub_env, monkeypatch, tmp_path):
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    if hub_reachable():
        pytest.skip("the Hugging Face hub is reachable from this machine")
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty_cache"))
    _assert_fast_clear_failure("jinaai/jina-embeddings-v2-small-en")


def test_offline_flag_fails_without_probing_an_uncached_model(hub_env, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(models.resolve, "hub_reachable", lambda *a, **k: pytest.fail("probed while offline"))
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty_cache"))
    assert "HF_HUB_OFFLINE is set" in _assert_fast_clear_failure("acme/not-cached")


def _fake_hub_cache(root: Path, repo_id: str) -> Path:
    """A Hugging Face cache holding the bundled MiniLM under ``repo_id`` (as huggingface_hub lays it out)."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = root / ("models--" + repo_id.replace("/", "--"))
    snap = repo / "snapshots" / commit
    shutil.copytree(resolve_model_path(None), snap)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return snap


@pytest.mark.parametrize("offline", [False, True])
def test_cached_hub_model_loads_without_the_hub(hub_env, monkeypatch, tmp_path, offline):
    monkeypatch.setenv("HF_ENDPOINT", CLOSED_ENDPOINT)
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from huggingface_hub import constants

    snap = _fake_hub_cache(tmp_path / "hub", "acme/mini-lm")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    loaded = LoadedModel.load("acme/mini-lm")
    assert loaded.name == "acme/mini-lm" and Path(loaded.path) == snap
    assert loaded.model.config.hidden_size == 384 and loaded.settings.normalize is True
    assert loaded.sha256 == weight_hash(resolve_model_path(None))


class _HeadCounter:
    """A local HTTP server answering HEAD with 200, counting the requests."""

    def __enter__(self):
        counter = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_HEAD(self):
                counter.heads += 1
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.heads = 0
        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_reachable_hub_keeps_the_id(hub_env, monkeypatch):
    with _HeadCounter() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        assert resolve_model_path("acme/some-model") == "acme/some-model"
        assert hub.heads == 1


def test_probe_memo_belongs_to_the_probe(hub_env, monkeypatch):
    with _HeadCounter() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        probe = HubProbe()
        for _ in range(3):
            assert resolve_model_path("acme/some-model", probe) == "acme/some-model"
        assert hub.heads == 1  # one probe, one question
        assert HubProbe().reachable() and hub.heads == 2  # a new probe asks again
        stale = HubProbe(ttl=0.0)
        assert stale.reachable() and stale.reachable() and hub.heads == 4
    assert HubProbe().reachable(CLOSED_ENDPOINT) is False


def test_probe_switch_off_keeps_the_id_without_asking(hub_env, monkeypatch):
    monkeypatch.setenv(HUB_PROBE_ENV_VAR, "0")
    monkeypatch.setattr(models.resolve, "hub_reachable", lambda *a, **k: pytest.fail("probed with the probe switched off"))
    assert resolve_model_path("acme/some-model") == "acme/some-model"


def test_local_paths_and_default_model_never_probe(hub_env, monkeypatch):
    monkeypatch.setattr(models.resolve, "hub_reachable", lambda *a, **k: pytest.fail("probed for a local model"))
    folder = resolve_model_path(None)
    assert Path(folder).is_dir() and resolve_model_path(folder) == folder


def test_refused_connection_counts_as_unreachable():
    assert hub_reachable(CLOSED_ENDPOINT, timeout=0.5) is False


# --------------------------------------------------------------------------- facts from the files (issue 10)
def test_model_settings_read_pooling_in_both_sentence_transformers_formats(tmp_path):
    """Fault 7: the pooling decides late mode, so it is read from either Pooling config format."""
    (tmp_path / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (tmp_path / "1_Pooling").mkdir()
    cases = [  # sentence-transformers >= 6 writes pooling_mode; older versions one flag per mode
        ({"embedding_dimension": 8, "pooling_mode": "cls"}, "cls"),
        ({"embedding_dimension": 8, "pooling_mode": "lasttoken", "include_prompt": False}, "lasttoken"),
        ({"embedding_dimension": 8, "pooling_mode": ["mean"]}, "mean"),
        ({"embedding_dimension": 8, "pooling_mode": ["cls", "mean"]}, "cls+mean"),
        ({"pooling_mode_max_tokens": True}, "max"),
        ({"pooling_mode_weightedmean_tokens": True}, "weightedmean"),
        ({"pooling_mode_mean_sqrt_len_tokens": True}, "mean"),
        ({"pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True}, "mean"),
        ({}, "mean"),
    ]
    for cfg, pooling in cases:
        (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(cfg))
        assert ModelSettings.read(str(tmp_path)).pooling == pooling, cfg


def test_model_facts_from_the_files_equal_those_of_the_loaded_model(tmp_path):
    """Fault 6: the input limit and document frame read before loading (no torch) are the encoder's own, with and
    without a document prompt, so the window check before loading is the one after it."""
    from latechunk.encoder import Encoder
    from latechunk.models import ModelFacts
    from tests.models import minilm_encoder, save_tiny_bert

    bundled = ModelFacts.read(None)
    assert (bundled.name, bundled.input_limit, bundled.document_frame) == (DEFAULT_MODEL, 512, 2)
    assert bundled.settings == minilm_encoder().facts.settings
    assert (bundled.input_limit, bundled.document_frame) == (minilm_encoder().max_length,
                                                             minilm_encoder().tokenizer.n_frame)
    model = save_tiny_bert(tmp_path / "m")
    (model / "config_sentence_transformers.json").write_text(json.dumps({"prompts": {"document": "passage: "}}))
    tok_cfg = json.loads((model / "tokenizer_config.json").read_text())
    (model / "tokenizer_config.json").write_text(json.dumps({**tok_cfg, "model_max_length": 300}))
    facts = ModelFacts.read(str(model))
    loaded = Encoder(str(model), device="cpu").facts
    assert facts == dataclasses.replace(loaded, name=str(model), path=str(model))
    assert (facts.input_limit, facts.document_frame) == (300, 4)  # [CLS] passage : ... [SEP]
    assert facts.default_window == 256 == facts.settings.max_seq_length  # its max_seq_length, under the limit


def test_default_window_is_max_seq_length_capped_at_the_input_limit():
    """Issue 14: the default macro window is the model's sentence-transformers max_seq_length (256 for MiniLM)."""
    from latechunk.models import ModelFacts, ModelSettings, default_window

    assert ModelFacts.read(None).default_window == 256  # the bundled MiniLM: 256 of its 512 positions
    assert default_window(ModelSettings(max_seq_length=256), 512) == 256
    assert default_window(ModelSettings(max_seq_length=8192), 512) == 512
    assert default_window(ModelSettings(), 512) == 512
    assert default_window(ModelSettings(max_seq_length=0), 384) == 384
    assert ModelFacts("m", "m", ModelSettings(max_seq_length=128), input_limit=None).default_window == 128
    assert ModelFacts("m", "m", ModelSettings(), input_limit=None).default_window is None


def test_model_facts_leave_unknown_what_the_files_do_not_give(tmp_path):
    from latechunk.models import ModelFacts

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    facts = ModelFacts.read(str(tmp_path))  # no stated limit: the config class's default decides, once loaded
    assert (facts.input_limit, facts.document_frame, facts.settings) == (None, None, ModelSettings())
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "max_position_embeddings": 128}))
    facts = ModelFacts.read(str(tmp_path))  # no tokenizer.json: the frame is known once the tokenizer loads
    assert (facts.input_limit, facts.document_frame) == (128, None)
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(ValueError, match="cannot read its tokenizer"):
        ModelFacts.read(str(tmp_path))


def test_model_facts_read_imports_no_torch():
    import subprocess
    import sys

    code = ("import sys; from latechunk.models import ModelFacts; f = ModelFacts.read(None); "
            "assert (f.input_limit, f.document_frame, f.settings.pooling) == (512, 2, 'mean'), f; "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "[]", res.stdout + res.stderr


def test_config_input_limit_reads_a_config_json_as_the_loaded_config():
    from latechunk.models import config_input_limit

    model, tok, _ = minilm_parts()
    assert config_input_limit(model.config.to_dict(), tok.model_max_length) == input_limit(model, tok) == 512
    assert config_input_limit({"max_position_embeddings": 514, "pad_token_id": 1, "model_type": "roberta"}, None) == 512
    assert config_input_limit({"n_positions": 2048}, int(1e30)) == 2048  # GPT-2-style name
    assert config_input_limit({}, None) == 512
