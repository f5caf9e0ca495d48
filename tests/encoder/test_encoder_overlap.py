"""Issue 15 part 3, "no wasted overlap": whatever the macro-window overlap, each token goes through the model once
per macro window that holds it and nothing more, each document is tokenized once (its prompt included), and each
forward batch is pooled once."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from latechunk.config import PipelineConfig
from latechunk.encoder import _set_attention, attention_implementation
from latechunk.pipeline import embed
from latechunk.pipeline import sums as pipeline_mod
from latechunk.tokenize import DocumentTokenizer
from latechunk.types import Document
from tests.models import ForwardRecorder, minilm_encoder

NOTES = " ".join(f"Note {i}: the lamp in room {i} was switched off at dusk." for i in range(1, 61))
FIVE = ("fixed:size=32", "recursive", "heading", "sentence_window", "semantic")


def _docs() -> list[Document]:
    return [Document("long", "# Notes\n\n" + NOTES), Document("short", "A short note about a lamp."),
            Document("mid", NOTES[:700])]


def _planned_rows(enc, toks, mw) -> list[list[int]]:
    """Every model input of the plan, once: a document's whole tokenization, or one row per macro window."""
    return [r.tolist() for t in toks for r in enc.model_inputs(t, mw)[0]]


@pytest.mark.parametrize("overlap", [0, 8, 40])
def test_each_token_goes_through_the_model_once_per_window(overlap):
    enc = minilm_encoder(batch_tokens=256)
    mw = enc.macro_window(96, overlap)
    toks = [enc.tokenizer(d) for d in _docs()]
    rec = ForwardRecorder(enc)
    enc.token_states(toks, mw)
    planned = _planned_rows(enc, toks, mw)
    assert sorted(rec.rows) == sorted(planned)  # each planned input exactly once, no other
    # tokens through the model == the plan's window tokens: overlap tokens once per window that holds them
    n_frame = enc.tokenizer.n_frame
    window_tokens = sum(w.end - w.start + n_frame for t in toks for w in mw.plan(t.n_content, n_frame))
    assert enc.stats["tokens"] == window_tokens == sum(len(r) for r in planned)
    # with no overlap asked, the only shared tokens are those of a last window pushed back to end at the
    # document's end (MacroWindow.plan keeps every window full): each of them once more, nothing else
    pushed = sum(max(0, ws[-2].end - ws[-1].start) for ws in (mw.plan(t.n_content, n_frame) for t in toks)
                 if len(ws) > 1)
    frames = n_frame * sum(len(mw.plan(t.n_content, n_frame)) - 1 for t in toks)
    if overlap == 0:
        assert window_tokens == sum(len(t) for t in toks) + frames + pushed
    # padded tokens: each forward batch's rows times its longest row, as the model was given them
    assert enc.stats["forward_calls"] == rec.calls == len(rec.shapes)
    assert enc.stats["padded_tokens"] == sum(n * longest for n, longest in rec.shapes)
    assert all(longest == max(len(r) for r in rows) for (_, longest), rows in zip(rec.shapes, _by_call(rec)))


def _by_call(rec: ForwardRecorder) -> list[list[list[int]]]:
    """The recorded rows, grouped by forward call."""
    out, at = [], 0
    for n, _ in rec.shapes:
        out.append(rec.rows[at:at + n])
        at += n
    return out


class _CountingTokenizer:
    """Counts the texts given to the Hugging Face tokenizer (``__call__``) while installed."""

    def __init__(self, monkeypatch, hf_tok) -> None:
        self.texts: list[str] = []
        cls = type(hf_tok)
        inner = cls.__call__

        def call(this, text=None, *args, **kwargs):
            self.texts.extend([text] if isinstance(text, str) else list(text or []))
            return inner(this, text, *args, **kwargs)

        monkeypatch.setattr(cls, "__call__", call)


@pytest.mark.parametrize("overlap", [0, 16])
def test_five_strategies_tokenize_once_encode_once_pool_once(monkeypatch, overlap):
    enc = minilm_encoder(batch_tokens=256, document_prompt="passage: ")
    docs = _docs()
    cfg = PipelineConfig(FIVE, modes=("late",), macro_window=96, macro_window_overlap=overlap)
    mw = enc.macro_window(96, overlap)
    toks = [enc.tokenizer(d) for d in docs]  # the reference tokenization, before counting starts
    pools: list[int] = []
    inner_add = pipeline_mod._SegmentSums.add

    def counting_add(self, batch):
        pools.append(int(batch.states.shape[0]))
        return inner_add(self, batch)

    monkeypatch.setattr(pipeline_mod._SegmentSums, "add", counting_add)
    counter = _CountingTokenizer(monkeypatch, enc.hf_tokenizer)
    rec = ForwardRecorder(enc)
    res = embed(docs, enc, cfg)
    # one tokenizer call per document text, and the prompt never tokenized again (its ids are cached)
    assert sorted(counter.texts) == sorted(d.text for d in docs)
    assert all(np.array_equal(a.input_ids, b.input_ids) for a, b in zip(res.tokenizations, toks))
    assert all(t.n_lead == len(enc.tokenizer.lead_ids) > 1 for t in res.tokenizations)
    # one late pass for all five strategies: each planned window once, tokens == the plan's window tokens
    planned = _planned_rows(enc, toks, mw)
    assert sorted(rec.rows) == sorted(planned)
    assert res.stats.tokens["late"] == sum(len(r) for r in planned)
    assert res.stats.forward_calls["late"] == rec.calls
    # each forward batch pooled once (into the segment sums, whatever the number of strategies)
    assert len(pools) == rec.calls
    assert all(run.n_chunks > 0 for run in res.runs.values())


def test_prompt_ids_are_cached_per_tokenizer(monkeypatch):
    enc = minilm_encoder(document_prompt="passage: ")
    counter = _CountingTokenizer(monkeypatch, enc.hf_tokenizer)
    tok = DocumentTokenizer(enc.hf_tokenizer, prefix="passage: ")
    built = len(counter.texts)  # the probe and the prefix, once, when the tokenizer is made
    tok.batch(["one text", "another text"])
    tok("a third")
    assert counter.texts[built:] == ["one text", "another text", "a third"]  # no prompt tokenized again


# ------------------------------------------------------------------ issue 15 part 2: the attention implementation
class _Model:
    def __init__(self, fa: bool, sdpa: bool) -> None:
        self._supports_flash_attn = fa
        self._supports_sdpa = sdpa


@pytest.mark.parametrize(("device", "dtype", "flash", "fa", "sdpa", "want"), [
    ("cuda", torch.bfloat16, True, True, True, "flash_attention_2"),
    ("cuda", torch.float16, True, True, True, "flash_attention_2"),
    ("cuda", torch.float32, True, True, True, "sdpa"),  # flash-attention needs 16-bit
    ("cuda", torch.bfloat16, False, True, True, "sdpa"),  # flash_attn not installed
    ("cuda", torch.bfloat16, True, False, True, "sdpa"),  # the model does not support it
    ("cpu", torch.bfloat16, True, True, True, "sdpa"),  # never on the CPU
    ("cpu", torch.float32, False, False, False, "eager"),
])
def test_attention_implementation_is_varlen_flash_only_where_it_can_run(device, dtype, flash, fa, sdpa, want):
    got = attention_implementation(_Model(fa, sdpa), torch.device(device), dtype, flash_attn=flash)
    assert got == want


def test_cpu_encoder_runs_sdpa_and_refused_switches_keep_the_model_as_it_is():
    enc = minilm_encoder()
    assert enc.attention == "sdpa" == enc.model.config._attn_implementation

    class Refuses(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.config = type("C", (), {"_attn_implementation": "eager"})()

        def set_attn_implementation(self, impl):
            raise ValueError("not supported")

    assert _set_attention(Refuses(), "sdpa") == "eager"
