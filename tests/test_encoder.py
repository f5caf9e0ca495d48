"""Encoder: offline default model, sentence-transformers parity, macro windows, batching, long context."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from latechunk.encoder import Encoder, ModelSettings, plan_windows, resolve_model_path
from tests.models import ForwardRecorder, minilm_encoder, tiny_modernbert_encoder

LONG = " ".join(f"Note {i}: the lamp in room {i} was switched off at dusk." for i in range(1, 121))


def test_default_model_loads_offline_and_reads_st_settings(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    enc = Encoder(device="cpu")
    assert enc.dim == 384 and enc.max_length == 512
    assert enc.settings.pooling == "mean" and enc.settings.normalize is True
    assert enc.settings.max_seq_length == 256
    assert len(enc.model_hash) == 64


def test_naive_encoding_matches_sentence_transformers():
    st = pytest.importorskip("sentence_transformers")
    texts = ["hello world", "Dogs bark. Cats sleep.", "A longer sentence about late chunking and pooling."]
    ref = st.SentenceTransformer(resolve_model_path(None), device="cpu").encode(texts)
    new = minilm_encoder().encode_texts(texts)
    np.testing.assert_allclose(new, ref, atol=1e-5)


def test_missing_model_path_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        Encoder(str(tmp_path / "no_such_model"), device="cpu")


def test_bad_window_settings_raise_before_work():
    with pytest.raises(ValueError, match="exceeds the model's limit"):
        minilm_encoder(max_length=4096)
    with pytest.raises(ValueError, match="overlap"):
        minilm_encoder(window=128, window_overlap=200)


@pytest.mark.parametrize("n,cap,ov", [(10, 10, 2), (11, 10, 2), (100, 10, 3), (1000, 126, 31), (127, 126, 0)])
def test_plan_windows_tiles_and_respects_capacity(n, cap, ov):
    plan = plan_windows(n, cap, ov)
    assert plan[0][2] == 0 and plan[-1][3] == n
    for (a, b, ks, ke), nxt in zip(plan, plan[1:] + [None]):
        assert 0 <= a < b <= n and b - a <= cap and a <= ks < ke <= b
        if nxt is not None:
            assert nxt[2] == ke and nxt[0] <= b - ov  # consecutive windows overlap by at least `ov`


def test_macro_windows_keep_each_token_from_its_most_central_window():
    enc = minilm_encoder(window=128, window_overlap=32)
    tok = enc.tokenizer(LONG)
    rec = ForwardRecorder(enc)
    states = enc.token_states([tok])[0]
    assert states.shape[0] == len(tok)
    rows, plan = enc.model_inputs(tok)
    assert len(plan) > 5 and all(len(r) <= 128 for r in rec.rows)
    # recompute each window alone and check the stitched rows come from the planned window
    with torch.inference_mode():
        for (a, b, ks, ke), row in zip(plan, rows):
            alone = enc.model(input_ids=torch.tensor(row)[None]).last_hidden_state[0]
            got = states[tok.n_lead + ks : tok.n_lead + ke]
            torch.testing.assert_close(got, alone[tok.n_lead + ks - a : tok.n_lead + ke - a], atol=1e-5, rtol=1e-5)


def test_window_longer_than_document_equals_single_pass():
    enc = minilm_encoder()
    tok = enc.tokenizer("Snow fell on the quiet village. Children built a fort by the river.")
    win = enc.token_states([tok], window=128)[0]
    with torch.inference_mode():
        single = enc.model(input_ids=torch.tensor(tok.input_ids)[None]).last_hidden_state[0]
    torch.testing.assert_close(win, single, atol=1e-6, rtol=1e-6)


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
    text = " ".join(f"Note {i}: the lamp in room {i} was switched off at dusk." for i in range(1, 430))
    tok = enc.tokenizer(text)
    assert 6000 <= len(tok) <= 8192
    rec = ForwardRecorder(enc)
    states = enc.token_states([tok])[0]
    assert rec.calls == 1 and len(rec.rows) == 1 and len(rec.rows[0]) == len(tok)
    assert states.shape == (len(tok), enc.dim) and torch.isfinite(states).all()


def test_model_settings_defaults_for_plain_hf_folder(tmp_path):
    s = ModelSettings.read(str(tmp_path))
    assert s.pooling == "mean" and s.normalize is False and s.query_prompt == ""
