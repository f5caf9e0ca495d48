"""eval/config.py (installed as latechunk.eval.config): CompareConfig, the one validated value of a `latechunk
compare` run, built from command-line options or a results.json dict."""

from __future__ import annotations

import json

import pytest

from latechunk.eval.config import CompareConfig


def test_config_validation():
    with pytest.raises(ValueError, match="modes"):
        CompareConfig(dataset="x", modes=("late", "fast"))
    with pytest.raises(ValueError, match="k values"):
        CompareConfig(dataset="x", ks=(0,))
    with pytest.raises(ValueError, match=r"modes repeat: late given more than once in \['late', 'late'\]"):
        CompareConfig(dataset="x", modes=("late", "late"))  # said "must be a non-empty subset", not the repeat
    with pytest.raises(ValueError, match="non-empty subset"):
        CompareConfig(dataset="x", modes=("late", "late", "fast"))  # an unknown mode is named first
    with pytest.raises(ValueError, match=r"--index IVF4,Flat: compare indexes every system alike"):
        CompareConfig(dataset="x", index="IVF4,Flat")  # was accepted: 4 lists trained on each system's vectors
    assert CompareConfig(dataset="x", index="HNSW16").index_spec().factory == "HNSW16"
    for bad, why in (("IDMap,Flat", "an ID map is not needed"), ("bogus", "bogus")):  # refused before any encoding
        with pytest.raises(ValueError, match=why):
            CompareConfig(dataset="x", index=bad)
    assert CompareConfig(dataset="x", index="PQ48").index_spec().factory == "PQ48"  # fits 384 and 768
    with pytest.raises(ValueError, match="window sweep"):
        CompareConfig(dataset="x", modes=("naive",), windows=(128, 256))
    with pytest.raises(ValueError, match="unknown strategy"):
        CompareConfig(dataset="x", strategies=("nope",))
    cfg = CompareConfig.from_options(dataset="x", strategies=["fixed:size=8|16"], modes="late", k="1,5", window="128|256")
    assert cfg.ks == (1, 5) and cfg.windows == (128, 256) and cfg.specs() == [
        "fixed:size=8,overlap=0", "fixed:size=16,overlap=0"]
    assert CompareConfig.from_dict(cfg.to_dict()) == cfg


def test_config_round_trips_through_json():
    cfg = CompareConfig.from_options(dataset="x", strategies=["fixed:size=8", "recursive"], modes="late,naive",
                                     k="1,3", window="128")
    d = json.loads(json.dumps(cfg.to_dict()))
    assert CompareConfig.from_dict(d) == cfg and CompareConfig.from_dict({**d, "unknown": 1}) == cfg
    assert cfg.index_spec().factory == "Flat"


def test_sentence_workers_below_0_names_the_option():
    """Issue 10: the message named the field only (`sentence_workers must be >= 0`), not `--sentence-workers`."""
    with pytest.raises(ValueError, match="--sentence-workers"):
        CompareConfig(dataset="chroma", sentence_workers=-1)


@pytest.mark.parametrize("option, value", [("k", "1,,5"), ("macro_window", "128|"), ("modes", "late,"),
                                           ("macro_window_overlap", "|0")])
def test_an_empty_list_value_is_refused_naming_the_option(option, value):
    """`--k 1,,5` and `--window '128|'` were read as `1,5` and `128`; `fixed:size=64,,overlap=2` was already
    refused, so the list options now are too."""
    kwargs = {"dataset": "x", "strategies": ["fixed"], "modes": "late", "k": "1,5", option: value}
    with pytest.raises(ValueError, match=f"--{option.replace('_', '-')} '.*': an empty value"):
        CompareConfig.from_options(**kwargs)
