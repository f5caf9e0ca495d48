"""Settings defined once (issue 37 §1): every config reads back from its dict form (``from_dict(to_dict())``),
``EmbedConfig.with_overrides`` replaces the options given and validates as construction does, and the settings a
real ``embed`` run recorded in run.json read back as the config that made them."""

from __future__ import annotations

import json

import pytest

from latechunk.config import (
    DEFAULT_EF_CONSTRUCTION,
    DEFAULT_EF_SEARCH,
    DEFAULT_HNSW_M,
    DEFAULT_PRECISION,
    DEFAULT_STRATEGY,
    EMBED_OPTIONS,
    EmbedConfig,
    IndexConfig,
    ModelConfig,
    PipelineConfig,
)
from latechunk.types import RecordFields


@pytest.fixture
def docs(tmp_path):
    src = tmp_path / "docs"
    src.mkdir()
    (src / "a.md").write_text("# Late chunking\n\nA document is encoded once. Its chunks are pooled from its token "
                              "states.\n\n## Spans\n\nEach chunk is a span of characters.\n", encoding="utf-8")
    (src / "b.md").write_text("# Naive chunking\n\nEach chunk is encoded on its own, without its document.\n",
                              encoding="utf-8")
    return src


def _json(d: dict) -> dict:
    return json.loads(json.dumps(d))  # what run.json holds: lists, no tuples


def _configs(docs, out):
    """A default config and non-default ones, every setting of the output off its default in one of them."""
    yield EmbedConfig(inputs=(docs,), out=out, pipeline=PipelineConfig(strategies=(DEFAULT_STRATEGY,)))
    yield EmbedConfig(
        inputs=(docs / "a.md", docs / "b.md"), out=out,
        pipeline=PipelineConfig(strategies=("fixed:size=32,overlap=4",), modes=("naive",), normalize=False,
                                include_special=True, macro_window=128, macro_window_overlap=16,
                                long_documents="skip", group_tokens=4096, late_pooling="mean"),
        model=ModelConfig(name="some/model", dtype="bf16", batch_tokens=512, trust_remote_code=True),
        index=IndexConfig.from_option("hnsw", hnsw_m=16, ef_construction=80, ef_search=40, precision="int8",
                                      truncate_dim=64),
        dedup=0.95,
        fields=RecordFields(id="doc", text="body", title="heading", metadata=("lang", "tags"),
                            encoding_errors="replace"),
    )
    yield EmbedConfig(inputs=(docs,), out=out, pipeline=PipelineConfig(strategies=("semantic",), modes=("fused",)),
                      model=ModelConfig(backend="onnx"),
                      index=IndexConfig(factory="Flat", precision="ubinary", truncate_dim=128))


def test_embed_config_reads_back_from_its_settings(docs, tmp_path):
    for cfg in _configs(docs, tmp_path / "out"):
        assert EmbedConfig.from_dict(_json(cfg.to_dict()), out=cfg.out) == cfg, cfg
        assert EmbedConfig.from_dict(_json(cfg.to_dict()), out=cfg.out).to_dict() == cfg.to_dict()


def test_inputs_read_back_relative_to_the_working_directory(docs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = EmbedConfig(inputs=("docs",), out="runs/out", pipeline=PipelineConfig(strategies=("fixed",)))
    assert cfg.to_dict()["inputs_from_out"] == ["../../docs"]
    back = EmbedConfig.from_dict(cfg.to_dict(), out="runs/out")
    assert back.inputs == (docs.relative_to(tmp_path),) and back == cfg
    # given elsewhere, the same folder is named absolutely: it must still be the input
    monkeypatch.chdir(docs)
    elsewhere = EmbedConfig.from_dict(cfg.to_dict(), out=tmp_path / "runs" / "out")
    assert elsewhere.inputs == (docs,)


def test_run_options_are_not_settings_and_are_given_apart(docs, tmp_path):
    """Device, compile, sentence workers, index gpu, force and resume never change the output, so to_dict does
    not record them: they come back with with_overrides (or from a --config file's keys)."""
    cfg = EmbedConfig(inputs=(docs,), out=tmp_path / "o", pipeline=PipelineConfig(strategies=("fixed",),
                                                                                   sentence_workers=2),
                      model=ModelConfig(device="cpu", compile=True), index=IndexConfig(gpu="off"), force=True)
    back = EmbedConfig.from_dict(cfg.to_dict(), out=cfg.out)
    assert back != cfg
    assert back.with_overrides(device="cpu", compile=True, sentence_workers=2, index_gpu="off", force=True) == cfg
    full = {**cfg.to_dict(), "model": {**cfg.to_dict()["model"], "device": "cpu", "compile": True},
            "index": {**cfg.to_dict()["index"], "gpu": "off"}, "sentence_workers": 2, "force": True,
            "inputs": [str(docs)], "out": str(cfg.out)}
    assert EmbedConfig.from_dict(full) == cfg  # a --config file can hold them


def test_a_file_of_a_few_keys_takes_the_defaults(docs, tmp_path):
    cfg = EmbedConfig.from_dict({"inputs": [str(docs)], "out": str(tmp_path / "o")})
    assert cfg == EmbedConfig(inputs=(docs,), out=tmp_path / "o", pipeline=PipelineConfig(strategies=(DEFAULT_STRATEGY,)))
    assert cfg.index == IndexConfig() and cfg.model == ModelConfig() and cfg.mode == "late"
    cfg = EmbedConfig.from_dict({"inputs": [str(docs)], "out": str(tmp_path / "o"), "strategy": "fixed:size=64",
                                 "index": {"precision": "float16"}})
    assert cfg.strategy.spec == "fixed:size=64,overlap=0" and cfg.index.faiss_factory == "SQfp16"


@pytest.mark.parametrize(("d", "named"), [
    ({"strateg": "fixed"}, "'strateg'"),
    ({"model": {"nme": "x"}}, "'nme'"),
    ({"index": {"factory": "Flat", "ef": 3}}, "'ef'"),
    ({"record_fields": {"txt": "body"}}, "'txt'"),
    ({"model": {"sha256": "ab"}}, "'sha256'"),  # a fact of a loaded model: only in a run.json's settings
])
def test_an_unknown_key_is_refused_by_name(docs, tmp_path, d, named):
    with pytest.raises(ValueError, match=f"unknown setting\\(s\\) {named}"):
        EmbedConfig.from_dict({"inputs": [str(docs)], **d}, out=tmp_path / "o")


def test_from_dict_needs_the_output_folder_and_inputs(docs, tmp_path):
    cfg = EmbedConfig(inputs=(docs,), out=tmp_path / "o", pipeline=PipelineConfig(strategies=("fixed",)))
    with pytest.raises(ValueError, match="give the output folder"):
        EmbedConfig.from_dict(cfg.to_dict())
    with pytest.raises(ValueError, match="at least one input"):
        EmbedConfig.from_dict({"out": str(tmp_path / "o")})


def test_a_recorded_settings_block_missing_a_key_is_refused_naming_it(docs, tmp_path):
    settings = EmbedConfig(inputs=(docs,), out=tmp_path / "o", pipeline=PipelineConfig(strategies=("fixed",))).to_dict()
    del settings["long_documents"]
    EmbedConfig.from_dict(settings, out=tmp_path / "o")  # a file may leave it out: the default
    with pytest.raises(ValueError, match="run.json's settings lack 'long_documents'"):
        EmbedConfig.from_dict(settings, out=tmp_path / "o", recorded=True)


def test_with_overrides_replaces_only_what_is_given(docs, tmp_path):
    base = EmbedConfig(inputs=(docs,), out=tmp_path / "o", pipeline=PipelineConfig(strategies=("fixed",)),
                       index=IndexConfig.from_option("hnsw", ef_search=64))
    assert base.with_overrides({}) is base and base.with_overrides({"mode": None, "dtype": None}) is base
    new = base.with_overrides({"strategy": "recursive", "mode": "contextual", "dtype": "fp16", "precision": "int8",
                               "text_field": "body", "dedup": 0.9, "model": "m"}, normalize=False)
    assert (new.strategy.spec, new.mode, new.model.dtype, new.model.name) == (
        "recursive:max_tokens=256,overlap=0", "contextual", "float16", "m")
    assert (new.index.factory, new.index.ef_search, new.index.precision) == (f"HNSW{DEFAULT_HNSW_M}", 64, "int8")
    assert new.fields.text == "body" and new.dedup == 0.9 and not new.pipeline.normalize
    assert new.index.renormalize is False  # follows normalize, as a config built with it
    assert base.strategy.spec == "fixed:size=256,overlap=0"  # frozen: a new config
    assert base.with_overrides(index="hnsw", hnsw_m=8).index.factory == "HNSW8"
    assert base.with_overrides(index="IVF16,Flat").index.ef_search == 64  # the other index settings kept


@pytest.mark.parametrize(("given", "error"), [
    ({"mode": "slow"}, "mode must be"),
    ({"precision": "int4"}, "--precision must be one of"),
    ({"batch_tokens": 0}, "batch_tokens"),
    ({"dedup": 1.5}, "dedup"),
    ({"inputs": ["nowhere"]}, "nowhere"),
    ({"force": True, "resume": True}, "exclude each other"),
    ({"hnsw_m": 8}, "hnsw_m .* sets M of index 'hnsw'"),
    ({"index": "HNSW16", "hnsw_m": 8}, "sets M of index 'hnsw'"),
    ({"strategies": "fixed"}, "unknown setting\\(s\\) 'strategies'"),
])
def test_with_overrides_validates_as_construction_does(docs, tmp_path, given, error):
    base = EmbedConfig(inputs=(docs,), out=tmp_path / "o", pipeline=PipelineConfig(strategies=("fixed",)))
    with pytest.raises(ValueError, match=error):
        base.with_overrides(given)


def test_option_defaults_are_the_config_classes_defaults(docs, tmp_path):
    d = EmbedConfig.option_defaults()
    assert set(d) == set(EMBED_OPTIONS) - {"inputs", "out"}
    assert (d["hnsw_m"], d["ef_construction"], d["ef_search"], d["precision"], d["index"]) == (
        DEFAULT_HNSW_M, DEFAULT_EF_CONSTRUCTION, DEFAULT_EF_SEARCH, DEFAULT_PRECISION, "flat")
    assert (DEFAULT_HNSW_M, DEFAULT_EF_CONSTRUCTION, DEFAULT_EF_SEARCH, DEFAULT_PRECISION) == (32, 200, 128, "float32")
    # every option at its default gives the default config (hnsw_m only with index "hnsw": given alone it would
    # do nothing, which with_overrides refuses as the command line does)
    base = EmbedConfig(inputs=(docs,), out=tmp_path / "o", pipeline=PipelineConfig(strategies=(DEFAULT_STRATEGY,)))
    assert base.with_overrides({k: v for k, v in d.items() if k != "hnsw_m"}) == base
    assert base.with_overrides({**d, "index": "hnsw"}).index == IndexConfig(factory=f"HNSW{DEFAULT_HNSW_M}")


def test_nested_configs_read_back_from_their_dicts():
    for m in (ModelConfig(), ModelConfig(name="x", device="cuda:1", dtype="bf16", batch_tokens=64,
                                         trust_remote_code=True, compile=True), ModelConfig(backend="onnx-int8")):
        assert ModelConfig.from_dict(_json(m.to_dict())) == m
    for p in (PipelineConfig(strategies=("fixed",)),
              PipelineConfig(strategies=("fixed:size=8", "semantic:source=late"), modes=("late", "naive", "fused"),
                             normalize=False, include_special=True, macro_window=64, macro_window_overlap=8,
                             long_documents="skip", group_tokens=99, sentence_workers=3, late_pooling="mean")):
        assert PipelineConfig.from_dict(_json(p.to_dict())) == p
    for i in (IndexConfig(), IndexConfig.from_option("hnsw", hnsw_m=24, ef_construction=50, ef_search=10),
              IndexConfig(factory="IVF64,Flat", precision="int8"),
              IndexConfig(precision="ubinary", truncate_dim=256, renormalize=False)):
        assert IndexConfig.from_dict(_json(i.to_dict())) == i
    with pytest.raises(ValueError, match="unknown setting\\(s\\) 'devise'"):
        ModelConfig.from_dict({"devise": "cpu"})
    with pytest.raises(ValueError, match="unknown setting\\(s\\) 'mode'"):
        PipelineConfig.from_dict({"strategies": ["fixed"], "mode": "late"})
    with pytest.raises(ValueError, match="need 'strategies'"):
        PipelineConfig.from_dict({"modes": ["late"]})
    # a manifest's index record: its other keys (ntotal, file, nlist ...) are not settings, read past as before
    assert IndexConfig.from_dict({"factory": "Flat", "metric": "ip", "ntotal": 3, "file": "index.faiss"}) == IndexConfig()


def test_a_real_runs_settings_read_back_as_the_config_that_made_it(docs, tmp_path):
    """embed writes run.json's settings (config.to_dict() with the loaded model's facts); read back with
    recorded=True they give the run's config, with the model's name and dtype as the encoder resolved them, and
    the same config Index.add built from them (ingest.append.config_from_settings)."""
    from latechunk.ingest import ingest
    from latechunk.ingest.append import config_from_settings
    from latechunk.output import OutputFolder
    from tests.models import minilm_encoder

    out = tmp_path / "out"
    cfg = EmbedConfig(
        inputs=(docs,), out=out,
        pipeline=PipelineConfig(strategies=("fixed:size=24,overlap=4",), include_special=True, macro_window=128,
                                group_tokens=2048),
        index=IndexConfig.from_option("hnsw", hnsw_m=8, ef_search=16, precision="float16", truncate_dim=96),
        dedup=0.99,
    )
    encoder = minilm_encoder()
    ingest(cfg, encoder)
    settings = OutputFolder(out).read_run()["settings"]
    assert {"sha256", "dim", "window", "pooling"} <= set(settings["model"])  # the facts recorded beside
    back = EmbedConfig.from_dict(settings, out=out, recorded=True)
    resolved = {"name": settings["model"]["name"], "dtype": settings["model"]["dtype"]}
    assert resolved["name"] and resolved["dtype"] in ("float32", "bfloat16")
    assert back == cfg.with_overrides(model=resolved["name"], dtype=resolved["dtype"])
    assert back.model.batch_tokens is None  # the budget that run used is not a setting
    assert back.to_dict() == {**cfg.to_dict(), "model": {**cfg.to_dict()["model"], **resolved}}
    assert back == config_from_settings(settings, [docs], out)
