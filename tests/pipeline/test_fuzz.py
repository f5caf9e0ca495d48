"""Fuzzing the whole path, text -> strategy -> late and naive vectors, with hypothesis.

For each of the five strategies, random parameters and random texts (markdown-ish fragments, CRLF, unicode,
control characters, empty and whitespace-only texts, long texts that need macro windows) go through
:func:`latechunk.pipeline.embed` in both modes at once, and every example must hold:

- the chunk records latechunk hands out (``latechunk.output.chunk_rows``) hold slices of the caller's own string,
  each char span exactly covered by its token span's offsets; coverage, token starts and char starts strictly
  increasing, no empty or whitespace-only chunk, spans within the size limit (``tests/invariants``);
- one vector per chunk in each mode, all finite and unit-norm; late and naive share the same boundaries.

The encoder is a tiny random BERT (1 layer, dim 32) with 64-token macro windows, so a few hundred characters
already span several windows. The default run tries ``FUZZ_EXAMPLES`` (100) examples per strategy; the ``slow``
test (CI's second step, ``pytest -m slow``) runs ``SLOW_EXAMPLES`` (1,000) per strategy, so CI stays well under 30
minutes; ``LATECHUNK_FUZZ_SLOW_EXAMPLES=10000 pytest -m slow tests/pipeline/test_fuzz.py`` is the long run recorded in
results/fuzz_slow.md. ``LATECHUNK_FUZZ_EXAMPLES`` overrides the default count.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from latechunk.config import PipelineConfig
from latechunk.encoder import Encoder
from latechunk.models import LoadedModel, ModelSettings
from latechunk.output import chunk_rows
from latechunk.pipeline import embed
from latechunk.types import Document
from tests.invariants import check_boundaries, check_chunk_rows
from tests.models import minilm_parts, tiny_bert

pytestmark = pytest.mark.usefixtures("one_thread")

FUZZ_EXAMPLES = int(os.environ.get("LATECHUNK_FUZZ_EXAMPLES", "100"))
SLOW_EXAMPLES = int(os.environ.get("LATECHUNK_FUZZ_SLOW_EXAMPLES", "1000"))

# fmt: off
FRAGMENTS = [
    " ", "  ", "\n", "\n\n", "\r\n", "\r\n\r\n", "\t", "\n   \n", "\u00a0", "\u200b", "\x00", "\x07", "\ufeff",
    "word", "echo echo", "Dr.", "Ph.D.'s", "e.g.", "U.S.", "3.14", "It rained. ", "Keep it simple. ", "why?", "...",
    "😀", "👍🏽", "🇫🇷", "中文字符", "日本語です。", "한국어", "Straße", "naïve café", "ﬁne", "e\u0301",
    "# Title\n", "## Sub\n", "Setext\n===\n", "Other\n---\n", "\n---\n", "```\n# not a heading\n```\n",
    "| a | b |\n|---|---|\n| 1 | 2 |\n", "- item\n- item two\n", "> quote\n", "    code\n",
    "9f3b7c1e" * 6, "supercalifragilisticexpialidocious", "a" * 40,
]
# fmt: on

_fragment = st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=10))
texts = st.one_of(
    st.lists(_fragment, max_size=40).map("".join),  # short, often empty
    st.lists(_fragment, min_size=15, max_size=60).map("".join),  # medium: a few 64-token macro windows
    st.lists(_fragment, min_size=60, max_size=200).map("".join),  # long: many macro windows
    st.text(min_size=1, max_size=300),
    st.sampled_from(["", " ", "\n\n", " \r\n\t ", "x", "\u200b"]),
)

# strategy parameters: each value is a hypothesis strategy drawing (spec, token limit or None)
PARAMS = {
    "fixed": st.integers(1, 40).flatmap(
        lambda n: st.integers(0, n - 1).map(lambda o: (f"fixed:size={n},overlap={o}", n))),
    "recursive": st.integers(1, 40).flatmap(
        lambda n: st.integers(0, n - 1).map(lambda o: (f"recursive:max_tokens={n},overlap={o}", n))),
    "heading": st.tuples(st.integers(1, 40), st.sets(st.integers(1, 6), min_size=1)).map(
        lambda t: (f"heading:max_tokens={t[0]},levels={'/'.join(map(str, sorted(t[1])))}", t[0])),
    "sentence_window": st.integers(0, 3).flatmap(
        lambda w: st.integers(1, 2 * w + 1).map(lambda s: (f"sentence_window:window={w},stride={s}", None))),
    "semantic": st.tuples(st.floats(0, 100), st.integers(1, 48)).flatmap(
        lambda t: st.integers(0, t[1]).map(
            lambda m: (f"semantic:percentile={t[0]!r},min_tokens={m},max_tokens={t[1]}", t[1]))),
    # the document "d" has no suffix: language "" is the recursive fallback, a named one parses the random text
    "code": st.tuples(st.integers(1, 40), st.sampled_from(["", "python", "javascript", "typescript", "go", "rust",
                                                            "java"])).flatmap(
        lambda t: st.integers(0, t[0]).map(lambda m: (f"code:max_tokens={t[0]},min_tokens={m},language={t[1]}",
                                                       t[0]))),
}


@functools.lru_cache(maxsize=1)
def tiny_encoder() -> Encoder:
    """A 1-layer random BERT (dim 32) with the bundled uncased tokenizer (the examples use 64-token macro windows)."""
    _, tok, _ = minilm_parts()
    loaded = LoadedModel("tiny-bert", tiny_bert(layers=1, heads=2), tok, ModelSettings(pooling="mean", normalize=True))
    return Encoder(loaded, device="cpu")


def check_example(spec: str, limit: int | None, text: str) -> None:
    enc = tiny_encoder()
    res = embed([Document("d", text)], enc, PipelineConfig((spec,), modes=("late", "naive"), macro_window=64,
                                                           macro_window_overlap=8))
    run = res.run(spec)
    if not res.documents:  # only texts without content tokens, or with nothing but [UNK], are skipped
        assert len(res.skipped) == 1, res.skipped
        tok = enc.tokenizer(Document("d", text))
        if "nothing the model can read" in res.skipped[0].reason:
            content = tok.input_ids[~tok.special_tokens_mask]
            assert len(content) and (content == enc.tokenizer.unk_token_id).all(), (text, content)
        else:
            assert "empty" in res.skipped[0].reason, res.skipped
            assert not text.strip() or tok.n_content == 0
        return
    (tok,), (b,), (doc,) = res.tokenizations, run.boundaries, res.documents
    rows = chunk_rows(doc, b, spec)
    check_boundaries(text, tok, b, max_tokens=limit, chunk_texts=[r["text"] for r in rows])
    check_chunk_rows({"d": text}, rows, enc.tokenizer)
    for mode in ("late", "naive"):
        cv = run.vectors[mode]
        assert cv.vectors.shape == (len(b), enc.dim) and cv.vectors.dtype == np.float32
        assert np.isfinite(cv.vectors).all()
        np.testing.assert_allclose(np.linalg.norm(cv.vectors, axis=1), 1.0, atol=1e-4)
        assert cv.chunk_index.tolist() == list(range(len(b)))


def _run(name: str, n: int) -> None:
    @settings(max_examples=n, deadline=None, database=None, print_blob=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(params=PARAMS[name], text=texts)
    def prop(params, text):
        check_example(params[0], params[1], text)

    prop()


@pytest.mark.parametrize("name", list(PARAMS))
def test_fuzz_pipeline_invariants(name):
    _run(name, FUZZ_EXAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PARAMS))
def test_fuzz_pipeline_invariants_slow(name):
    _run(name, SLOW_EXAMPLES)


def test_fuzz_covers_all_five_strategies():
    from latechunk.strategies import registry

    assert set(PARAMS) == set(registry())
