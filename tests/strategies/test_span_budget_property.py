"""Issue 36 (section 2): a chunk's token span and char span describe the same content, and the budget holds.

Under a byte-level BPE tokenizer (GPT-2 / RoBERTa style) a chunk's token span used to take in the whitespace-only
token after its text (a newline) that its char span leaves out, so ``token_end - token_start`` exceeded the budget
while the chunk text was one character. The property (:func:`tests.invariants.check_span_agreement`, also run by
``check_boundaries``): no token of a span lies wholly outside its char span (whitespace or zero-width tokens
strictly inside it excepted), every content token overlapping the char span is in the token span, and
``token_end - token_start <= budget`` unless the span is the tokens of one character (the documented case,
``latechunk.strategies._common.PieceSplitter``). Checked for every strategy under WordPiece (the bundled MiniLM),
byte-level BPE (trimmed and untrimmed offsets) and Unigram (tiny ones trained by ``tests/models.py``), with
budgets 1, 2 and 4, on texts drawn from words, newlines, runs of spaces, markdown headings, punctuation, code and
unicode.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from latechunk.strategies import get_strategy
from latechunk.strategies._common import allowed_cuts, content_offsets
from latechunk.tokenize import char_spans_from_token_spans, content_tokens
from latechunk.types import Document
from tests.invariants import check_boundaries, check_span_agreement
from tests.models import tiny_document_tokenizer

KINDS = ["wordpiece", "bpe", "bpe-untrimmed", "unigram"]
BUDGETS = [1, 2, 4]
#: strategy name -> the SPEC of budget ``m`` (None: no budget; sentence_window counts sentences, not tokens)
SPECS = {
    "fixed": "fixed:size={m}",
    "fixed-overlap": "fixed:size={m},overlap={o}",
    "recursive": "recursive:max_tokens={m}",
    "heading": "heading:max_tokens={m}",
    "sentence_window": "sentence_window:window=1",
    "semantic": "semantic:max_tokens={m},min_tokens=0",
    "code": "code:max_tokens={m},language=python",
}
EXAMPLES = int(os.environ.get("LATECHUNK_SPAN_EXAMPLES", "20"))

# fmt: off
FRAGMENTS = [
    "word", "Owls", "hunt at night", "x", "é", "naïve", "日本語", "한국어", "😀", "👍🏽", "ﬁ",
    " ", "  ", "   ", "\t", "\n", "\n\n", "\n\n\n", "\r\n", " \n", "\n  \n", "\u3000", "\u00a0",
    "# Title\n", "## Sub\n", "### Fees\n", "#\n", "Head\n====\n", "- item\n", "> quote\n", "```\ncode\n```\n",
    ".", ",", "!", "?", ";", "...", "Dr. Smith.", "It rained. ", "(a)", "--", "|a|b|\n",
    "\x00", "\x07", "\u200b", "\ufeff", "e\u0301",
    "def f():\n    return 1\n", "class A:\n    pass\n", "x = 1  # note\n",
]
# fmt: on
texts = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4)), min_size=1, max_size=24).map("".join)


def _embed(doc, tok, spans):
    """A fake sentence embedder: a hashed bag of each span's token ids (dim 16)."""
    out = np.zeros((len(spans), 16), dtype=np.float32)
    for i, (a, b) in enumerate(np.asarray(spans).tolist()):
        np.add.at(out[i], tok.input_ids[a:b] % 16, 1.0)
    return out


def _check(kind: str, name: str, budget: int, text: str, markdown: bool = False) -> None:
    spec = SPECS[name].format(m=budget, o=budget // 2)
    doc = Document("case.md" if markdown else "case", text, {"markdown": markdown})
    tok = tiny_document_tokenizer(kind)(doc)
    b = get_strategy(spec).split(doc, tok, _embed)
    limit = None if name == "sentence_window" else budget
    check_span_agreement(text, tok, b.token_spans, b.char_spans, limit)
    check_boundaries(text, tok, b, max_tokens=limit)
    if len(b):  # a reader that has only the token spans (verify, a chunk table) finds the same char spans
        np.testing.assert_array_equal(char_spans_from_token_spans(text, tok, b.token_spans), b.char_spans)


@pytest.mark.parametrize("name", list(SPECS))
def test_token_span_does_not_absorb_a_trailing_newline_token_under_byte_level_bpe(name):
    """The reported case: "a\\nb" under trimmed byte-level BPE is three tokens ``a``, ``\\n``, ``b``; with a budget
    of 1 the first chunk is ``a`` in both spans (its token span used to be ``a\\n``: 2 tokens, over budget)."""
    text = "a\nb"
    tok = tiny_document_tokenizer("bpe")(text)
    assert tok.offsets[tok.content_start : tok.content_end].tolist() == [[0, 1], [1, 2], [2, 3]]
    _check("bpe", name, 1, text)
    if name == "sentence_window":  # one sentence: one chunk "a\nb", the newline token inside it
        return
    b = get_strategy(SPECS[name].format(m=1, o=0)).split(Document("case", text), tok, _embed)
    assert b.char_spans.tolist()[0] == [0, 1]
    assert b.token_spans.tolist()[0] == [tok.content_start, tok.content_start + 1]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(SPECS))
@pytest.mark.parametrize("budget", BUDGETS)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, markdown=st.booleans())
def test_token_span_agrees_with_char_span_within_the_budget(kind, name, budget, text, markdown):
    """Every strategy, every tokenizer family, budgets 1, 2 and 4: token span and char span hold the same content
    and the budget holds except for one character's tokens."""
    _check(kind, name, budget, text, markdown)


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(SPECS))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, markdown=st.booleans(), budget=st.sampled_from(BUDGETS))
def test_token_span_agrees_with_char_span_within_the_budget_long_hunt(kind, name, text, markdown, budget):
    """The same property with many more examples (``pytest -m slow``)."""
    _check(kind, name, budget, text, markdown)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=4 * EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, budget=st.sampled_from(BUDGETS + [64]))
def test_semantic_cut_points_hold_the_trimmed_chunk_ends_with_every_tokenizer(kind, text, budget):
    """The pipeline pools ``semantic`` chunks from sums between its cut points: with whitespace tokens left out of
    the token spans, every chunk start and end is still one of them, under every tokenizer family."""
    strategy = get_strategy(f"semantic:max_tokens={budget},min_tokens=0")
    doc = Document("case", text)
    tok = tiny_document_tokenizer(kind)(doc)
    b = strategy.split(doc, tok, _embed)
    points = strategy.cut_points(doc, tok)
    assert points.dtype == np.int64 and (np.diff(points) > 0).all()
    assert set(b.token_spans.reshape(-1).tolist()) <= set(points.tolist())


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("size", BUDGETS + [7])
@settings(max_examples=3 * EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts)
def test_fixed_counts_no_whitespace_token_it_leaves_out(kind, size, text):
    """``fixed`` (no overlap) fills ``size`` with the tokens its chunks hold: a whitespace token left out of a
    chunk's token span does not count, so no chunk could also hold the next chunk's first content tokens (up to
    the next allowed cut) within ``size``."""
    doc = Document("case", text)
    tok = tiny_document_tokenizer(kind)(doc)
    b = get_strategy(f"fixed:size={size}").split(doc, tok)
    check_span_agreement(text, tok, b.token_spans, b.char_spans, size)
    c0 = tok.content_start
    offs = content_offsets(tok)
    content = content_tokens(text, tok)
    allowed = allowed_cuts(offs, content)
    mask = content.mask
    for (a, _), (a2, b2) in zip(b.token_spans.tolist(), b.token_spans[1:].tolist()):
        u = next(p for p in range(a2 - c0 + 1, len(mask) + 1) if allowed[p])  # the next cut after a2's start
        last = max(p for p in range(u) if mask[p])  # the last content token before it
        assert last + 1 - (a - c0) > size, (text, b.token_spans.tolist(), b.texts(text))
