"""Chunk-aligned macro windows (issue 38): ``MacroWindow.plan_aligned`` and ``PipelineConfig(macro_window_align=
"chunks")``: a chunk that fits a window is pooled from the states of one model input, not two cut at an arbitrary
token; the keep ranges still tile the document; every strategy of the pass is served."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from latechunk.config import PipelineConfig
from latechunk.macro_window import MacroWindow
from latechunk.pipeline import embed
from latechunk.types import Document
from tests.models import minilm_encoder

TEXT = " ".join(f"Sentence number {i} says that the value of item {i} is {i * 7} units." for i in range(40))


@pytest.fixture(scope="module")
def encoder():
    return minilm_encoder()


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 2000), size=st.integers(20, 300), overlap_frac=st.floats(0, 0.9),
       ends=st.lists(st.integers(-5, 2100), max_size=60))
def test_aligned_plan_tiles_and_stops_at_ends(n, size, overlap_frac, ends):
    n_frame = 2
    cap = size - n_frame
    mw = MacroWindow(size, int(overlap_frac * (cap - 1)))
    plan = mw.plan(n, n_frame, ends=ends)
    assert plan[0].keep_start == 0 and plan[-1].keep_end == n
    for a, b in itertools.pairwise(plan):
        assert a.keep_end == b.keep_start
    inside = {e for e in ends if 0 < e < n}
    for i, w in enumerate(plan):
        assert 0 <= w.start <= w.keep_start < w.keep_end <= w.end <= n
        assert w.end - w.start <= cap
        if i < len(plan) - 1:
            # a window stops at an end when one lies in its reach, else it keeps all it can
            reach = [e for e in inside if w.keep_start < e <= w.keep_start + cap - mw.overlap and e <= w.end]
            assert (w.keep_end == max(reach)) if reach else (w.keep_end - w.keep_start == min(cap - mw.overlap,
                                                                                               w.end - w.keep_start))


def test_no_ends_in_reach_falls_back_to_token_windows():
    plan = MacroWindow(34, 0).plan(100, 2, ends=[])
    assert [(w.keep_start, w.keep_end) for w in plan][:2] == [(0, 32), (32, 64)]


def test_config_validates_align():
    assert PipelineConfig(("fixed",)).macro_window_align == "tokens"
    with pytest.raises(ValueError, match="macro_window_align"):
        PipelineConfig(("fixed",), macro_window_align="sentences")


def _single_window_mean(encoder, tok, plan, span):
    """The mean of span's token states computed from the one window that keeps all of it."""
    (a, b) = span
    cs = tok.content_start
    for w in plan:
        if w.keep_start + cs <= a and b <= w.keep_end + cs:
            row = np.concatenate([tok.input_ids[: tok.n_lead], tok.input_ids[cs + w.start: cs + w.end],
                                  tok.input_ids[tok.content_end:]])
            states, _ = encoder._forward_packed([row])
            rows = states[tok.n_lead + a - cs - w.start: tok.n_lead + b - cs - w.start]
            return torch.nn.functional.normalize(rows.mean(0), dim=0).numpy()
    return None


def test_each_chunk_pooled_from_one_window(encoder):
    doc = Document("d", TEXT)
    cfg = PipelineConfig(("recursive:max_tokens=40",), modes=("late",), macro_window=64, macro_window_align="chunks")
    res = embed([doc], encoder, cfg)
    run = res.run("recursive:max_tokens=40")
    tok, b = res.tokenizations[0], run.boundaries[0]
    plan = encoder.macro_window(64).plan(tok.n_content, tok.n_lead + tok.n_trail,
                                         ends=b.token_spans[:, 1].astype(np.int64) - tok.content_start)
    assert len(plan) > 3
    vecs = run.vectors["late"].vectors
    checked = 0
    for i, span in enumerate(b.token_spans.tolist()):
        ref = _single_window_mean(encoder, tok, plan, span)
        assert ref is not None, f"chunk {i} {span} straddles two windows of {plan}"
        np.testing.assert_allclose(vecs[i], ref, atol=2e-5)
        checked += 1
    assert checked == len(b.token_spans)
    # token-aligned windows cut some of these chunks (so the check above can fail)
    token_plan = encoder.macro_window(64).plan(tok.n_content, tok.n_lead + tok.n_trail)
    cuts = [w.keep_end + tok.content_start for w in token_plan[:-1]]
    assert any(a < c < e for a, e in b.token_spans.tolist() for c in cuts)


def test_shared_pass_aligns_where_every_strategy_ends(encoder):
    doc = Document("d", TEXT)
    specs = ("recursive:max_tokens=40", "sentence_window:window=0")
    res = embed([doc], encoder, PipelineConfig(specs, modes=("late",), macro_window=64, macro_window_align="chunks"))
    alone = embed([doc], encoder, PipelineConfig(specs[:1], modes=("late",), macro_window=64,
                                                 macro_window_align="chunks"))
    # sentence ends include every recursive chunk end here, so the shared pass has the same windows
    np.testing.assert_allclose(res.run(specs[0]).vectors["late"].vectors, alone.run(specs[0]).vectors["late"].vectors,
                               atol=1e-6)
    tokens = embed([doc], encoder, PipelineConfig(specs[:1], modes=("late",), macro_window=64))
    assert np.abs(tokens.run(specs[0]).vectors["late"].vectors - alone.run(specs[0]).vectors["late"].vectors).max() > 1e-3
