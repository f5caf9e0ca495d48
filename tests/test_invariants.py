"""The invariant helpers of tests/invariants.py can fail: a shifted span, a wrong text or a span that runs into
another token's characters is caught (a check that cannot fail checks nothing)."""

from __future__ import annotations

import numpy as np
import pytest

from latechunk.output import chunk_rows
from latechunk.strategies import get_strategy
from latechunk.types import Boundaries, Document
from tests.invariants import check_boundaries, check_chunk_rows, check_chunk_texts, check_token_cover

TEXT = "Dogs bark. Cats sleep."  # [CLS] dogs bark . cats sleep . [SEP]


def _good(minilm_tokenizer):
    doc = Document("d", TEXT)
    tok = minilm_tokenizer(doc)
    b = get_strategy("sentence_window:window=0").split(doc, tok)
    assert b.char_spans.tolist() == [[0, 10], [11, 22]] and b.token_spans.tolist() == [[1, 4], [4, 7]]
    return doc, tok, b


def _with(b: Boundaries, token_spans=None, char_spans=None) -> Boundaries:
    ts = b.token_spans if token_spans is None else np.asarray(token_spans, dtype=np.int32)
    cs = b.char_spans if char_spans is None else np.asarray(char_spans, dtype=np.int32)
    return Boundaries(b.doc_id, ts, cs, b.heading_paths, b.contexts)


def test_the_checks_pass_on_latechunks_own_result(minilm_tokenizer):
    doc, tok, b = _good(minilm_tokenizer)
    rows = chunk_rows(doc, b, "sentence_window:window=0")
    check_boundaries(TEXT, tok, b, chunk_texts=[r["text"] for r in rows])
    check_chunk_rows({"d": TEXT}, rows, minilm_tokenizer)


@pytest.mark.parametrize("char_spans", [
    [[1, 10], [11, 22]],  # first chunk starts inside its first token
    [[0, 9], [11, 22]],  # ends before its last token's end
    [[0, 10], [12, 22]],  # a later chunk starts after its first token's start
    [[0, 16], [11, 22]],  # runs into the next sentence's tokens
    [[0, 11], [11, 22]],  # trailing whitespace (an outer-whitespace chunk)
])
def test_a_shifted_char_span_is_caught(minilm_tokenizer, char_spans):
    _, tok, b = _good(minilm_tokenizer)
    with pytest.raises(AssertionError):
        check_boundaries(TEXT, tok, _with(b, char_spans=char_spans))


@pytest.mark.parametrize("char_spans", [[[1, 10], [11, 22]], [[0, 9], [11, 22]], [[0, 16], [11, 22]],
                                        [[0, 10], [10, 22]]])
def test_token_cover_alone_catches_a_shifted_span(minilm_tokenizer, char_spans):
    _, tok, b = _good(minilm_tokenizer)
    with pytest.raises(AssertionError):
        check_token_cover(TEXT, tok, b.token_spans, char_spans)


def test_a_shifted_token_span_is_caught(minilm_tokenizer):
    _, tok, b = _good(minilm_tokenizer)
    with pytest.raises(AssertionError):
        check_token_cover(TEXT, tok, [[1, 3], [4, 7]], b.char_spans)  # "." of token 3 is outside span 0
    with pytest.raises(AssertionError):
        check_token_cover(TEXT, tok, [[1, 5], [4, 7]], b.char_spans)  # token 4 ("cats") ends past char 10


def test_a_wrong_chunk_text_is_caught(minilm_tokenizer):
    doc, tok, b = _good(minilm_tokenizer)
    rows = chunk_rows(doc, b, "s")
    texts = [r["text"] for r in rows]
    with pytest.raises(AssertionError, match="not the caller's slice"):
        check_boundaries(TEXT, tok, b, chunk_texts=[texts[0], texts[1].lower()])
    with pytest.raises(AssertionError, match="chunk texts for"):
        check_chunk_texts(TEXT, b.char_spans, texts[:1])
    # the text of a document latechunk altered (here: a caller's BOM dropped) is not the caller's slice
    altered = chunk_rows(Document("d", TEXT.upper()), b, "s")
    with pytest.raises(AssertionError, match="not the caller's slice"):
        check_chunk_rows({"d": TEXT}, altered)


def test_rows_with_a_shifted_span_are_caught(minilm_tokenizer):
    doc, _, b = _good(minilm_tokenizer)
    rows = chunk_rows(doc, b, "s")
    shifted = [dict(rows[0], char_start=1, text=TEXT[1:10]), rows[1]]
    check_chunk_rows({"d": TEXT}, shifted)  # the texts alone still match their spans ...
    with pytest.raises(AssertionError, match="start"):
        check_chunk_rows({"d": TEXT}, shifted, minilm_tokenizer)  # ... the token offsets do not
    with pytest.raises(AssertionError, match="chunk_index"):
        check_chunk_rows({"d": TEXT}, rows[::-1])


def test_a_chunk_without_a_content_token_is_caught():
    """BR-023: a span of whitespace tokens alone (byte-level BPE) fails, however its char span is drawn."""
    from tests.models import tiny_document_tokenizer

    text = "Owls hunt.\n\n\n\nBats fly."
    tok = tiny_document_tokenizer("bpe-untrimmed")(text)
    cs, ce = tok.content_start, tok.content_end
    newlines = [p for p in range(cs, ce) if "\n" in text[slice(*tok.offsets[p])]]
    assert all(not text[slice(*tok.offsets[p])].strip() for p in newlines)
    a, b = newlines[0], newlines[-1] + 1
    with pytest.raises(AssertionError, match="no content token"):
        check_token_cover(text, tok, [[cs, a], [a, b]], [[0, 10], [10, 14]])
