"""latechunk.encoder: running a loaded model: sentence-transformers parity (encode / encode_query /
encode_document), the default macro-window plan, window stitching, batching, long context, the manifest block;
and the encoder side of the cases BR-012..BR-014 of ``../shared/cases/README.md``."""

from __future__ import annotations

import platform

import numpy as np
import pytest
import torch

from latechunk.config import PipelineConfig
from latechunk.encoder import ONEDNN_MIN_TOKENS, Encoder, onednn_linear_available
from latechunk.macro_window import MIN_WINDOW_CONTENT_TOKENS, MacroWindow
from latechunk.models import ModelSettings, resolve_model_path
from latechunk.pipeline import embed
from latechunk.types import Document
from tests.models import ForwardRecorder, minilm_encoder, minilm_loaded, tiny_modernbert_encoder

LONG = " ".join(f"Note {i}: the lamp in room {i} was switched off at dusk." for i in range(1, 121))
NOTES = LONG  # the 120-sentence document of BR-012/BR-013
SENT0 = "sentence_window:window=0"
DESCRIBE_KEYS = ["name", "path", "sha256", "dim", "dtype", "device", "max_length", "window", "window_overlap",
                 "pooling", "normalize", "document_prompt", "query_prompt"]


def test_default_model_loads_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    enc = Encoder(device="cpu")
    assert enc.name == "all-MiniLM-L6-v2" and enc.dim == 384 and enc.max_length == 512
    assert enc.settings.pooling == "mean" and enc.settings.normalize is True
    assert enc.max_seq_length == 256  # sentence-transformers' value, below the input limit
    assert len(enc.model_hash) == 64 and enc.dtype == torch.float32 and str(enc.device) == "cpu"


def test_missing_model_path_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        Encoder(str(tmp_path / "no_such_model"), device="cpu")


def test_encode_matches_sentence_transformers():
    st = pytest.importorskip("sentence_transformers")
    texts = ["hello world", "Dogs bark. Cats sleep.", "A longer sentence about late chunking and pooling."]
    ref = st.SentenceTransformer(resolve_model_path(None), device="cpu").encode(texts)
    enc = minilm_encoder()
    np.testing.assert_allclose(enc.encode(texts), ref, atol=1e-5)
    # the model has no prompts: every prompt name gives the same vectors
    np.testing.assert_allclose(enc.encode_query(texts), ref, atol=1e-5)
    np.testing.assert_allclose(enc.encode_document(texts), ref, atol=1e-5)



def test_sentence_transformers_keywords():
    """encode takes sentence-transformers' keywords with its meanings: one str gives one vector,
    normalize_embeddings=False gives the model's own output (MiniLM has a Normalize module), convert_to_tensor,
    convert_to_numpy=False, prompt=; prompts and default_prompt_name come from its config."""
    st = pytest.importorskip("sentence_transformers")
    ref_model = st.SentenceTransformer(resolve_model_path(None), device="cpu")
    enc = minilm_encoder()
    texts = ["Late chunking pools token states.", "Rivers reach the sea."]
    for kwargs in ({}, {"normalize_embeddings": False}, {"normalize_embeddings": True}):
        np.testing.assert_allclose(enc.encode(texts, batch_size=1, **kwargs), ref_model.encode(texts, **kwargs), atol=1e-5)
    one = enc.encode(texts[0])
    assert one.shape == (enc.dim,)
    np.testing.assert_allclose(one, ref_model.encode(texts[0]), atol=1e-5)
    t = enc.encode(texts, convert_to_tensor=True)
    assert isinstance(t, torch.Tensor) and t.shape == (2, enc.dim) and t.dtype == torch.float32
    rows = enc.encode(texts, convert_to_numpy=False)
    assert isinstance(rows, list) and len(rows) == 2 and rows[0].shape == (enc.dim,)
    np.testing.assert_allclose(enc.encode(texts, prompt="query: "), ref_model.encode(texts, prompt="query: "), atol=1e-5)
    assert enc.prompts == ref_model.prompts == {"query": "", "document": ""} and enc.default_prompt_name is None
    raw = enc.encode(texts, normalize=False)  # latechunk's own keyword: the pooled vectors, not normalised
    assert np.abs(np.linalg.norm(raw, axis=1) - 1).max() > 1e-3
    with pytest.raises(ValueError, match="give one of normalize=False and normalize_embeddings=True"):
        enc.encode(texts, normalize=False, normalize_embeddings=True)
    with pytest.raises(TypeError, match=r"texts\[1\] must be a str"):
        enc.encode(["ok", 3])

def test_prompt_names_pick_the_prompt():
    enc = minilm_encoder(document_prompt="passage: ", query_prompt="query: ")
    text = ["Snow fell on the quiet village."]
    plain = enc.encode(text)
    np.testing.assert_allclose(enc.encode(["passage: " + text[0]]), enc.encode_document(text), atol=1e-5)
    np.testing.assert_allclose(enc.encode(["query: " + text[0]]), enc.encode_query(text), atol=1e-5)
    np.testing.assert_array_equal(enc.encode(text, prompt_name="query"), enc.encode_query(text))
    assert np.abs(plain - enc.encode_query(text)).max() > 1e-3
    raw = enc.encode(text, normalize=False)
    assert abs(float(np.linalg.norm(raw)) - 1.0) > 1e-3
    np.testing.assert_allclose(raw / np.linalg.norm(raw, axis=1, keepdims=True), plain, atol=1e-6)
    assert enc.encode([]).shape == (0, enc.dim)
    with pytest.raises(ValueError, match="prompt_name must be None, 'query' or 'document', got 'plain'"):
        enc.encode(text, prompt_name="plain")


def test_bad_settings_raise_before_work():
    with pytest.raises(ValueError, match="exceeds the model's limit"):
        minilm_encoder(max_length=4096)
    with pytest.raises(ValueError, match="max_length=10 is too small"):
        minilm_encoder(max_length=10)
    with pytest.raises(ValueError, match="dtype must be float32, bfloat16 or float16"):
        minilm_encoder(dtype="int8")
    with pytest.raises(ValueError, match="batch_tokens must be >= 1"):
        minilm_encoder(batch_tokens=0)
    with pytest.raises(ValueError, match="already loaded"):
        Encoder(minilm_loaded(), device="cpu", trust_remote_code=True)


def test_macro_window_defaults_to_max_seq_length_and_no_overlap():
    """Issue 14: MiniLM's default window is its sentence-transformers max_seq_length (256 of its 512 positions),
    with no overlap (the measured defaults, results/map.md)."""
    enc = minilm_encoder()
    assert enc.max_seq_length == 256 and enc.max_length == 512
    assert enc.macro_window() == MacroWindow(256, 0)
    assert enc.macro_window(128) == MacroWindow(128, 0)
    assert enc.macro_window(512) == MacroWindow(512, 0)
    assert enc.macro_window(128, 32) == MacroWindow(128, 32)
    with pytest.raises(ValueError, match="overlap"):
        enc.macro_window(128, 200)
    with pytest.raises(ValueError, match="window=513 exceeds max_length=512"):
        enc.macro_window(513)
    prompted = minilm_encoder(document_prompt="search_document: ")
    n_frame = prompted.tokenizer.n_frame
    assert n_frame > 2 and prompted.macro_window(128).overlap == 0 and prompted.macro_window(128, 64).overlap == 64
    minimum = n_frame + MIN_WINDOW_CONTENT_TOKENS
    with pytest.raises(ValueError, match=rf"window={minimum - 1} is too small: the minimum is {minimum} tokens"):
        prompted.macro_window(minimum - 1)
    tok = enc.tokenizer("A short text about rivers.")
    with pytest.raises(ValueError, match=r"window=5 is too small: the minimum is 18"):
        enc.token_states([tok], MacroWindow(5, 0))


def test_a_text_encoded_on_its_own_is_one_forward_up_to_max_length():
    """Issue 15 (peer benchmark): a 256-token naive chunk of MiniLM (258 with its frame) went through two 256-token
    windows, the second pushed back to be full (512 tokens, naive 2.1x slower than sentence-transformers). A text
    encoded on its own now takes the model's whole input (max_length 512) in one forward."""
    enc = minilm_encoder()
    text = " ".join(["river"] * 256)  # "river" is one word piece: 256 content tokens
    assert len(enc.tokenizer(text).input_ids) == 258 > enc.max_seq_length
    before = dict(enc.stats)
    one = enc.encode(text)
    assert enc.stats["tokens"] - before["tokens"] == 258 and enc.stats["forward_calls"] - before["forward_calls"] == 1
    # an explicit plan still applies: two 256-token windows give another (stitched) vector
    two = enc.encode(text, macro_window=enc.macro_window())
    assert not np.allclose(one, two, atol=1e-6)


def test_macro_windows_keep_each_token_from_its_most_central_window():
    enc = minilm_encoder()
    mw = enc.macro_window(128, 32)
    tok = enc.tokenizer(" ".join(LONG.split(" ")[: len(LONG.split(" ")) // 2]))  # 60 notes: about 8 windows
    rec = ForwardRecorder(enc)
    states = enc.token_states([tok], mw)[0]
    assert states.shape[0] == len(tok)
    rows, plan = enc.model_inputs(tok, mw)
    assert len(plan) > 5 and all(len(r) <= 128 for r in rec.rows) and rec.rows == [r.tolist() for r in rows]
    # recompute each window alone and check the stitched rows come from the planned window
    with torch.inference_mode():
        for (a, b, ks, ke), row in zip(plan, rows):
            alone = enc.model(input_ids=torch.tensor(row)[None]).last_hidden_state[0]
            got = states[tok.n_lead + ks : tok.n_lead + ke]
            torch.testing.assert_close(got, alone[tok.n_lead + ks - a : tok.n_lead + ke - a], atol=1e-5, rtol=1e-5)
            if (a, b) == (plan[0][0], plan[0][1]):
                torch.testing.assert_close(states[: tok.n_lead], alone[: tok.n_lead], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(states[-tok.n_trail :], alone[-tok.n_trail :], atol=1e-5, rtol=1e-5)


def test_memory_grows_with_the_largest_document_no_longer_iter_token_states_yields_one_batch_at_a_time():
    # issue 10, fault 4: the late pass streams forward batches; each batch holds at most batch_tokens rows
    # whatever the document's length, and the blocks of every document tile it exactly once
    enc = minilm_encoder(batch_tokens=96)
    mw = enc.macro_window(40, 8)
    toks = [enc.tokenizer(LONG[:1500]), enc.tokenizer("A short note."), enc.tokenizer(LONG[:300])]
    whole = enc.token_states(toks, mw)
    seen = [np.zeros(len(t), dtype=int) for t in toks]
    largest, batches = 0, 0
    for batch in enc.iter_token_states(toks, mw):
        batches += 1
        largest = max(largest, batch.states.shape[0])
        for b in batch.blocks:
            seen[b.doc][b.start : b.start + b.n] += 1
            torch.testing.assert_close(batch.states[b.row : b.row + b.n], whole[b.doc][b.start : b.start + b.n],
                                       atol=0, rtol=0)
    assert all((s == 1).all() for s in seen)
    assert largest <= 96 < len(toks[0]) and batches > 4
    # and the stitched states are those of each window run alone (rows from the window where the token is
    # most central: test_macro_windows_keep_each_token_from_its_most_central_window)
    rows, plan = enc.model_inputs(toks[0], mw)
    with torch.inference_mode():
        alone = enc.model(input_ids=torch.tensor(rows[1])[None]).last_hidden_state[0]
    a, _, ks, ke = plan[1]
    n = toks[0].n_lead
    torch.testing.assert_close(whole[0][n + ks : n + ke], alone[n + ks - a : n + ke - a], atol=1e-5, rtol=1e-5)


def test_one_encoder_serves_every_window():
    enc = minilm_encoder()
    tok = enc.tokenizer(LONG[:1000])
    by_plan = {w: enc.token_states([tok], enc.macro_window(w))[0] for w in (64, 512)}
    fresh = minilm_encoder()
    for w, states in by_plan.items():
        torch.testing.assert_close(states, fresh.token_states([tok], MacroWindow(w, 0))[0], atol=0, rtol=0)
    assert not torch.allclose(by_plan[64], by_plan[512], atol=1e-3)


def test_window_longer_than_document_equals_single_pass():
    enc = minilm_encoder()
    tok = enc.tokenizer("Snow fell on the quiet village. Children built a fort by the river.")
    win = enc.token_states([tok], enc.macro_window(128))[0]
    with torch.inference_mode():
        ids = torch.tensor(tok.input_ids)[None]
        single = enc._run_model(ids, torch.ones_like(ids)).last_hidden_state[0]  # the encoder's own arithmetic
    torch.testing.assert_close(win, single, atol=1e-6, rtol=1e-6)


def test_document_longer_than_the_window_raises_when_windows_are_not_allowed():
    enc = minilm_encoder()
    tok = enc.tokenizer(LONG)
    with pytest.raises(ValueError, match=rf"{len(tok)} tokens, more than max_length=256"):  # the default window
        enc.token_states([tok], allow_windows=False)
    with pytest.raises(ValueError, match=rf"{len(tok)} tokens, more than max_length=512"):
        enc.token_states([tok], enc.macro_window(512), allow_windows=False)


def test_batching_restores_input_order_and_is_padding_invariant():
    enc = minilm_encoder(batch_tokens=1024)
    texts = ["short one.", LONG[:900], "a medium sentence about rivers and the sea.", LONG[:2000]]
    toks = [enc.tokenizer(t) for t in texts]
    together = enc.token_states(toks)
    for t, s in zip(toks, together):
        alone = enc.token_states([t])[0]
        assert s.shape == alone.shape
        torch.testing.assert_close(s, alone, atol=1e-4, rtol=1e-4)


def test_tiny_modernbert_8192_encodes_6000_token_document_in_one_pass():
    enc = tiny_modernbert_encoder()
    assert enc.max_length == 8192 and enc.max_seq_length == 8192  # no sentence-transformers value: the limit
    text = " ".join(f"Note {i}: the lamp in room {i} was switched off at dusk." for i in range(1, 430))
    tok = enc.tokenizer(text)
    assert 6000 <= len(tok) <= 8192
    rec = ForwardRecorder(enc)
    states = enc.token_states([tok])[0]
    assert rec.calls == 1 and len(rec.rows) == 1 and len(rec.rows[0]) == len(tok)
    assert states.shape == (len(tok), enc.dim) and torch.isfinite(states).all()


def test_max_seq_length_is_capped_at_the_input_limit():
    from dataclasses import replace

    loaded = minilm_loaded()
    big = replace(loaded, settings=replace(loaded.settings, max_seq_length=8192))
    assert Encoder(big, device="cpu").max_seq_length == 512
    none = replace(loaded, settings=ModelSettings())
    assert Encoder(none, device="cpu").max_seq_length == 512


def test_describe_keeps_the_manifest_keys_and_records_the_plan():
    enc = minilm_encoder()
    d = enc.describe()
    assert list(d) == DESCRIBE_KEYS
    assert (d["window"], d["window_overlap"], d["max_length"], d["dim"]) == (256, 0, 512, 384)
    assert (d["pooling"], d["normalize"], d["dtype"], d["device"]) == ("mean", True, "float32", "cpu")
    d = enc.describe(enc.macro_window(128, 32))
    assert (d["window"], d["window_overlap"]) == (128, 32)
    assert not hasattr(enc, "window") and not hasattr(enc, "window_overlap")


def test_from_config_reads_the_model_config(monkeypatch):
    from latechunk import encoder as encoder_mod

    config = pytest.importorskip("latechunk.config")
    seen = {}

    def fake_load(name, dtype, trust_remote_code, probe):
        seen.update(name=name, dtype=dtype, trust_remote_code=trust_remote_code)
        return minilm_loaded()

    monkeypatch.setattr(encoder_mod.LoadedModel, "load", staticmethod(fake_load))
    enc = Encoder.from_config(config.ModelConfig(name="x", device="cpu", batch_tokens=4096), dtype="float16")
    assert seen == {"name": "x", "dtype": torch.float16, "trust_remote_code": False}
    assert enc.batch_tokens == 4096 and enc.dtype == torch.float16 and str(enc.device) == "cpu"


def test_batch_budget_defaults_by_device():
    """issue 15: 4,096 tokens a batch on the CPU (16,384 was 1.3x slower in fp32, results/peers.md), 16,384 on a
    GPU; a budget asked for is kept."""
    from latechunk.encoder import CPU_BATCH_TOKENS, GPU_BATCH_TOKENS, default_batch_tokens

    assert (CPU_BATCH_TOKENS, GPU_BATCH_TOKENS) == (4096, 16384)
    assert default_batch_tokens(torch.device("cpu")) == 4096
    assert default_batch_tokens(torch.device("cuda", 0)) == default_batch_tokens(torch.device("mps")) == 16384
    assert minilm_encoder().batch_tokens == 4096 and minilm_encoder(batch_tokens=1000).batch_tokens == 1000
    from latechunk.config import ModelConfig

    assert Encoder.from_config(ModelConfig(device="cpu")).batch_tokens == 4096


# --- cases BR-012..BR-014 (../shared/cases/README.md) ----------------------------------------------------------


@pytest.mark.parametrize("prefix", ["", "passage: "])
def test_br012_macro_windows_are_proper_model_inputs(prefix):
    enc = minilm_encoder(max_length=512, document_prompt=prefix)
    rec = ForwardRecorder(enc)
    res = embed([Document("notes", NOTES)], enc, PipelineConfig((SENT0,), macro_window_overlap=64))
    tok = res.tokenizations[0]
    assert len(rec.rows) >= 4
    prefix_ids = enc.tokenizer.prefix_ids
    assert bool(prefix_ids) == bool(prefix)
    cls, sep = enc.hf_tokenizer.cls_token_id, enc.hf_tokenizer.sep_token_id
    for row in rec.rows:
        assert len(row) <= 512
        assert row[0] == cls and row[1 : 1 + len(prefix_ids)] == prefix_ids and row[-1] == sep
    states = enc.token_states([tok])[0]
    assert states.shape[0] == len(tok.input_ids)
    b = next(iter(res.runs.values())).boundaries[0]
    assert len(b) == 120
    frame = np.flatnonzero(tok.special_tokens_mask)
    for i, ((a, e), (cs, ce)) in enumerate(zip(b.token_spans.tolist(), b.char_spans.tolist()), 1):
        assert not ((frame >= a) & (frame < e)).any()
        assert NOTES[cs:ce].strip() == f"Note {i}: the lamp in room {i} was switched off at dusk."
    assert next(iter(res.runs.values())).vectors["late"].vectors.shape == (120, enc.dim)


def test_br013_no_silent_truncation():
    enc = minilm_encoder(max_length=512)
    res = embed([Document("notes", NOTES)], enc, PipelineConfig((SENT0,)))
    run = next(iter(res.runs.values()))
    v = run.vectors["late"].vectors
    b = run.boundaries[0]
    assert len(v) == len(b) == 120
    assert np.isfinite(v).all() and (np.linalg.norm(v, axis=1) > 0).all()
    beyond = b.token_spans[:, 0] >= 512
    assert beyond.sum() > 50
    far = v[beyond]
    sims = far @ far.T
    np.fill_diagonal(sims, 0)
    assert sims.max() < 1 - 1e-6  # no copies among chunks past position 512
    tok = res.tokenizations[0]
    with pytest.raises(ValueError, match=rf"{len(tok)} tokens.*max_length=512"):
        enc.token_states([tok], enc.macro_window(512), allow_windows=False)
    off = embed([Document("notes", NOTES)], enc, PipelineConfig((SENT0,), long_documents="skip"))
    assert off.documents == [] and "macro windows are off" in off.skipped[0].reason


def test_br014_batch_padding_independence():
    enc = minilm_encoder(batch_tokens=4096)
    a = Document("A", "Snow fell on the quiet village. Children built a fort by the river.")
    b_text = " ".join(f"Note {i}: the lamp in room {i} was switched off at dusk." for i in range(1, 31))
    b = Document("B", b_text)
    outs = {}
    for order in (["A"], ["A", "B"], ["B", "A"]):
        docs = [a if d == "A" else b for d in order]
        res = embed(docs, enc, PipelineConfig((SENT0,), normalize=False))
        run = next(iter(res.runs.values()))
        assert [x.doc_id for x in res.documents] == order
        j = order.index("A")
        cu = run.vectors["late"].cu_chunks
        outs[tuple(order)] = run.vectors["late"].vectors[cu[j] : cu[j + 1]]
        tok = res.tokenizations[j]
        for s, e in run.boundaries[j].token_spans.tolist():
            assert e <= len(tok)  # spans index the unpadded document only
    ref = outs[("A",)]
    assert ref.shape[0] == 2
    for key, v in outs.items():
        assert np.abs(v - ref).max() <= 1e-4, key
        cos = (v * ref).sum(1) / np.linalg.norm(v, axis=1) / np.linalg.norm(ref, axis=1)
        assert cos.min() >= 0.9999


# --- oneDNN linear (issue 15: fp32 CPU speed) -----------------------------------------------------------------


def _linear_ops(fn) -> set[str]:
    """The names of the linear operators a call runs (torch profiler)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return {e.key for e in prof.key_averages() if "linear" in e.key or e.key in ("aten::addmm", "aten::mm")}


@pytest.mark.skipif(not onednn_linear_available() or platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="the default is on only on x86-64, where this PyTorch has a working oneDNN linear")
def test_onednn_linear_is_the_cpu_fp32_default_and_gives_the_stock_states():
    """The fp32 CPU forward runs nn.Linear through oneDNN (bias fused) instead of BLAS addmm; token states and
    vectors equal the stock forward's to rounding, and the model itself is left as loaded."""
    from latechunk.encoder import OneDNNLinear

    fast, stock = minilm_encoder(), minilm_encoder(onednn_linear=False)
    assert fast.onednn_linear is True and stock.onednn_linear is False
    ids = torch.randint(1000, 20000, (4, 80), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(ids)
    with torch.inference_mode():
        ops = _linear_ops(lambda: fast._run_model(ids, mask))
        assert "mkldnn::_linear_pointwise" in ops and "aten::addmm" not in ops, ops
        # a batch under ONEDNN_MIN_TOKENS (one short query) runs stock: the mode's Python dispatch would cost more
        few = ids[:1, :12]
        assert few.numel() < ONEDNN_MIN_TOKENS <= ids.numel()
        assert "aten::addmm" in _linear_ops(lambda: fast._run_model(few, torch.ones_like(few)))
        assert "aten::addmm" in _linear_ops(lambda: stock._run_model(ids, mask))
        a = fast._run_model(ids, mask).last_hidden_state
        b = stock._run_model(ids, mask).last_hidden_state
    torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    texts = ["Late chunking pools token states.", "Rivers reach the sea. " * 30]
    np.testing.assert_allclose(fast.encode(texts), stock.encode(texts), atol=1e-6)
    # outside the encoder's forward nothing is rerouted: the model is the one loaded
    with torch.inference_mode():
        assert "aten::addmm" in _linear_ops(lambda: fast.model(input_ids=ids, attention_mask=mask))
    # a call that needs gradients (training) or runs under autocast takes the stock path even inside the mode
    lin = torch.nn.Linear(8, 4)
    x = torch.randn(2, 8)
    with OneDNNLinear():
        assert lin(x).requires_grad
        with torch.no_grad():
            torch.testing.assert_close(lin(x), torch.nn.functional.linear(x, lin.weight, lin.bias))
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            assert lin(x).dtype == torch.bfloat16


def test_onednn_linear_only_where_it_applies(monkeypatch):
    """On by default only for the torch backend on the CPU in float32 without compile; $LATECHUNK_ONEDNN_LINEAR=0
    turns the default off; asking for it where it cannot run is an error, and the value is a bool or None."""
    assert minilm_encoder(dtype="bfloat16").onednn_linear is False
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    assert minilm_encoder(dtype="float32").onednn_linear is (x86 and onednn_linear_available())

    monkeypatch.setattr(platform, "machine", lambda: "aarch64")  # unmeasured on Arm: off unless asked for
    assert minilm_encoder(dtype="float32").onednn_linear is False
    if onednn_linear_available():  # asked for, it runs on any CPU
        assert minilm_encoder(dtype="float32", onednn_linear=True).onednn_linear is True
    monkeypatch.undo()
    for off in ("0", "false", "OFF", " no "):
        monkeypatch.setenv("LATECHUNK_ONEDNN_LINEAR", off)
        assert minilm_encoder(dtype="float32").onednn_linear is False
    monkeypatch.setenv("LATECHUNK_ONEDNN_LINEAR", "bogus")  # trial: any other value left it on, silently
    with pytest.raises(ValueError, match=r"\$LATECHUNK_ONEDNN_LINEAR must be .* got 'bogus'"):
        minilm_encoder(dtype="float32")
    monkeypatch.delenv("LATECHUNK_ONEDNN_LINEAR")
    with pytest.raises(ValueError, match=r"float32 without compile \(this encoder: .*dtype bfloat16\)"):
        minilm_encoder(dtype="bfloat16", onednn_linear=True)
    with pytest.raises(TypeError, match="onednn_linear"):
        minilm_encoder(onednn_linear="yes")


@pytest.mark.skipif(not onednn_linear_available(), reason="this PyTorch has no oneDNN linear")
@pytest.mark.filterwarnings("ignore:TF32 acceleration on top of oneDNN")
def test_onednn_linear_leaves_every_call_it_cannot_take_to_pytorch():
    """Review: a 0-d bias was dropped (the result off by the bias), a (1,) bias or an input of the wrong width gave
    oneDNN's "could not create a primitive descriptor", input= as a keyword raised IndexError, and
    torch.backends.mkldnn.flags(enabled=False) was ignored. Each now runs PyTorch's own linear (its result, or its
    error); a call the mode takes still goes to oneDNN."""
    from torch.nn.functional import linear

    from latechunk.encoder import OneDNNLinear

    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(6, 8, generator=g), torch.randn(4, 8, generator=g)

    def ops_and_result(fn):
        out = {}
        names = _linear_ops(lambda: out.setdefault("y", fn()))
        return names, out["y"]

    with torch.no_grad(), OneDNNLinear():
        for bias in (torch.tensor(3.0), torch.ones(1), torch.ones(1, 4)):
            names, y = ops_and_result(lambda b=bias: linear(x, w, b))
            assert "mkldnn::_linear_pointwise" not in names
            torch.testing.assert_close(y, x @ w.t() + bias)
        with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
            linear(torch.randn(6, 7), w)
        names, y = ops_and_result(lambda: linear(input=x, weight=w, bias=torch.ones(4)))
        assert "mkldnn::_linear_pointwise" in names
        torch.testing.assert_close(y, x @ w.t() + 1)
        with torch.backends.mkldnn.flags(enabled=False):
            names, _ = ops_and_result(lambda: linear(x, w))
            assert "mkldnn::_linear_pointwise" not in names


def test_a_model_on_nn_transformer_encoder_layer_keeps_its_fast_path():
    """Any torch function mode turns off nn.TransformerEncoderLayer's fused fast path, so the default leaves the
    mode off for such a model (asked for, it is on)."""
    from latechunk.encoder import _want_onednn_linear

    native = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(16, 2, batch_first=True), 1)
    plain = torch.nn.Sequential(torch.nn.Linear(16, 16))
    cpu = torch.device("cpu")
    assert _want_onednn_linear(None, "torch", cpu, torch.float32, False, native) is False
    want = onednn_linear_available() and platform.machine().lower() in ("x86_64", "amd64")
    assert _want_onednn_linear(None, "torch", cpu, torch.float32, False, plain) is want
    if onednn_linear_available():
        assert _want_onednn_linear(True, "torch", cpu, torch.float32, False, native) is True
