"""Cases from ../shared/cases/README.md that concern encoding, pooling and export (BR-004, BR-011..BR-015)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from latechunk.config import PipelineConfig
from latechunk.index import build_index
from latechunk.pipeline import embed, late_vectors
from latechunk.strategies import get_strategy
from latechunk.types import Document
from tests.models import ForwardRecorder, minilm_encoder

STRATEGIES = ["fixed", "recursive", "heading", "sentence_window", "semantic"]
NOTES = " ".join(f"Note {i}: the lamp in room {i} was switched off at dusk." for i in range(1, 121))
SENT0 = "sentence_window:window=0"


@pytest.fixture(scope="module")
def encoder():
    return minilm_encoder()


@pytest.mark.parametrize("text", ["", "  \n\t\n  "])
def test_br004_empty_input_through_all_strategies_late_and_export(text, encoder):
    rec = ForwardRecorder(encoder)
    tok = encoder.tokenizer(text)
    for name in STRATEGIES:
        b = get_strategy(name).split(Document("d", text), tok, lambda d, t, s: np.zeros((len(s), 4), np.float32))
        assert b.char_spans.shape == (0, 2) and b.token_spans.shape == (0, 2)
        v = late_vectors([torch.zeros((len(tok), encoder.dim))], [tok], [b])
        assert v.shape == (0, encoder.dim) and v.dtype == np.float32
    res = embed([Document("d", text)], encoder, PipelineConfig(tuple(STRATEGIES)))
    assert rec.calls == 0  # a zero-chunk document never reaches the encoder
    assert [s.doc_id for s in res.skipped] == ["d"]
    for run in res.runs.values():
        assert run.vectors["late"].vectors.shape == (0, encoder.dim)
        assert build_index(run.vectors["late"].vectors, dim=encoder.dim).ntotal == 0


def test_br004_trailing_whitespace_gives_one_chunk_through_late_encoding(encoder):
    text = "alpha beta gamma   \n\n   "
    res = embed([Document("d", text)], encoder, PipelineConfig(tuple(STRATEGIES)))
    for spec, run in res.runs.items():
        (b,) = run.boundaries
        assert len(b) == 1 and b.char_spans[0, 1] <= 16, spec
        assert all(t.strip() for t in b.texts(text))
        assert run.vectors["late"].vectors.shape == (1, encoder.dim)


def test_br011_special_tokens_never_in_pooled_span(encoder):
    text = "Dogs bark. Cats sleep."
    res = embed([Document("d", text)], encoder, PipelineConfig((SENT0,), normalize=False))
    run = next(iter(res.runs.values()))
    tok = res.tokenizations[0]
    b = run.boundaries[0]
    assert b.char_spans.tolist() == [[0, 10], [11, 22]]
    assert b.token_spans.tolist() == [[1, 4], [4, 7]]
    for a, e in b.token_spans.tolist():
        assert not tok.special_tokens_mask[a:e].any() and a > 0 and e <= 7
    with torch.inference_mode():
        states = encoder.model(input_ids=torch.tensor(tok.input_ids)[None]).last_hidden_state[0]
    ref = np.stack([states[a:e].mean(0).numpy() for a, e in b.token_spans.tolist()])
    np.testing.assert_allclose(run.vectors["late"].vectors, ref, atol=1e-6)


@pytest.mark.parametrize("prefix", ["", "passage: "])
def test_br012_macro_windows_are_proper_model_inputs(prefix):
    from latechunk.config import PipelineConfig

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
        enc.token_states([tok], allow_windows=False)
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
