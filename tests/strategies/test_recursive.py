"""latechunk/strategies/recursive.py: the ``recursive`` strategy's invariants (budget, overlap), the cases BR-001
(offsets of repeated sentences), BR-003 (separator-free text: bounded work) and BR-005 (CRLF blank lines) of
``../shared/cases/README.md``, and headings and table headers kept with what follows them. The rules every strategy
holds: ``test_common.py``."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from latechunk.strategies import get_strategy
from latechunk.strategies._common import PieceSplitter
from latechunk.strategies.recursive import Recursive
from latechunk.types import Document
from tests.invariants import check_boundaries
from tests.strategies.strategy_helpers import (
    SETTINGS,
    _split,
    handed_out,
    spans,
    split,
    stripped_spans,
    texts,
)

# --- properties -----------------------------------------------------------------------------------------------


@SETTINGS
@given(text=texts, max_tokens=st.integers(1, 40), data=st.data())
def test_recursive_invariants(minilm_tokenizer, text, max_tokens, data):
    overlap = data.draw(st.integers(0, max_tokens - 1))
    tok, b = _split(Recursive(max_tokens=max_tokens, overlap=overlap), text, minilm_tokenizer)
    check_boundaries(text, tok, b, max_tokens=max_tokens, chunk_texts=handed_out(Document("d", text), b))
    ts = b.token_spans
    assert (np.maximum(ts[:-1, 1] - ts[1:, 0], 0) <= overlap).all()


# --- BR-001 offset-mismatch ------------------------------------------------------------------------------------


def test_br001_repeated_sentences_recursive_offsets(minilm_tokenizer):
    text = "Keep it simple. " * 6
    assert len(text) == 96
    _, b = split("recursive:chunk_size=8,chunk_overlap=0", text, minilm_tokenizer)
    assert spans(b.char_spans) == [(0, 31), (32, 63), (64, 95)]
    assert all(t == "Keep it simple. Keep it simple." for t in b.texts(text))
    assert len(set(spans(b.char_spans))) == len(b)


# --- BR-003 overlap-infinite-loop ------------------------------------------------------------------------------
# (bad size/overlap pairs raise in the constructor: test_br003_bad_size_overlap_raise_naming_both_values below)


@pytest.mark.parametrize(
    "text",
    [
        # the case: one 640-char word; BERT WordPiece maps a word over 100 chars to one [UNK]
        "9f3b7c1e" * 80,
        "9f3b7c1e" * 12,  # same kind, short enough to be wordpieces: the token-level fallback does the work
        " ".join(["9f3b7c1e" * 12] * 20),
    ],
)
def test_br003_separator_free_text_returns_fast(minilm_tokenizer, monkeypatch, text):
    """The splitter's work is bounded by the document's size (counted, not timed): at most one ``pieces`` call
    per level and content token; a loop that makes no progress fails at the bound instead of hanging."""
    doc = Document("case", text)
    tok = minilm_tokenizer(doc)
    bound = len(PieceSplitter.LEVELS) * (tok.n_content + 1)
    calls = []
    inner = PieceSplitter.pieces

    def counted(self, *args, **kwargs):
        calls.append(args)
        assert len(calls) <= bound, f"more than {bound} pieces() calls for {tok.n_content} tokens"
        return inner(self, *args, **kwargs)

    monkeypatch.setattr(PieceSplitter, "pieces", counted)
    strategy = get_strategy("recursive:chunk_size=16,chunk_overlap=4")
    b = strategy.split(doc, tok)
    assert calls  # the counter saw the splitter
    check_boundaries(text, tok, b, chunk_texts=handed_out(doc, b))
    ts = spans(b.token_spans)
    assert all(e - a <= 16 for a, e in ts)
    assert all(a1 > a0 for (a0, _), (a1, _) in pairwise(ts))
    assert all(e0 - a1 <= 4 for (_, e0), (a1, _) in pairwise(ts))
    held = np.zeros(len(tok), dtype=bool)
    for a, e in ts:
        held[a:e] = True
    assert held[tok.content_start : tok.content_end].all()
    if tok.n_content > 16:
        assert len(b) > 1


# --- BR-005 crlf-line-endings ----------------------------------------------------------------------------------

CRLF = "Apples grow on trees.\r\n\r\nTrains run on rails.\r\n\r\nRivers flow to the sea."


def test_br005_crlf_blank_lines_split_paragraphs(minilm_tokenizer):
    assert len(CRLF) == 72
    _, b = split("recursive:chunk_size=8", CRLF, minilm_tokenizer)
    assert len(b) == 3
    assert stripped_spans(CRLF, b) == [(0, 21), (25, 45), (49, 72)]
    for s, e in b.char_spans.tolist():
        for cut in (s, e):
            assert not (0 < cut < len(CRLF) and CRLF[cut - 1] == "\r" and CRLF[cut] == "\n")
    lf = CRLF.replace("\r\n", "\n")
    _, b_lf = split("recursive:chunk_size=8", lf, minilm_tokenizer)
    assert [t.strip() for t in b_lf.texts(lf)] == [t.strip() for t in b.texts(CRLF)]


# --- issue 10, fault 8: headings and table headers belong to what follows -----------------------------------------

HEADED = ("Some intro words here and there, enough of them to fill a chunk.\n\n## Prices\n\n"
          "The table below lists them.\n\n| Part | Unit | Price |\n|---|---|---|\n| bolt | box | 3.50 |\n"
          "| nut | bag | 1.20 |\n| gear | each | 9.99 |\n")


@pytest.mark.parametrize("max_tokens", [20, 24, 30, 40])
def test_recursive_keeps_a_heading_and_a_table_header_with_what_follows(minilm_tokenizer, max_tokens):
    """recursive never ends a chunk with a heading line or a table's header/delimiter rows when they fit at the
    start of the next chunk with what follows them."""
    tok, b = split(f"recursive:max_tokens={max_tokens}", HEADED, minilm_tokenizer)
    check_boundaries(HEADED, tok, b, max_tokens=max_tokens)
    chunks = [HEADED[s:e] for s, e in b.char_spans.tolist()]
    assert not any(c.endswith("## Prices") for c in chunks), chunks
    header = "| Part | Unit | Price |\n|---|---|---|"
    assert not any(c.endswith((header, "| Part | Unit | Price |")) for c in chunks if c != header), chunks
    if max_tokens >= 30:  # header, delimiter and the first row fit one chunk
        assert any(c.startswith(header + "\n| bolt") for c in chunks), chunks


def test_recursive_sticky_pieces_fall_back_when_they_do_not_fit(minilm_tokenizer):
    """A heading that cannot fit with the next piece stays where the budget puts it (never over budget)."""
    text = "Intro words.\n\n# A heading of several words here\n\n" + "word " * 40
    tok, b = split("recursive:max_tokens=12", text, minilm_tokenizer)
    check_boundaries(text, tok, b, max_tokens=12)
