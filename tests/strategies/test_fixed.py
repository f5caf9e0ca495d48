"""latechunk/strategies/fixed.py: the ``fixed`` strategy's invariants against a plain reference loop, a character
kept whole, and the cases BR-001 (offsets of repeated words) and BR-002 (no duplication at window edges) of
``../shared/cases/README.md``. The rules every strategy holds: ``test_common.py``."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from latechunk.strategies._common import allowed_cuts, content_offsets
from latechunk.strategies.fixed import Fixed
from latechunk.types import Document
from tests.invariants import check_boundaries
from tests.strategies.strategy_helpers import SETTINGS, _split, handed_out, spans, split, texts


def fixed_ref(n: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Reference fixed windows over n content tokens, content-relative: a plain loop."""
    out, start = [], 0
    while n > 0:
        out.append((start, min(start + size, n)))
        if start + size >= n:
            break
        start += size - overlap
    return out


# --- properties -----------------------------------------------------------------------------------------------


@SETTINGS
@given(text=texts, size=st.integers(1, 24), data=st.data())
def test_fixed_invariants(minilm_tokenizer, text, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    tok, b = _split(Fixed(size=size, overlap=overlap), text, minilm_tokenizer)
    check_boundaries(text, tok, b, max_tokens=size, chunk_texts=handed_out(Document("d", text), b))
    if allowed_cuts(content_offsets(tok)).all():
        spans_new = (b.token_spans - tok.content_start).tolist()
        assert [tuple(s) for s in spans_new] == fixed_ref(tok.n_content, size, overlap)


# --- examples -------------------------------------------------------------------------------------------------


def test_fixed_keeps_one_character_whole(minilm_tokenizer):
    """A Hangul syllable is several wordpieces with the same offsets; no window edge falls inside it."""
    text = "한국어 텍스트"
    tok, b = _split(Fixed(size=2, overlap=1), text, minilm_tokenizer)
    check_boundaries(text, tok, b, chunk_texts=handed_out(Document("d", text), b))
    offs = tok.offsets
    for a, e in b.token_spans.tolist():
        assert a == tok.content_start or offs[a, 0] > offs[a - 1, 0]


# --- BR-001 offset-mismatch ------------------------------------------------------------------------------------


def test_br001_repeated_words_fixed_offsets(minilm_tokenizer):
    text = "echo echo echo echo echo echo"
    tok, b = split("fixed:chunk_size=2,chunk_overlap=1", text, minilm_tokenizer)
    assert len(tok) == 8 and tok.n_content == 6  # "echo" is one wordpiece
    assert len(b) == 5
    assert spans(b.char_spans) == [(0, 9), (5, 14), (10, 19), (15, 24), (20, 29)]
    assert spans(b.token_spans) == [(1, 3), (2, 4), (3, 5), (4, 6), (5, 7)]
    assert len(set(spans(b.char_spans))) == len(b)


# --- BR-002 boundary-duplication -------------------------------------------------------------------------------

TWELVE = "one two three four five six seven eight nine ten eleven twelve"


def test_br002_zero_overlap_no_duplication(minilm_tokenizer):
    assert len(TWELVE) == 62
    tok, b = split("fixed:chunk_size=4,chunk_overlap=0", TWELVE, minilm_tokenizer)
    assert tok.n_content == 12
    assert spans(b.char_spans) == [(0, 18), (19, 39), (40, 62)]
    assert b.texts(TWELVE) == ["one two three four", "five six seven eight", "nine ten eleven twelve"]
    assert spans(b.token_spans) == [(1, 5), (5, 9), (9, 13)]
    seen = np.concatenate([np.arange(a, e) for a, e in spans(b.token_spans)])
    assert len(seen) == len(set(seen.tolist()))  # no content token in two spans


def test_br002_overlap_one_no_trailing_contained_chunk(minilm_tokenizer):
    _, b = split("fixed:chunk_size=4,chunk_overlap=1", TWELVE, minilm_tokenizer)
    ts = spans(b.token_spans)
    assert ts == [(1, 5), (4, 8), (7, 11), (10, 13)]
    assert spans(b.char_spans) == [(0, 18), (14, 33), (28, 48), (45, 62)]
    for (a0, e0), (a1, e1) in pairwise(ts):
        assert e0 - a1 == 1  # consecutive spans share exactly one token
        assert not (a0 <= a1 and e1 <= e0)  # no span inside the one before
    assert all(e - a <= 4 for a, e in ts)
