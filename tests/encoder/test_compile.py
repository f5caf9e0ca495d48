"""``compile`` (torch.compile of the forward; issue 15): Encoder, LateChunker, ``embed --compile`` and ``compare
--compile``. The default run traces the model with a counting backend (dynamo's graph capture, no C++ build); the
slow test compiles with TorchInductor."""

from __future__ import annotations

import json
import warnings

import faiss
import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from latechunk.api import LateChunker
from latechunk.cli import app
from latechunk.config import ModelConfig
from latechunk.encoder import Encoder
from latechunk.eval.config import CompareConfig
from tests.models import minilm_encoder, minilm_loaded

pytestmark = pytest.mark.usefixtures("one_thread")

TEXT = ("Late chunking encodes the whole document once. Each chunk vector is the mean of its token states. "
        "The macro window bounds what one forward pass reads. ") * 12
runner = CliRunner()


class CountingCompile:
    """Stands in for ``torch.compile``: the real one with a backend that counts the graphs dynamo hands it and
    runs them as traced (``fail=True``: a backend that raises, as a missing C++ compiler does)."""

    def __init__(self, fail: bool = False) -> None:
        self.graphs = 0
        self.calls: list[dict] = []
        self.fail = fail
        self._real = torch.compile

    def __call__(self, model, **kwargs):
        self.calls.append(kwargs)

        def backend(gm, example_inputs):
            if self.fail:
                raise RuntimeError("no C++ compiler found (test)")
            self.graphs += 1
            return gm.forward

        return self._real(model, backend=backend, **kwargs)


@pytest.fixture
def counting(monkeypatch):
    torch._dynamo.reset()
    c = CountingCompile()
    monkeypatch.setattr(torch, "compile", c)
    yield c
    torch._dynamo.reset()


def _late_vectors(chunker: LateChunker, texts) -> np.ndarray:
    return np.stack([c.embedding for t in texts for c in chunker(t)])


def test_compiled_encoder_gives_the_eager_vectors_through_the_compiled_graph(counting):
    texts = [TEXT, TEXT[:700], "A short one."]  # one long document (two macro windows), shorter ones: 3 shapes
    eager = LateChunker(minilm_encoder(), strategy="fixed:size=64", macro_window=128)
    compiled = LateChunker(minilm_encoder(compile=True), strategy="fixed:size=64", macro_window=128)
    assert compiled.encoder.compiled and counting.calls == [{"dynamic": None}]
    a, b = _late_vectors(eager, texts), _late_vectors(compiled, texts)
    assert counting.graphs >= 1  # the forward went through dynamo's graph, not the eager module
    assert a.shape == b.shape and np.abs(a - b).max() < 1e-5
    assert compiled.encoder.model is not compiled.encoder._forward_model  # .model stays the eager module
    # naive mode (varying chunk lengths) and queries use the compiled forward too
    q_eager = eager.encoder.encode_query(["what does late chunking pool?"])
    q_comp = compiled.encoder.encode_query(["what does late chunking pool?"])
    assert np.abs(q_eager - q_comp).max() < 1e-5


def test_a_failed_compile_warns_once_and_runs_eager(monkeypatch):
    torch._dynamo.reset()
    monkeypatch.setattr(torch, "compile", CountingCompile(fail=True))
    # torch's own config.patch, not monkeypatch: monkeypatch's undo deletes the config attribute, which torch 2.13
    # then hides, so every later torch.compile in the process failed ("suppress_errors does not exist")
    with torch._dynamo.config.patch(suppress_errors=False):
        enc = minilm_encoder(compile=True)
        ref = minilm_encoder()
        tok = enc.tokenizer(TEXT[:400])
        with pytest.warns(RuntimeWarning, match=r"torch.compile failed .*no C\+\+ compiler found .*runs the model eager") as got:
            states = enc.token_states([tok])[0]
        assert got[0].filename == __file__  # the caller's line, not encoder.py's
        assert not enc.compiled and enc._forward_model is enc.model
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no second warning
            again = enc.token_states([tok])[0]
        want = ref.token_states([tok])[0]
        assert torch.allclose(states, want, atol=1e-5) and torch.allclose(again, want, atol=1e-5)
    assert torch._dynamo.config.suppress_errors is False  # the setting is back, still readable
    torch._dynamo.reset()


def test_out_of_memory_is_not_taken_for_a_failed_compile(monkeypatch):
    enc = minilm_encoder(compile=True)

    def oom(**kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory (test)")  # torch >= 2.5; encoder.py has the fallback

    enc._forward_model = oom
    with pytest.raises(torch.OutOfMemoryError):
        enc.token_states([enc.tokenizer("one two three")])
    assert enc.compiled  # still compiled: the next, smaller batch may fit


def test_an_error_of_the_batch_itself_propagates_and_keeps_compile_on(monkeypatch):
    """Where the eager model fails on the same batch, the fault is not the compiler's: no warning, compile stays on."""
    enc = minilm_encoder(compile=True)

    def broken(**kwargs):
        raise RuntimeError("compiled graph failed (test)")

    def bad_input(**kwargs):
        raise IndexError("index out of range in self (test)")

    enc._forward_model = broken
    monkeypatch.setattr(Encoder, "model", property(lambda self: _Raising(bad_input)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(IndexError, match="index out of range"):
            enc.token_states([enc.tokenizer("one two three")])
    assert enc.compiled and enc._forward_model is broken


class _Raising(torch.nn.Module):
    """A stand-in model whose forward calls ``fn`` (which raises)."""

    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, **kwargs):
        return self.fn(**kwargs)


def test_compile_is_refused_with_onnx_and_with_an_encoder_already_built():
    with pytest.raises(ValueError, match="compile applies to the torch backend"):
        Encoder(minilm_loaded(), device="cpu", backend="onnx", compile=True)
    with pytest.raises(ValueError, match="--compile applies to the torch backend"):
        ModelConfig(backend="onnx-int8", compile=True)
    with pytest.raises(ValueError, match="--compile applies to the torch backend"):
        CompareConfig(dataset="xquad", backend="onnx", compile=True)
    with pytest.raises(ValueError, match="compile applies when LateChunker loads the model"):
        LateChunker(minilm_encoder(), compile=True)
    assert ModelConfig(compile=True).compile and CompareConfig(dataset="xquad", compile=True).compile
    with pytest.raises(TypeError, match="compile must be True or False, got 'no'"):
        Encoder(minilm_loaded(), device="cpu", compile="no")


def test_from_config_passes_compile(counting):
    enc = Encoder.from_config(ModelConfig(device="cpu", compile=True))
    assert enc.compiled and counting.calls == [{"dynamic": None}]


def test_embed_compile_writes_the_eager_folder_and_is_not_a_setting(tmp_path, counting):
    doc = tmp_path / "doc.md"
    doc.write_text("# Notes\n\n" + TEXT, encoding="utf-8")
    outs = {}
    for name, extra in (("eager", []), ("compiled", ["--compile"])):
        out = outs[name] = tmp_path / name
        res = runner.invoke(app, ["embed", str(doc), "--out", str(out), "--device", "cpu", "--quiet",
                                  "--strategy", "fixed:size=64", *extra])
        assert res.exit_code == 0, res.output
    assert counting.graphs >= 1
    a, b = (faiss.read_index(str(outs[n] / "index.faiss")) for n in ("eager", "compiled"))
    va, vb = (faiss.rev_swig_ptr(i.get_xb(), i.ntotal * i.d).reshape(i.ntotal, i.d) for i in (a, b))
    assert va.shape == vb.shape and np.abs(va - vb).max() < 1e-5
    run_e, run_c = (json.loads((outs[n] / "run.json").read_text()) for n in ("eager", "compiled"))
    assert "compile" not in json.dumps(run_c) and run_e["settings"] == run_c["settings"]
    # an append with --compile to a folder embedded eager: not a setting, so accepted
    more = tmp_path / "more.md"
    more.write_text("Another document about macro windows. " * 8, encoding="utf-8")
    res = runner.invoke(app, ["embed", str(more), "--out", str(outs["eager"]), "--append", "--quiet", "--compile"])
    assert res.exit_code == 0, res.output


def test_embed_compile_with_onnx_is_refused_before_the_model_loads(tmp_path, monkeypatch):
    doc = tmp_path / "doc.md"
    doc.write_text(TEXT, encoding="utf-8")

    def no_load(*a, **k):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(Encoder, "__init__", no_load)
    res = runner.invoke(app, ["embed", str(doc), "--out", str(tmp_path / "o"), "--backend", "onnx", "--compile"])
    assert res.exit_code != 0 and "--compile applies to the torch backend" in res.output
    res = runner.invoke(app, ["compare", "--dataset", "xquad", "--backend", "onnx", "--compile",
                              "--out", str(tmp_path / "c")])
    assert res.exit_code != 0 and "--compile applies to the torch backend" in res.output


def test_help_teaches_compile():
    for cmd in ("embed", "compare"):
        res = runner.invoke(app, [cmd, "--help"], env={"COLUMNS": "200"})
        assert "--compile" in res.output and "torch.compile" in res.output


@pytest.mark.slow
def test_inductor_compile_matches_eager():
    """TorchInductor for real (a C++ build of the kernels; tens of seconds on 2 cores)."""
    torch._dynamo.reset()
    texts = [TEXT, TEXT[:500]]
    eager = LateChunker(minilm_encoder(), strategy="fixed:size=64", macro_window=128)
    compiled = LateChunker(minilm_encoder(compile=True), strategy="fixed:size=64", macro_window=128)
    a, b = _late_vectors(eager, texts), _late_vectors(compiled, texts)
    assert compiled.encoder.compiled  # no fallback to eager
    assert np.abs(a - b).max() < 1e-4
    torch._dynamo.reset()
