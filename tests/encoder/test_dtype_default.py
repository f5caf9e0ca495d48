"""The dtype an encoder runs in when none is asked for (:func:`latechunk.encoder.default_dtype`): bf16 on CUDA and
on CPUs that multiply bf16 matrices in hardware (AMX), fp32 elsewhere; ``$LATECHUNK_CPU_DTYPE`` overrides the CPU
rule (the test suite pins fp32 in conftest.py); a resumed run keeps the dtype its run.json records."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.encoder import CPU_DTYPE_ENV, default_dtype
from latechunk.encoder import isa as encoder_mod

runner = CliRunner()
CPU, CUDA, MPS = torch.device("cpu"), torch.device("cuda"), torch.device("mps")


@pytest.mark.parametrize("amx", [True, False])
def test_the_cpu_default_follows_the_hardware_unless_the_environment_says(monkeypatch, amx):
    monkeypatch.setattr(encoder_mod, "cpu_has_bf16_matmul", lambda: amx)
    monkeypatch.delenv(CPU_DTYPE_ENV, raising=False)
    assert default_dtype(CPU) == ("bfloat16" if amx else "float32")
    monkeypatch.setenv(CPU_DTYPE_ENV, "auto")
    assert default_dtype(CPU) == ("bfloat16" if amx else "float32")
    monkeypatch.setenv(CPU_DTYPE_ENV, "float32")
    assert default_dtype(CPU) == "float32"
    monkeypatch.setenv(CPU_DTYPE_ENV, "bfloat16")
    assert default_dtype(CPU) == "bfloat16"
    # CUDA is bf16, the ONNX backends and MPS fp32, whatever the CPU and the environment
    assert default_dtype(CUDA) == "bfloat16"
    assert default_dtype(CPU, "onnx") == default_dtype(CPU, "onnx-int8") == "float32"
    assert default_dtype(MPS) == "float32"


@pytest.mark.parametrize("bad", ["fp8", "int8", "float64", "bfloat"])
def test_a_bad_environment_value_is_an_error_naming_the_variable(monkeypatch, bad):
    monkeypatch.setenv(CPU_DTYPE_ENV, bad)
    with pytest.raises(ValueError, match=CPU_DTYPE_ENV) as err:
        default_dtype(CPU)
    assert repr(bad) in str(err.value)


@pytest.mark.parametrize(("written", "name"), [
    ("FLOAT32", "float32"), (" float32 ", "float32"), ("fp32", "float32"), ("BF16", "bfloat16"),
    ("bfloat16", "bfloat16"), ("fp16", "float16"), ("Float16", "float16"), ("half", "float16"), ("", None)])
def test_dtypes_are_read_in_any_case_and_by_their_short_names(monkeypatch, written, name):
    """``--dtype bf16``, ``$LATECHUNK_CPU_DTYPE=FLOAT32``, ``ModelConfig(dtype="fp32")`` all mean torch's names;
    an empty variable means the hardware rule."""
    from latechunk.config import ModelConfig

    monkeypatch.setattr(encoder_mod, "cpu_has_bf16_matmul", lambda: False)
    monkeypatch.setenv(CPU_DTYPE_ENV, written)
    assert default_dtype(CPU) == (name or "float32")
    if name is not None:
        assert ModelConfig(dtype=written).dtype == name


def test_embed_takes_a_short_dtype_name_and_records_torchs_name(tmp_path):
    from tests.models import save_tiny_bert

    model = tmp_path / "model"
    save_tiny_bert(model)
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("One sentence here. Another one there.\n\nA second paragraph follows.")
    out = tmp_path / "out"
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--model", str(model), "--device", "cpu",
                              "--dtype", "BF16", "--quiet"])
    assert res.exit_code == 0, res.output
    run = json.loads((out / "run.json").read_text())
    assert run["settings"]["model"]["dtype"] == "bfloat16"


def test_the_hardware_probe_answers_a_bool_and_survives_a_missing_probe(monkeypatch):
    assert isinstance(encoder_mod.cpu_has_bf16_matmul(), bool)
    for _, attr in encoder_mod.BF16_PROBES:
        monkeypatch.delattr(torch.cpu, attr, raising=False)
    assert encoder_mod.cpu_has_bf16_matmul() is False and encoder_mod.cpu_bf16_isa() is None


@pytest.mark.parametrize(("amx", "avx512_bf16", "expected"), [
    (True, True, "amx"), (True, False, "amx"), (False, True, "avx512_bf16"), (False, False, None),
    ("raise", True, "avx512_bf16"), ("raise", "raise", None)])
def test_amx_or_avx512_bf16_counts_as_hardware_bf16(monkeypatch, amx, avx512_bf16, expected):
    """AMX tiles (Intel) or AVX-512 BF16 (AMD Zen 4, Intel Cooper Lake) make bf16 the CPU default; a probe that
    raises counts as no and the next one is asked."""
    def probe(answer):
        def ask():
            if answer == "raise":
                raise RuntimeError("no cpuinfo")
            return answer
        return ask
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", probe(amx), raising=False)
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", probe(avx512_bf16), raising=False)
    monkeypatch.delenv(CPU_DTYPE_ENV, raising=False)
    assert encoder_mod.cpu_bf16_isa() == expected
    assert default_dtype(CPU) == ("bfloat16" if expected else "float32")


def test_an_encoder_without_a_dtype_takes_the_default_and_bf16_vectors_match_fp32(monkeypatch):
    """bf16 on the CPU (emulated where the CPU has no AMX: slow, never wrong): the mean-pooled vectors of the
    bundled MiniLM agree with fp32 to cosine >= 0.999 (pooling sums in float32)."""
    from latechunk.encoder import Encoder
    from tests.models import minilm_loaded

    monkeypatch.setattr(encoder_mod, "cpu_has_bf16_matmul", lambda: True)
    monkeypatch.delenv(CPU_DTYPE_ENV, raising=False)
    e16 = Encoder(minilm_loaded(), device="cpu")
    assert e16.dtype == torch.bfloat16 and e16.describe(e16.macro_window())["dtype"] == "bfloat16"
    monkeypatch.setattr(encoder_mod, "cpu_has_bf16_matmul", lambda: False)
    e32 = Encoder(minilm_loaded(), device="cpu")
    assert e32.dtype == torch.float32
    texts = ["Late chunking encodes the whole document once and pools each chunk's token states.",
             "The river flooded the valley in the spring of 1927, and the levees broke at Mounds Landing."]
    v16 = e16.encode(texts, normalize_embeddings=True)
    v32 = e32.encode(texts, normalize_embeddings=True)
    assert v16.dtype == v32.dtype == np.float32
    cos = (v16 * v32).sum(axis=1)
    assert cos.min() >= 0.999, cos
    assert np.abs(v16 - v32).max() > 0  # two dtypes really ran


def test_compare_refuses_an_unknown_dtype_before_any_work(tmp_path):
    res = runner.invoke(app, ["compare", "--dataset", "xquad", "--out", str(tmp_path / "r"), "--dtype", "fp8"])
    assert res.exit_code == 2 and "dtype must be float32, bfloat16 or float16" in res.output, res.output
    assert not (tmp_path / "r").exists()


def test_resume_keeps_the_dtype_run_json_records_when_the_default_would_differ(tmp_path, monkeypatch):
    """A folder embedded in fp32 (an older run, or a CPU without AMX) resumed where the default is bf16 must go on
    in fp32, not refuse the resume and not mix dtypes."""
    from tests.models import save_tiny_bert

    model = tmp_path / "model"
    save_tiny_bert(model)
    src = tmp_path / "src"
    src.mkdir()
    for i in range(3):
        (src / f"d{i}.md").write_text(f"Document {i} talks about rivers and valleys. " * 30, encoding="utf-8")
    out = tmp_path / "out"
    args = ["embed", str(src), "--out", str(out), "--model", str(model), "--device", "cpu", "--quiet",
            "--strategy", "fixed:size=32", "--group-tokens", "100"]
    monkeypatch.setenv(CPU_DTYPE_ENV, "float32")
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    run = json.loads((out / "run.json").read_text())
    assert run["settings"]["model"]["dtype"] == "float32"  # the resolved dtype is recorded
    # --resume checks the run's settings against run.json first (a finished run then has nothing left to do)
    monkeypatch.setenv(CPU_DTYPE_ENV, "bfloat16")
    res = runner.invoke(app, [*args, "--resume"])
    assert res.exit_code == 0, res.output
    assert json.loads((out / "run.json").read_text())["settings"]["model"]["dtype"] == "float32"
    assert json.loads((out / "manifest.json").read_text())["model"]["dtype"] == "float32"
    # without --resume, a new run takes today's default, and an explicit --dtype wins over run.json on --resume
    res = runner.invoke(app, [*args, "--resume", "--dtype", "bfloat16"])
    assert res.exit_code == 2 and "dtype" in res.output, res.output
    res = runner.invoke(app, [*args, "--force"])
    assert res.exit_code == 0, res.output
    assert json.loads((out / "run.json").read_text())["settings"]["model"]["dtype"] == "bfloat16"
    assert Path(out / "index.faiss").exists()


def test_search_encodes_the_query_in_the_folders_recorded_dtype(tmp_path, monkeypatch):
    """A folder embedded in bf16 is searched with a bf16 query encoder whatever this process's default (the
    suite pins float32), as latechunk.Index does: `latechunk search` scores equal the bf16 query's inner
    products with the stored vectors, and differ from a float32 query's."""
    import json

    import faiss
    from typer.testing import CliRunner

    from latechunk.cli import app
    from latechunk.encoder import Encoder
    from tests.models import minilm_loaded

    src = tmp_path / "docs"
    src.mkdir()
    (src / "a.txt").write_text("The levees broke at Mounds Landing in April 1927 and the river flooded the delta. "
                               "Relief camps held thousands of families for months.", encoding="utf-8")
    out = tmp_path / "out"
    runner = CliRunner()
    r = runner.invoke(app, ["embed", str(src), "--out", str(out), "--dtype", "bfloat16", "--quiet"])
    assert r.exit_code == 0, r.output
    query = "when did the levees break"
    r = runner.invoke(app, ["search", str(out), query, "--json", "-k", "1"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)[0]["score"]
    stored = faiss.read_index(str(out / "index.faiss")).reconstruct(0)
    scores = {dt: float(Encoder(minilm_loaded(), device="cpu", dtype=dt).encode_query([query])[0] @ stored)
              for dt in ("bfloat16", "float32")}
    assert got == pytest.approx(scores["bfloat16"], abs=1e-5)
    assert abs(scores["bfloat16"] - scores["float32"]) > 1e-5  # the test can tell the two apart
