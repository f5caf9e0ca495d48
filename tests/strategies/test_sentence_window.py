"""latechunk/strategies/sentence_window.py: the ``sentence_window`` strategy's invariants (chunks on sentence
boundaries), and the strategy side of BR-009 (abbreviations) and BR-021 (pysbd's placeholder characters) of
``../shared/cases/README.md`` (the segmenter itself: ``tests/sentences/test_sentences.py``). The rules every strategy
holds: ``test_common.py``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from latechunk.sentences import PYSBD_PLACEHOLDERS, SentenceSegmenter
from latechunk.strategies.sentence_window import SentenceWindow
from latechunk.types import Document
from tests.invariants import check_boundaries
from tests.strategies.strategy_helpers import (
    SETTINGS,
    CountingEmbedder,
    _split,
    handed_out,
    split,
    stripped_spans,
    texts,
)

# --- properties -----------------------------------------------------------------------------------------------


@SETTINGS
@given(text=texts, window=st.integers(0, 3), data=st.data())
def test_sentence_window_invariants(minilm_tokenizer, text, window, data):
    stride = data.draw(st.integers(1, 2 * window + 1))
    tok, b = _split(SentenceWindow(window=window, stride=stride), text, minilm_tokenizer)
    check_boundaries(text, tok, b, chunk_texts=handed_out(Document("d", text), b))
    sent = SentenceSegmenter().token_spans(text, tok)
    if window == 0:
        np.testing.assert_array_equal(b.token_spans, sent)
    # every chunk starts and ends on sentence boundaries
    assert set(b.token_spans[:, 0].tolist()) <= set(sent[:, 0].tolist())
    assert set(b.token_spans[:, 1].tolist()) <= set(sent[:, 1].tolist())


# --- BR-009 sentence-abbreviation ------------------------------------------------------------------------------

ABBREV_A = (
    "The Ph.D.'s committee approved 3.14 million for field work, e.g. soil cores from the U.S. state of Ohio. "
    "Dr. Ames signed the form on Friday."
)

ABBREV_B = "She earned a Ph.D.: a rare feat. It took six years."


def test_br009_abbreviations_do_not_end_sentences(minilm_tokenizer):
    assert len(ABBREV_A) == 140
    _, b = split("sentence_window:window_size=0", ABBREV_A, minilm_tokenizer)
    assert stripped_spans(ABBREV_A, b) == [(0, 104), (105, 140)]
    for chunk in b.texts(ABBREV_A):
        assert not chunk.endswith(("Ph.D.", "3.", "e.g.", "U.S.", "Dr."))


def test_br009_abbreviation_before_colon(minilm_tokenizer):
    assert len(ABBREV_B) == 51
    _, b = split("sentence_window:window_size=0", ABBREV_B, minilm_tokenizer)
    assert stripped_spans(ABBREV_B, b) == [(0, 32), (33, 51)]


def test_br009_same_segmenter_feeds_recursive_and_semantic(minilm_tokenizer):
    tok = minilm_tokenizer(ABBREV_A)
    sentence_ends = {int(tok.offsets[e - 1, 1]) for _, e in SentenceSegmenter().token_spans(ABBREV_A, tok).tolist()}
    assert sentence_ends == {104, 140}
    # recursive must cut at the sentence level here (the text is 42 tokens, one line): only at 104
    _, b = split("recursive:chunk_size=34", ABBREV_A, minilm_tokenizer)
    assert stripped_spans(ABBREV_A, b) == [(0, 104), (105, 140)]
    embed = CountingEmbedder()
    _, b = split("semantic:percentile=100", ABBREV_A, minilm_tokenizer, embed)
    assert len(embed.calls) == 1 and embed.calls[0].shape == (2, 2)
    assert {e for _, e in b.char_spans.tolist()} <= {104, 140}


# --- BR-021 segmenter-placeholder-chars (strategy part; the segmenter: tests/sentences/test_sentences.py) ------

BR021_MARKS = list(PYSBD_PLACEHOLDERS) + ["&ᓴ&", "☏☏", "ƪƪƪ", PYSBD_PLACEHOLDERS]


@pytest.mark.parametrize("mark", BR021_MARKS)
def test_br021_pysbd_placeholders_keep_sentence_chunks(minilm_tokenizer, mark):
    """BR-021: a text holding one of pysbd's placeholder characters: three sentence chunks, whole sentences
    under recursive, no warning, exact slices and coverage."""
    import warnings

    text = f"Pack the tent {mark} before dusk. Light the stove early. Boil the water twice."
    shift = len(mark) - 1
    sentences = [(0, 28 + shift), (29 + shift, 51 + shift), (52 + shift, 73 + shift)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, b = split("sentence_window:window=0", text, minilm_tokenizer)
        assert stripped_spans(text, b) == sentences
        tok, b = split("recursive:max_tokens=8", text, minilm_tokenizer)
    check_boundaries(text, tok, b, max_tokens=8)
    if len(mark) == 1:  # (a longer mark makes the first sentence longer than 8 tokens: it is cut inside)
        starts, ends = {s for s, _ in sentences}, {e for _, e in sentences}
        for s, e in stripped_spans(text, b):  # every chunk is a run of whole sentences
            assert s in starts and e in ends, (text[s:e], sentences)
