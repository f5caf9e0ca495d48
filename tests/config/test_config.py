"""latechunk/config/: ModelConfig, PipelineConfig, IndexConfig and EmbedConfig are frozen and validated once
(one test per error), ``to_dict()`` round trips, and every check of a setting lives in its config: the command
line reports exactly the config's message, before any work."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.config import (
    DEFAULT_GROUP_TOKENS,
    EmbedConfig,
    IndexConfig,
    ModelConfig,
    PipelineConfig,
    split_specs,
)
from latechunk.strategies import get_strategy
from latechunk.strategies.fixed import Fixed

runner = CliRunner()


def _error(factory) -> str:
    with pytest.raises(ValueError) as err:
        factory()
    return str(err.value)


# --------------------------------------------------------------------------- ModelConfig
def test_model_config_defaults():
    m = ModelConfig()
    assert (m.name, m.device, m.dtype, m.batch_tokens, m.trust_remote_code) == (None, "auto", None, None, False)
    assert not m.compile and ModelConfig(batch_tokens=2048).batch_tokens == 2048
    with pytest.raises(ValueError, match=r"batch_tokens \(--batch-tokens\) must be an integer >= 1, got 0"):
        ModelConfig(batch_tokens=0)
    for device in ("auto", "cpu", "mps", "cuda", "cuda:1"):
        assert ModelConfig(device=device).device == device
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.device = "cpu"


def test_model_config_rejects_an_unknown_device():
    assert "device must be auto, cpu, cuda or cuda:N, got 'gpu'" in _error(lambda: ModelConfig(device="gpu"))


def test_model_config_rejects_an_unknown_dtype():
    assert "dtype must be float32, bfloat16 or float16" in _error(lambda: ModelConfig(dtype="int8"))


@pytest.mark.parametrize("value", [0, -5, True, 2.0])
def test_model_config_rejects_a_bad_batch_budget(value):
    assert "batch_tokens (--batch-tokens) must be an integer >= 1" in _error(lambda: ModelConfig(batch_tokens=value))


# --------------------------------------------------------------------------- PipelineConfig
def test_pipeline_config_parses_specs_once_and_keeps_their_order():
    p = PipelineConfig(("recursive:max_tokens=64", Fixed(size=8)), modes="naive")
    assert p.strategies == (get_strategy("recursive:max_tokens=64"), Fixed(size=8)) and p.modes == ("naive",)
    assert p.specs == ["recursive:max_tokens=64,overlap=0", "fixed:size=8,overlap=0"]
    assert PipelineConfig("fixed").strategies == (Fixed(),)  # one SPEC string is one strategy
    assert p.group_tokens == DEFAULT_GROUP_TOKENS and p.normalize and not p.include_special


def test_pipeline_config_knows_when_a_late_pass_is_needed():
    assert PipelineConfig(("fixed",)).needs_token_states
    assert not PipelineConfig(("fixed",), modes=("naive",)).needs_token_states
    assert PipelineConfig(("semantic",), modes=("naive",)).needs_token_states  # late sentence vectors
    assert not PipelineConfig(("semantic:source=some/model",), modes=("naive",)).needs_token_states


def test_pipeline_config_needs_a_strategy():
    assert "give at least one strategy" in _error(lambda: PipelineConfig(()))


def test_pipeline_config_rejects_an_unknown_strategy():
    assert "nope" in _error(lambda: PipelineConfig(("nope",)))


def test_pipeline_config_rejects_a_strategy_given_twice():
    # two spellings of one strategy (LangChain's alias and ours)
    assert "the same strategy was given twice" in _error(lambda: PipelineConfig(("fixed:size=4", "fixed:chunk_size=4")))


def test_pipeline_config_needs_a_mode():
    assert "give at least one mode" in _error(lambda: PipelineConfig(("fixed",), modes=()))


def test_pipeline_config_rejects_a_bad_mode():
    assert "mode must be 'late', 'naive', 'contextual' or 'fused', got 'early'" in _error(lambda: PipelineConfig(("fixed",), modes=("early",)))


def test_pipeline_config_rejects_a_mode_given_twice():
    assert "a mode is given twice" in _error(lambda: PipelineConfig(("fixed",), modes=("late", "late")))


@pytest.mark.parametrize("field, value, minimum", [
    ("macro_window", 0, 1),
    ("macro_window_overlap", -1, 0),
    ("group_tokens", 0, 1),
    ("sentence_workers", -1, 0),
])
def test_pipeline_config_rejects_an_out_of_range_count(field, value, minimum):
    message = _error(lambda: PipelineConfig(("fixed",), **{field: value}))
    assert f"{field} must be an integer >= {minimum}, got {value}" in message


def test_pipeline_config_rejects_an_unknown_long_document_policy():
    assert "long_documents must be 'windows' or 'skip'" in _error(
        lambda: PipelineConfig(("fixed",), long_documents="truncate"))


def test_pipeline_config_to_dict_round_trips():
    p = PipelineConfig(("fixed:size=8,overlap=2", "semantic"), modes=("late", "naive"), normalize=False,
                       include_special=True, macro_window=256, macro_window_overlap=16, long_documents="skip",
                       group_tokens=4096, sentence_workers=2)
    d = p.to_dict()
    assert json.loads(json.dumps(d)) == d  # JSON-ready
    assert d["strategies"] == p.specs and d["modes"] == ["late", "naive"]
    assert PipelineConfig(**d) == p


# --------------------------------------------------------------------------- IndexConfig
def test_index_config_aliases_and_factory_strings():
    assert IndexConfig.from_option("flat").factory == "Flat"
    assert IndexConfig.from_option(" FLAT ").factory == "Flat"
    assert IndexConfig.from_option("hnsw").factory == "HNSW32"
    assert IndexConfig.from_option("HNSW", hnsw_m=16).factory == "HNSW16"
    assert IndexConfig.from_option("IVF64,Flat").factory == "IVF64,Flat"  # any other string is passed on
    hnsw = IndexConfig.from_option("hnsw", ef_construction=40, ef_search=16)
    assert hnsw.is_hnsw and hnsw.to_dict() == {"factory": "HNSW32", "metric": "ip", "ef_construction": 40,
                                               "ef_search": 16}
    assert not IndexConfig().is_hnsw and IndexConfig().to_dict() == {"factory": "Flat", "metric": "ip"}


def test_index_config_rejects_an_empty_factory_string():
    assert "index factory string is empty" in _error(lambda: IndexConfig(factory="  "))


def test_index_config_rejects_a_tiny_hnsw_m():
    assert "hnsw_m must be an integer >= 2" in _error(lambda: IndexConfig.from_option("hnsw", hnsw_m=1))


@pytest.mark.parametrize("field", ["ef_construction", "ef_search"])
def test_index_config_rejects_a_bad_beam_width(field):
    assert f"{field} must be an integer >= 1" in _error(lambda: IndexConfig(**{field: 0}))


def test_index_config_rejects_an_unknown_gpu_setting():
    assert "gpu must be auto, on or off" in _error(lambda: IndexConfig(gpu="yes"))


# --------------------------------------------------------------------------- EmbedConfig
@pytest.fixture
def doc(tmp_path) -> Path:
    f = tmp_path / "a.md"
    f.write_text("Rivers flow to the sea.", encoding="utf-8")
    return f


def _embed(doc, **kwargs) -> EmbedConfig:
    kwargs.setdefault("out", doc.parent / "out")
    kwargs.setdefault("pipeline", PipelineConfig(("fixed:size=8",)))
    return EmbedConfig(inputs=kwargs.pop("inputs", (doc,)), **kwargs)


def test_embed_config_takes_paths_and_names_its_one_strategy_and_mode(doc):
    c = _embed(doc, inputs=str(doc), out=str(doc.parent / "o"))
    assert c.inputs == (doc,) and c.out == doc.parent / "o"
    assert c.strategy == Fixed(size=8) and c.mode == "late"
    assert c.model == ModelConfig() and c.index == IndexConfig()


def test_embed_config_needs_an_input(doc):
    assert "give at least one input path" in _error(lambda: _embed(doc, inputs=()))


def test_embed_config_rejects_a_missing_input(doc):
    assert "input path(s) not found" in _error(lambda: _embed(doc, inputs=(doc, doc.parent / "nope.md")))


def test_embed_config_rejects_an_out_that_is_a_file(doc):
    assert "exists and is not a folder" in _error(lambda: _embed(doc, out=doc))


def test_embed_config_rejects_force_with_resume(doc):
    assert "exclude each other" in _error(lambda: _embed(doc, force=True, resume=True))


def test_embed_config_takes_exactly_one_strategy(doc):
    assert "exactly one strategy" in _error(lambda: _embed(doc, pipeline=PipelineConfig(("fixed", "recursive"))))


def test_embed_config_takes_exactly_one_mode(doc):
    assert "exactly one mode" in _error(lambda: _embed(doc, pipeline=PipelineConfig(("fixed",), ("late", "naive"))))


def test_embed_config_to_dict_round_trips(doc):
    c = _embed(doc, model=ModelConfig(name="some/model", device="cpu", dtype="float16", batch_tokens=512),
               index=IndexConfig.from_option("hnsw", hnsw_m=8), force=True,
               pipeline=PipelineConfig(("heading:max_tokens=64",), modes=("naive",), macro_window=128))
    d = c.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["inputs_from_out"] == ["../a.md"]  # relative to the output folder, never absolute
    assert d["strategy"] == c.strategy.spec and d["mode"] == "naive" and d["index"]["factory"] == "HNSW8"
    assert "device" not in d["model"] and "force" not in d and "sentence_workers" not in d  # not settings
    # the settings rebuild an equal run
    again = EmbedConfig(
        inputs=tuple(Path(os.path.normpath(c.out.resolve() / p)) for p in d["inputs_from_out"]), out=c.out,
        model=ModelConfig(**d["model"]),
        index=IndexConfig(factory=d["index"]["factory"], ef_construction=d["index"]["ef_construction"],
                          ef_search=d["index"]["ef_search"]),
        pipeline=PipelineConfig(strategies=(d["strategy"],), modes=(d["mode"],), normalize=d["normalize"],
                                include_special=d["include_special"], macro_window=d["macro_window"],
                                macro_window_overlap=d["macro_window_overlap"],
                                long_documents=d["long_documents"], group_tokens=d["group_tokens"]))
    assert again.to_dict() == d


def test_the_backend_is_a_setting_so_append_and_resume_refuse_another(doc):
    """Trial of issue 15: `embed --append --backend torch` on an onnx folder mixed backends without a word."""
    from latechunk.ingest.append import append_settings_diff

    torch_d = _embed(doc).to_dict()
    onnx_d = _embed(doc, model=ModelConfig(backend="onnx")).to_dict()
    assert "backend" not in torch_d["model"]  # torch folders written before backends existed still resume
    assert onnx_d["model"]["backend"] == "onnx" and ModelConfig(**onnx_d["model"]).backend == "onnx"
    diff = append_settings_diff(onnx_d, torch_d)
    assert diff and any("backend" in line for line in diff), diff
    assert append_settings_diff(onnx_d, _embed(doc, model=ModelConfig(backend="onnx")).to_dict()) == []


def test_a_torch_folder_refusing_an_onnx_append_names_torch_and_what_to_do(doc, tmp_path):
    """Fresh-user trial: `--append --backend onnx` on a torch folder said "model.backend was None" and ended
    "Append with the folder's settings"; a folder without the key ran torch, and the message says what to do."""
    from latechunk.ingest.append import append_settings_diff, check_append_options

    torch_d, onnx_d = _embed(doc).to_dict(), _embed(doc, model=ModelConfig(backend="onnx")).to_dict()
    diff = append_settings_diff(torch_d, onnx_d)
    assert diff == ["model.backend (--backend) was 'torch', now 'onnx'"], diff
    assert append_settings_diff(torch_d, _embed(doc, model=ModelConfig(backend="torch")).to_dict()) == []
    out = tmp_path / "folder"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"settings": torch_d}))
    (out / "manifest.json").write_text(json.dumps({"documents": [], "shards": []}))
    cfg = dataclasses.replace(_embed(doc, model=ModelConfig(backend="onnx")), out=out)
    with pytest.raises(ValueError) as err:  # refused before the model loads (and before an ONNX export)
        check_append_options(cfg)
    msg = str(err.value)
    assert "model.backend (--backend) was 'torch', now 'onnx'" in msg and "leave out the options that differ" in msg, msg
    assert msg.endswith("embed into a new folder"), msg


def test_split_specs_splits_values_on_spaces():
    assert split_specs(["fixed:size=8 recursive", "semantic"]) == ["fixed:size=8", "recursive", "semantic"]
    assert split_specs(None) == []


# --------------------------------------------------------------------------- the CLI says what the config says
@pytest.mark.parametrize("args, factory", [
    (["--mode", "early"], lambda d: PipelineConfig(("fixed",), modes=("early",))),
    (["--strategy", "fixed:size=8,overlap=8"], lambda d: PipelineConfig(("fixed:size=8,overlap=8",))),
    (["--force", "--resume"], lambda d: _embed(d, force=True, resume=True)),
    (["--group-tokens", "0"], lambda d: PipelineConfig(("fixed",), group_tokens=0)),
    (["--long-documents", "cut"], lambda d: PipelineConfig(("fixed",), long_documents="cut")),
    (["--index", " "], lambda d: IndexConfig.from_option(" ")),
    (["--index", "hnsw", "--hnsw-m", "1"], lambda d: IndexConfig.from_option("hnsw", hnsw_m=1)),
    (["--device", "gpu"], lambda d: ModelConfig(device="gpu")),
    (["--window", "0"], lambda d: PipelineConfig(("fixed",), macro_window=0)),
], ids=["mode", "strategy", "force+resume", "group-tokens", "long-documents", "index", "hnsw-m", "device",
        "window"])
def test_the_cli_reports_the_configs_own_message_before_work(doc, args, factory):
    expected = _error(lambda: factory(doc))
    out = doc.parent / "out"
    res = runner.invoke(app, ["embed", str(doc), "--out", str(out), *args])
    assert res.exit_code == 2
    assert " ".join(expected.split()) in " ".join(res.output.replace("│", " ").split())
    assert not out.exists()


def test_the_cli_refuses_an_out_that_is_a_file_with_the_configs_message(doc):
    expected = _error(lambda: _embed(doc, out=doc))
    res = runner.invoke(app, ["embed", str(doc), "--out", str(doc)])
    assert res.exit_code == 2 and " ".join(expected.split()) in " ".join(res.output.replace("│", " ").split())
    assert doc.read_text(encoding="utf-8") == "Rivers flow to the sea."


# --------------------------------------------------------------------------- settings that need the model (issue 10)
def _facts(pooling: str = "mean", input_limit: int | None = 512, document_frame: int | None = 2, name: str = "m"):
    from latechunk.models import ModelFacts, ModelSettings

    return ModelFacts(name=name, path=name, settings=ModelSettings(pooling=pooling), input_limit=input_limit,
                      document_frame=document_frame)


def test_bad_options_fail_slowly_config_building_for_a_bad_spec_imports_no_torch(doc):
    """Fault 6: building the config for a bad SPEC (and checking a bad window against the bundled model's files)
    imports no torch and no transformers; the command line's first checks are these."""
    import subprocess
    import sys

    code = f"""
import sys
from pathlib import Path
from latechunk.config import EmbedConfig, PipelineConfig
from latechunk.models import ModelFacts
try:
    EmbedConfig(inputs=(Path({str(doc)!r}),), out=Path({str(doc.parent / "out")!r}),
                pipeline=PipelineConfig(("no_such_strategy:size=8",)))
    raise SystemExit("a bad SPEC was accepted")
except ValueError as err:
    assert "unknown strategy 'no_such_strategy'" in str(err), err
try:
    PipelineConfig(("fixed",), macro_window=3).check_model(ModelFacts.read(None))
    raise SystemExit("--window 3 was accepted")
except ValueError as err:
    assert "macro_window=3 is too small" in str(err), err
heavy = sorted(m for m in ("torch", "transformers") if m in sys.modules)
assert not heavy, heavy
print("ok")
"""
    res = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stdout + res.stderr


def test_late_mode_with_a_model_that_does_not_mean_pool_is_refused_naming_model_pooling_and_flag():
    for pooling in ("cls", "lasttoken", "max"):
        msg = _error(lambda p=pooling: PipelineConfig(("fixed",)).check_model(_facts(p, name="my/cls-model")))
        assert "'my/cls-model'" in msg and f"pools by {pooling!r}" in msg and "late mode" in msg
        assert "--late-pooling mean" in msg and "late_pooling='mean'" in msg


def test_late_mode_with_a_model_that_does_not_mean_pool_runs_with_late_pooling_mean_given_explicitly():
    plan = PipelineConfig(("fixed",), late_pooling="mean").check_model(_facts("cls"))
    assert (plan.size, plan.overlap) == (512, 0)  # no sentence-transformers max_seq_length: the input limit
    from latechunk.models import ModelFacts, ModelSettings

    st = ModelFacts(name="m", path="m", settings=ModelSettings(max_seq_length=256), input_limit=512, document_frame=2)
    assert st.default_window == 256
    plan = PipelineConfig(("fixed",)).check_model(st)
    assert (plan.size, plan.overlap) == (256, 0)  # issue 14: the model's max_seq_length, no overlap
    assert PipelineConfig(("fixed",), modes=("naive",)).check_model(_facts("cls")) is not None  # no late pooling
    assert PipelineConfig(("fixed",)).check_model(_facts("mean")) is not None


def test_late_pooling_check_covers_semantic_sentence_vectors_from_the_late_pass():
    msg = _error(lambda: PipelineConfig(("semantic",), modes=("naive",)).check_model(_facts("cls")))
    assert "semantic" in msg and "sentence vectors mean-pooled from the late pass" in msg
    assert PipelineConfig(("semantic:source=other/model",), modes=("naive",)).check_model(_facts("cls"))


def test_late_pooling_takes_only_mean():
    assert "late_pooling (--late-pooling) must be one of ['mean'] or unset, got 'cls'" in _error(
        lambda: PipelineConfig(("fixed",), late_pooling="cls"))


def test_check_model_checks_the_macro_window_with_macro_window_check():
    """Fault 6: one window check (MacroWindow.check), here with the model's facts before its weights load."""
    from latechunk.macro_window import MacroWindow

    for size, overlap in ((3, None), (600, None), (64, 62)):
        expected = _error(lambda s=size, o=overlap: MacroWindow.default(512, 2, s, o))
        assert _error(lambda s=size, o=overlap: PipelineConfig(
            ("fixed",), macro_window=s, macro_window_overlap=o).check_model(_facts())) == expected
    plan = PipelineConfig(("fixed",), macro_window=128).check_model(_facts(document_frame=5))
    assert plan == MacroWindow.default(512, 5, 128)
    # a model whose tokenizer is only known once loaded: the window waits for the encoder, pooling does not
    assert PipelineConfig(("fixed",), macro_window=3).check_model(_facts(document_frame=None)) is None
    assert "pools by 'cls'" in _error(lambda: PipelineConfig(("fixed",)).check_model(_facts("cls", None, None)))


def test_embed_config_records_late_pooling_only_when_given(doc):
    assert "late_pooling" not in _embed(doc).to_dict()  # folders written before the setting still resume
    d = _embed(doc, pipeline=PipelineConfig(("fixed",), late_pooling="mean")).to_dict()
    assert d["late_pooling"] == "mean"
    p = PipelineConfig(("fixed",), late_pooling="mean")
    assert PipelineConfig(**p.to_dict()) == p


def test_dist_env_is_read_without_the_ingest_package():
    from latechunk.config import dist_env
    from latechunk.ingest import dist_env as reexported

    assert reexported is dist_env and dist_env({}) == (0, 1, 0)
    with pytest.raises(ValueError, match=r"\$RANK=2 is outside 0..1"):
        dist_env({"RANK": "2", "WORLD_SIZE": "2"})


def test_an_input_inside_another_input_folder_or_given_twice_is_refused(tmp_path):
    """`embed A A/sub` embedded A/sub's files twice (ids `sub/x.md` and `x.md`); `embed A B/../A` listed every
    document of the second as a duplicate. Both are refused before any work, naming the two inputs."""
    from latechunk.config import EmbedConfig, PipelineConfig

    pipe = PipelineConfig(strategies=("fixed",))

    a = tmp_path / "A"
    (a / "sub").mkdir(parents=True)
    (a / "sub" / "x.md").write_text("Herons wait.", encoding="utf-8")
    (tmp_path / "B").mkdir()
    with pytest.raises(ValueError, match=r"inside the input folder .*A: its documents would be read twice"):
        EmbedConfig(inputs=(a, a / "sub"), out=tmp_path / "o", pipeline=pipe)
    with pytest.raises(ValueError, match="inside the input folder"):
        EmbedConfig(inputs=(a / "sub" / "x.md", a), out=tmp_path / "o", pipeline=pipe)  # a file inside a later folder
    with pytest.raises(ValueError, match="given again"):
        EmbedConfig(inputs=(a, tmp_path / "B" / ".." / "A"), out=tmp_path / "o", pipeline=pipe)
    EmbedConfig(inputs=(a / "sub", tmp_path / "B"), out=tmp_path / "o", pipeline=pipe)  # side by side: fine


def test_paths_that_are_not_utf8_are_refused_before_any_work(tmp_path, monkeypatch):
    """Trial: an input folder or --out named with a byte that is not UTF-8 failed after the work had started
    (`'utf-8' codec can't encode character '\\udcff'` from run.json), leaving a half-made output folder."""
    bad = tmp_path / os.fsdecode(b"in\xff")
    bad.mkdir()
    (bad / "a.md").write_text("Herons wait.", encoding="utf-8")
    good = tmp_path / "b.md"
    good.write_text("Egrets wait.", encoding="utf-8")
    pipeline = PipelineConfig(strategies=(Fixed(size=16),))
    with pytest.raises(ValueError, match=r"the input path '.*in\\xff' is not valid UTF-8 .*rename it"):
        EmbedConfig(inputs=(bad,), out=tmp_path / "o", pipeline=pipeline)
    with pytest.raises(ValueError, match=r"--out '.*o\\xff' is not valid UTF-8"):
        EmbedConfig(inputs=(good,), out=tmp_path / os.fsdecode(b"o\xff"), pipeline=pipeline)
    monkeypatch.chdir(bad)  # a relative path under a working directory that is not UTF-8
    with pytest.raises(ValueError, match=r"'a.md' is under '.*in\\xff/a.md', whose path is not valid UTF-8"):
        EmbedConfig(inputs=(Path("a.md"),), out=tmp_path / "o", pipeline=pipeline)
    res = CliRunner().invoke(app, ["embed", str(bad), "--out", str(tmp_path / "o2")])
    assert res.exit_code == 2 and "is not valid UTF-8" in res.output and not (tmp_path / "o2").exists()


def test_diff_settings_names_the_option_and_a_key_one_side_lacks():
    """A differing setting names the embed option that sets it; a key one run does not record reads 'not set'
    (not 'was None', which a user could take for a value)."""
    from latechunk.ingest.folder import diff_settings

    old = {"strategy": "fixed:size=64,overlap=0", "model": {"backend": "torch"}, "dedup": "exact"}
    new = {"strategy": "fixed:size=32,overlap=0", "model": {"backend": "torch", "dtype": "float16"}}
    assert diff_settings(old, new) == [
        "dedup (--dedup) was 'exact', now not set",
        "model.dtype (--dtype) was not set, now 'float16'",
        "strategy (--strategy) was 'fixed:size=64,overlap=0', now 'fixed:size=32,overlap=0'",
    ]
    assert diff_settings(new, new) == []
    assert diff_settings({"other": 1}, {}) == ["other was 1, now not set"]  # a key with no option keeps its name


@pytest.mark.parametrize(("value", "hint"), [("ubinary", "--precision ubinary"), ("INT8", "--precision int8"),
                                             ("fp16", "--precision float16"), ("binary", "--precision ubinary")])
def test_an_index_option_that_names_a_precision_says_which_option_it_belongs_to(value, hint):
    """Trial finding: `reindex DIR --index ubinary` answered "--index 'ubinary' sets its own encoding: use
    --precision float32", and embed a faiss parse error."""
    from latechunk.config import IndexConfig

    with pytest.raises(ValueError, match="is how the vectors are stored, not an index type") as err:
        IndexConfig.from_option(value)
    assert hint in str(err.value)
