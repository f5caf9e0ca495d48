"""One definition of each default (issue 37 §1): every command's option defaults, read from the click command
objects (its default, or the value its help's ``[default: X]`` names, parsed by the option's own type), equal the
defaults of the config class the command builds (EmbedConfig.option_defaults(), CompareConfig, TrainConfig,
IndexConfig, RecordFields) or of the function it calls; an option with a literal default that no config holds is
named in OWN and checked to be the only ones."""

from __future__ import annotations

import inspect
import re
import typing
from pathlib import Path

import pytest
import typer

from latechunk.cli import app
from latechunk.config import (
    DEFAULT_EF_CONSTRUCTION,
    DEFAULT_EF_SEARCH,
    DEFAULT_HNSW_M,
    EmbedConfig,
    IndexConfig,
    ModelConfig,
    RecordFields,
)

COMMANDS = typer.main.get_command(app).commands
_SHOWN = re.compile(r"\[default: ([^\]]+)\]\s*$")

#: options whose literal default is the command's own, not a setting any config holds
OWN = {
    "embed": {"engine"},  # local or ray: how the run is executed
}


class Described(str):
    """A default the help describes in words, not a value of the option's type."""


def _shown(param) -> str | None:
    """The ``X`` of ``[default: X]`` at the end of a parameter's help, or None."""
    m = _SHOWN.search(" ".join((getattr(param, "help", None) or "").split()))
    return m.group(1) if m else None


def _python_type(command: str, name: str):
    """The Python type of a command's parameter (``Annotated[Optional[int], ...]`` -> ``int``)."""
    hint = inspect.signature(COMMANDS[command].callback, eval_str=True).parameters[name].annotation
    hint = typing.get_args(hint)[0] if typing.get_origin(hint) is typing.Annotated else hint
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if typing.get_origin(hint) is typing.Union or type(hint).__name__ == "UnionType" else hint


def _value(command: str, param):
    """The default a parameter gives: its own, else its help's ``[default: X]`` read as the option's type reads a
    value (a flag pair by its name: ``no-include-special`` -> False); ``...`` when it names none."""
    if param.default is not None:
        return param.default
    shown = _shown(param)
    if shown is None:
        return ...
    if param.secondary_opts:
        assert f"--{shown}" in (*param.opts, *param.secondary_opts), (command, param.name, shown)
        return f"--{shown}" in param.opts
    if param.name == "metadata_fields":  # NAMES|all, comma-separated
        from latechunk.cli.options import _metadata_fields

        return _metadata_fields("" if shown == "none" else shown)
    kind = _python_type(command, param.name)
    try:
        return kind(shown) if kind in (int, float, Path) else shown
    except ValueError:  # a default described in words ("4096 on the CPU, 16384 on a GPU"): checked by name
        return Described(shown)


def _defaults(command: str) -> dict:
    """``{parameter name: default}`` of every parameter that has one (its own or its help's)."""
    values = {p.name: _value(command, p) for p in COMMANDS[command].params if not p.name.startswith("old_")}
    return {k: v for k, v in values.items() if v is not ...}


def test_embed_option_defaults_are_embed_configs():
    expected = EmbedConfig.option_defaults()
    shown = _defaults("embed")
    checked = {k for k in shown if k in expected and not isinstance(shown[k], Described)}
    for name in checked:
        assert shown[name] == expected[name], (name, shown[name], expected[name])
    # every option that has a fixed default shows it (sentence_workers' default depends on the CPU cores, and the
    # index's gpu is not an embed option); a default that names the device's budget names the encoder's numbers
    fixed = {k for k, v in expected.items() if v is not None and k not in ("sentence_workers", "index_gpu")}
    assert fixed <= checked, sorted(fixed - checked)
    # the budget's help is text (the encoder's constants live beside torch, which --help does not import)
    from latechunk.encoder.batching import CPU_BATCH_TOKENS, GPU_BATCH_TOKENS

    batch = _shown(next(p for p in COMMANDS["embed"].params if p.name == "batch_tokens"))
    assert batch == f"{CPU_BATCH_TOKENS} on the CPU, {GPU_BATCH_TOKENS} on a GPU"


def test_compare_option_defaults_are_compare_configs():
    """Each default compare shows, given as its option, builds the same CompareConfig as leaving it out."""
    from latechunk.eval.config import CompareConfig

    keyword = {"resamples": "n_resamples", "dedup_overlap": "dedup"}
    base = CompareConfig.from_options(dataset="chroma")
    run_options = {"quiet", "force"}  # how compare runs and writes its report, not settings of the comparison
    shown = {k: v for k, v in _defaults("compare").items() if k not in run_options}
    assert {"modes", "k", "index", "precision", "doc_depth", "resamples", "seed", "backend"} <= set(shown)
    for name, value in shown.items():
        if name == "no_cache":
            assert value is False and base.use_cache is True
            continue
        kw = keyword.get(name, name)
        with_default = CompareConfig.from_options(dataset="chroma", **{kw: value})
        assert with_default == base, (name, value)


def test_train_option_defaults_are_train_configs():
    from latechunk.train import TrainConfig, train
    from latechunk.train.config import DEFAULT_TRAIN_STRATEGY

    shown = _defaults("train")
    base = TrainConfig(out="m", dataset="chroma")
    run_options = {"checkpoint_every", "resume", "quiet"}
    for name, value in shown.items():
        if name in run_options:
            assert value == inspect.signature(train).parameters[name].default if name != "quiet" else value is False
            continue
        assert TrainConfig(out="m", dataset="chroma", **{name: value}) == base, (name, value)
    assert shown["strategy"] == DEFAULT_TRAIN_STRATEGY and shown["dtype"] == base.dtype


def test_index_defaults_in_reindex_and_embed_help():
    params = {p.name: p for p in COMMANDS["reindex"].params}
    assert params["gpu"].default == IndexConfig().gpu
    assert f"({DEFAULT_HNSW_M} when not given" in params["hnsw_m"].help
    assert f"({DEFAULT_EF_CONSTRUCTION} for a folder without HNSW)" in params["ef_construction"].help
    assert f"({DEFAULT_EF_SEARCH} for a folder without HNSW)" in params["ef_search"].help
    embed = _defaults("embed")
    assert (embed["hnsw_m"], embed["ef_construction"], embed["ef_search"]) == (
        DEFAULT_HNSW_M, DEFAULT_EF_CONSTRUCTION, DEFAULT_EF_SEARCH)


def test_chunk_search_export_agree_defaults_are_their_functions():
    from latechunk.agree import DEFAULT_TOLERANCE
    from latechunk.api_index import Index
    from latechunk.config import DEFAULT_STRATEGY
    from latechunk.export import export_folder

    chunk = _defaults("chunk")
    fields = RecordFields()
    assert chunk["strategy"] == DEFAULT_STRATEGY
    assert (chunk["text_field"], chunk["title_field"], chunk["encoding_errors"], chunk["metadata_fields"]) == (
        fields.text, fields.title, fields.encoding_errors, fields.metadata)
    assert _defaults("search")["k"] == inspect.signature(Index.search).parameters["k"].default
    export, signature = _defaults("export"), inspect.signature(export_folder).parameters
    assert (export["collection"], export["batch_size"]) == (signature["collection"].default,
                                                             signature["batch_size"].default)
    from latechunk.cli.commands import export as export_command
    from latechunk.export.chroma import DEFAULT_HNSW

    assert export_command.DEFAULT_HNSW == DEFAULT_HNSW  # what --hnsw-m, --hnsw-ef, --hnsw-ef-construction say
    tolerance = next(p for p in COMMANDS["agree"].params if p.name == "tolerance")
    assert f"Default: {DEFAULT_TOLERANCE}." in tolerance.help


def test_every_device_default_is_model_configs():
    for name, command in COMMANDS.items():
        for p in command.params:
            if p.name == "device":
                assert p.default == ModelConfig().device, name


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_option_has_a_literal_default_no_config_holds(command):
    """Every literal default (not None, not an off flag) is one the tests above check, or named in OWN."""
    checked = {
        "embed": set(EmbedConfig.option_defaults()),
        "compare": {"device"},
        "train": {p.name for p in COMMANDS["train"].params},
        "reindex": {"gpu"},
        "search": {"k", "device"},
        "chunk": {"strategy", "device"},
        "export": {"collection", "batch_size"},
        "agree": {"device"},
    }.get(command, set())
    literal = {p.name for p in COMMANDS[command].params if p.default not in (None, False) and not p.hidden}
    assert literal <= checked | OWN.get(command, set()), sorted(literal - checked - OWN.get(command, set()))
