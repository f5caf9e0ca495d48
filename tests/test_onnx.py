"""The ONNX Runtime backend (issue 15 part 4): token states match torch, exports are cached by weight hash,
bad settings fail clearly."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from latechunk import onnx_backend
from latechunk.encoder import Encoder
from latechunk.models import LoadedModel, ModelSettings
from latechunk.onnx_backend import cache_key, export_onnx, state_hash
from latechunk.types import Document
from tests.models import minilm_loaded, minilm_parts, tiny_bert

DOCS = [
    Document("a.md", "# Late chunking\n\nA document is encoded once; each chunk vector is the mean of its token "
                     "states. " * 3),
    Document("b.md", "Short one."),
    Document("c.md", "Macro windows cover long documents: every token's state comes from the window where it has "
                     "the most context on both sides. " * 40),
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx_cache")


def _match(ref: Encoder, onx: Encoder) -> None:
    """Token states of DOCS (macro windows, padded batches) and query vectors: within 1e-4 (max abs)."""
    assert onx.describe()["backend"] == "onnx"
    toks = [ref.tokenizer(d) for d in DOCS]
    assert len(toks[2]) > 512  # the long one goes through macro windows
    mw = ref.macro_window(256, 32)
    a = ref.token_states(toks, mw)
    b = onx.token_states(toks, mw)
    worst = max(float((x - y).abs().max()) for x, y in zip(a, b))
    assert worst <= 1e-4, worst
    assert onx.stats["forward_calls"] > 1 and onx.stats["padded_tokens"] > onx.stats["tokens"]  # padded batches ran
    # the model's own pooling through the same path
    q = ["what is late chunking?", "macro windows"]
    assert np.abs(ref.encode_query(q) - onx.encode_query(q)).max() <= 1e-4


@pytest.mark.slow
def test_minilm_fp32_token_states_match_torch(cache, monkeypatch):
    """The real MiniLM (export + fusions take ~20 s of CPU): ONNX fp32 token states within 1e-4 of torch's."""
    monkeypatch.setenv("LATECHUNK_CACHE", str(cache))
    _match(Encoder(minilm_loaded(), device="cpu", batch_tokens=1024),
           Encoder(minilm_loaded(), device="cpu", batch_tokens=1024, backend="onnx"))


def test_tiny_bert_fp32_token_states_match_torch(tmp_path, monkeypatch):
    """The default-run stand-in of the MiniLM test: a tiny BERT through the same export, fusions and batches."""
    monkeypatch.setenv("LATECHUNK_CACHE", str(tmp_path))
    _match(Encoder(_tiny_loaded(), device="cpu", batch_tokens=1024),
           Encoder(_tiny_loaded(), device="cpu", batch_tokens=1024, backend="onnx"))


def _tiny_loaded(seed_shift: float = 0.0) -> LoadedModel:
    model = tiny_bert()
    if seed_shift:
        with torch.no_grad():
            model.embeddings.word_embeddings.weight.add_(seed_shift)
    return LoadedModel("tiny-bert", model, minilm_parts()[1], ModelSettings(pooling="mean", normalize=True))


def test_export_is_cached_by_weight_hash(tmp_path, monkeypatch):
    calls = []
    real = onnx_backend._export_fp32
    monkeypatch.setattr(onnx_backend, "_export_fp32", lambda m, p: (calls.append(p), real(m, p)))
    m1 = _tiny_loaded().model
    p1 = export_onnx(m1, "", "fp32", tmp_path)
    assert p1.is_file() and p1.parent.parent == tmp_path and len(calls) == 1
    assert export_onnx(_tiny_loaded().model, "", "fp32", tmp_path) == p1 and len(calls) == 1  # same weights: cached
    p2 = export_onnx(_tiny_loaded(0.5).model, "", "fp32", tmp_path)  # other weights: another export
    assert p2 != p1 and len(calls) == 2
    assert state_hash(m1) != state_hash(_tiny_loaded(0.5).model)
    assert cache_key("abc", "fp32") != cache_key("abc", "int8")
    assert not list(tmp_path.glob(".export-*"))  # no temporary folders left


def test_int8_backend_runs_close_to_torch(tmp_path, monkeypatch):
    monkeypatch.setenv("LATECHUNK_CACHE", str(tmp_path))
    ref = Encoder(_tiny_loaded(), device="cpu")
    q8 = Encoder(_tiny_loaded(), device="cpu", backend="onnx-int8")
    texts = [d.text for d in DOCS[:2]]
    a, b = ref.encode_document(texts), q8.encode_document(texts)
    assert a.shape == b.shape
    assert float((a * b).sum(axis=1).min()) > 0.98  # cosine of unit vectors: int8 costs a little, not everything
    assert (tmp_path / "onnx").is_dir() and len(list((tmp_path / "onnx").iterdir())) == 2  # fp32 + its int8 copy


@pytest.mark.parametrize("kwargs, msg", [
    ({"backend": "tensorrt"}, "backend must be one of torch, onnx, onnx-int8"),
    ({"backend": "onnx", "dtype": "bfloat16"}, "runs on the CPU in float32"),
])
def test_bad_backend_settings_fail_clearly(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        Encoder(_tiny_loaded(), device="cpu", **kwargs)


def test_missing_onnxruntime_names_the_extra(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_ort(name, *a, **k):
        if name == "onnxruntime":
            raise ImportError("No module named 'onnxruntime'", name="onnxruntime")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_ort)
    with pytest.raises(ImportError, match=r"latechunk\[onnx\]"):
        onnx_backend._need_onnx()


def test_export_holds_the_bert_fusions(tmp_path):
    """ONNX Runtime's transformer optimizer really fused the tiny BERT (2 layers): one Attention, two
    SkipLayerNormalization and one BiasGelu per layer, one EmbedLayerNormalization; int8 quantizes the attention."""
    fp32 = onnx_backend.graph_ops(export_onnx(_tiny_loaded().model, "", "fp32", tmp_path))
    assert (fp32.get("Attention"), fp32.get("SkipLayerNormalization"), fp32.get("BiasGelu"),
            fp32.get("EmbedLayerNormalization")) == (2, 4, 2, 1), fp32
    assert "Softmax" not in fp32 and "LayerNormalization" not in fp32 and "Erf" not in fp32  # nothing left unfused
    int8 = onnx_backend.graph_ops(export_onnx(_tiny_loaded().model, "", "int8", tmp_path))
    assert int8.get("QAttention") == 2 and int8.get("MatMulInteger", 0) >= 4 and "Attention" not in int8, int8


@pytest.mark.slow
def test_minilm_export_holds_the_bert_fusions(cache, monkeypatch):
    """The real MiniLM (6 layers): 6 Attention, 12 SkipLayerNormalization, 6 BiasGelu, 1 EmbedLayerNormalization."""
    monkeypatch.setenv("LATECHUNK_CACHE", str(cache))
    enc = Encoder(minilm_loaded(), device="cpu", backend="onnx")
    ops = onnx_backend.graph_ops(enc._onnx.path)
    assert (ops.get("Attention"), ops.get("SkipLayerNormalization"), ops.get("BiasGelu"),
            ops.get("EmbedLayerNormalization")) == (6, 12, 6, 1), ops


def test_int8_weights_have_one_scale_per_output_channel(tmp_path):
    """The int8 recipe quantizes the attention and MatMul weights per output channel (one scale per tensor cost
    MiniLM's mean-pooled vectors up to 0.08 of cosine; results/onnx.md)."""
    import onnx

    path = export_onnx(_tiny_loaded().model, "", "int8", tmp_path)
    scales = {i.name: list(i.dims) for i in onnx.load(str(path)).graph.initializer if i.name.endswith("_scale")}
    qkv = [d for n, d in scales.items() if "qkv" in n]
    assert qkv and all(d == [3 * 32] for d in qkv), scales  # tiny BERT: hidden 32, q k v stacked
    assert sum(1 for d in scales.values() if d == [32] or d == [64]) >= 4, scales  # the dense layers too
