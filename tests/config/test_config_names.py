"""One name, one meaning (issue 37 §4): the renamed settings (latechunk.config.names.RENAMED) keep working for one
release under their old names, each with a DeprecationWarning naming the new one; the new names give the same
config without a warning. And compare and train compose the configs embed runs with (issue 37 §1)."""

from __future__ import annotations

import dataclasses
import json
import warnings

import pytest

from latechunk.config import (
    DEFAULT_EF_CONSTRUCTION,
    DEFAULT_EF_SEARCH,
    DEFAULT_HNSW_M,
    DEFAULT_PRECISION,
    DEFAULT_STRATEGY,
    IndexConfig,
    ModelConfig,
    PipelineConfig,
)
from latechunk.config.names import RENAMED
from latechunk.eval.config import CompareConfig
from latechunk.train import DEFAULT_TRAIN_STRATEGY, DTYPES, TrainConfig


def _no_warning(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        return fn(*args, **kwargs)


def test_train_precision_is_dtype_now():
    new = _no_warning(TrainConfig, out="m", dataset="xquad", dtype="float32")
    with pytest.warns(DeprecationWarning, match=r"TrainConfig\(precision=\) is deprecated: .*TrainConfig\(dtype=\)"):
        old = TrainConfig(out="m", dataset="xquad", precision="float32")
    assert old == new and new.dtype == "float32" and new.precision == "float32"
    assert TrainConfig(out="m", dataset="xquad").dtype == "auto"
    with pytest.raises(TypeError, match="both precision= and dtype="), pytest.warns(DeprecationWarning):
        TrainConfig(out="m", dataset="xquad", precision="float32", dtype="bfloat16")
    with pytest.raises(ValueError, match="--dtype must be one of auto, float32, bfloat16"):
        TrainConfig(out="m", dataset="xquad", dtype="float16")
    # latechunk_train.json keeps its key (a checkpoint's --resume compares it)
    assert new.to_dict()["precision"] == "float32" and "dtype" not in new.to_dict()


def test_train_window_overlap_is_macro_window_overlap_now():
    new = _no_warning(TrainConfig, out="m", dataset="xquad", macro_window=64, macro_window_overlap=8)
    with pytest.warns(DeprecationWarning, match=r"TrainConfig\(window_overlap=\).*macro_window_overlap"):
        old = TrainConfig(out="m", dataset="xquad", macro_window=64, window_overlap=8)
    assert old == new and new.window_overlap == 8
    assert new.to_dict()["window_overlap"] == 8


def test_train_constants_old_names():
    import latechunk.train.config as train_config
    from latechunk import train

    assert DTYPES == ("auto", "float32", "bfloat16") and DEFAULT_TRAIN_STRATEGY == "fixed:size=64"
    assert DEFAULT_TRAIN_STRATEGY != DEFAULT_STRATEGY  # two settings: what train trains on, what embed cuts
    for module in (train, train_config):
        with pytest.warns(DeprecationWarning, match=r"latechunk.train.PRECISIONS is deprecated.*DTYPES"):
            assert module.PRECISIONS == DTYPES
        with pytest.warns(DeprecationWarning, match=r"DEFAULT_STRATEGY is deprecated.*DEFAULT_TRAIN_STRATEGY"):
            assert module.DEFAULT_STRATEGY == DEFAULT_TRAIN_STRATEGY
    with pytest.raises(AttributeError):
        train.NO_SUCH_NAME  # noqa: B018
    _no_warning(exec, "from latechunk.train import *", {})  # __all__ holds only the new names


def test_train_takes_its_model_settings_from_model_config():
    cfg = TrainConfig(out="m", dataset="xquad", model="some/model", device="cpu", trust_remote_code=True)
    assert cfg.model_config == ModelConfig(name="some/model", device="cpu", trust_remote_code=True)
    assert (cfg.model, cfg.device, cfg.trust_remote_code) == ("some/model", "cpu", True)
    same = TrainConfig(out="m", dataset="xquad", model_config=ModelConfig(name="some/model", device="cpu",
                                                                          trust_remote_code=True))
    assert same == cfg
    assert TrainConfig(out="m", dataset="xquad", model_config=cfg.model_config, device="cuda:1").device == "cuda:1"
    with pytest.raises(ValueError, match="device must be auto, cpu, cuda or cuda:N"):
        TrainConfig(out="m", dataset="xquad", device="gpu0")
    assert dataclasses.replace(cfg, epochs=3).model_config == cfg.model_config  # replace keeps the model
    assert list(cfg.to_dict())[:5] == ["out", "dataset", "ict", "model", "strategy"]  # the file's keys, flat
    assert cfg.to_dict()["device"] == "cpu" and cfg.to_dict()["trust_remote_code"] is True


def test_compare_windows_are_macro_windows_now():
    new = _no_warning(CompareConfig, dataset="x", modes=("late",), macro_windows=(128, 256),
                      macro_window_overlaps=(0, 16))
    with pytest.warns(DeprecationWarning, match=r"CompareConfig\(windows=\).*macro_windows"):
        old = CompareConfig(dataset="x", modes=("late",), windows=(128, 256), macro_window_overlaps=(0, 16))
    assert old == new
    with pytest.warns(DeprecationWarning, match=r"CompareConfig\(window_overlap=\).*macro_window_overlaps"):
        assert CompareConfig(dataset="x", window_overlap=16).macro_window_overlaps == (16,)
    assert new.windows == (128, 256) and new.window_overlap == (0, 16)  # read under the old names too
    with pytest.raises(TypeError, match="both windows= and macro_windows="), pytest.warns(DeprecationWarning):
        CompareConfig(dataset="x", windows=(128,), macro_windows=(256,))
    opts = _no_warning(CompareConfig.from_options, dataset="x", modes="late", macro_window="128|256",
                       macro_window_overlap="0|16")
    with pytest.warns(DeprecationWarning, match=r"from_options\(window=\).*from_options\(macro_window=\)"):
        assert CompareConfig.from_options(dataset="x", modes="late", window="128|256",
                                          macro_window_overlap="0|16") == opts == new
    # results.json keeps its keys, and reads back (an old one too) without a warning
    d = new.to_dict()
    assert d["windows"] == [128, 256] and d["window_overlap"] == [0, 16] and "macro_windows" not in d
    assert _no_warning(CompareConfig.from_dict, json.loads(json.dumps(d))) == new


def test_compare_composes_the_configs_embed_runs_with():
    cfg = CompareConfig.from_options(dataset="x", strategies=["fixed:size=8|16"], modes="late,naive", model="m",
                                     device="cpu", dtype="bf16", batch_tokens=64, include_special=True,
                                     sentence_workers=2, late_pooling="mean", index="hnsw", hnsw_m=16, ef_search=40)
    assert cfg.model_config == ModelConfig(name="m", device="cpu", dtype="bfloat16", batch_tokens=64)
    assert cfg.pipeline_config == PipelineConfig(strategies=("fixed:size=8", "fixed:size=16"), modes=("late", "naive"),
                                                 include_special=True, sentence_workers=2, late_pooling="mean")
    assert cfg.index_config == IndexConfig(factory="HNSW16", ef_search=40, gpu="off") == cfg.index_spec()
    assert (cfg.model, cfg.dtype, cfg.modes, cfg.sentence_workers, cfg.ef_search, cfg.index_gpu) == (
        "m", "bfloat16", ("late", "naive"), 2, 40, "off")
    with pytest.raises(AttributeError):
        cfg.model = "other"  # read-only
    # the index defaults are embed's, defined once
    plain = CompareConfig(dataset="x")
    assert (plain.hnsw_m, plain.ef_construction, plain.ef_search, plain.precision) == (
        DEFAULT_HNSW_M, DEFAULT_EF_CONSTRUCTION, DEFAULT_EF_SEARCH, (DEFAULT_PRECISION,))
    # built over given configs (dataclasses.replace does that), flat settings replacing their fields
    assert dataclasses.replace(cfg, ks=(1, 3)).model_config == cfg.model_config
    over = CompareConfig(dataset="x", model_config=cfg.model_config, device="cuda")
    assert over.model_config == dataclasses.replace(cfg.model_config, device="cuda")
    with pytest.raises(TypeError, match="unexpected keyword argument 'windw'"):
        CompareConfig(dataset="x", windw=(128,))
    with pytest.raises(ValueError, match="device must be"):  # the model config's own check
        CompareConfig(dataset="x", device="gpu")


def test_every_rename_is_listed():
    assert {"TrainConfig.precision", "TrainConfig.window_overlap", "latechunk.train.PRECISIONS",
            "latechunk.train.DEFAULT_STRATEGY", "CompareConfig.windows", "CompareConfig.window_overlap"} <= set(RENAMED)
    assert all(old != new for old, new in RENAMED.items())
