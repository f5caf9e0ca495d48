"""latechunk/tokenize.py: one tokenizer call per document (``[lead frame] + content + [trail frame]``, offsets
into the caller's text, never truncated) and char spans from token spans (the characters the tokenizer dropped
go to the chunk before them; leading ones to the first chunk; no trailing whitespace)."""

from __future__ import annotations

import numpy as np
import pytest

from latechunk.tokenize import DocumentTokenizer, char_spans_from_token_spans
from latechunk.types import Document


def test_frame_is_cls_content_sep_with_offsets_into_the_text(minilm_tokenizer):
    text = "Dogs bark. Cats sleep."
    tok = minilm_tokenizer(text)
    hf = minilm_tokenizer.tokenizer
    assert tok.input_ids[0] == hf.cls_token_id and tok.input_ids[-1] == hf.sep_token_id
    assert (tok.n_lead, tok.n_trail, tok.n_content) == (1, 1, 6) and minilm_tokenizer.n_frame == 2
    assert tok.special_tokens_mask.tolist() == [True] + [False] * 6 + [True]
    assert tok.offsets[0].tolist() == [0, 0] and tok.offsets[-1].tolist() == [0, 0]
    words = [text[s:e] for s, e in tok.offsets[1:-1].tolist()]
    assert words == ["Dogs", "bark", ".", "Cats", "sleep", "."]
    same = minilm_tokenizer(Document("d", text))  # a Document and its text tokenize alike
    np.testing.assert_array_equal(same.input_ids, tok.input_ids)


def test_prefix_tokens_join_the_lead_frame_and_have_no_offsets(minilm_tokenizer):
    prefixed = DocumentTokenizer(minilm_tokenizer.tokenizer, prefix="passage: ")
    plain, tok = minilm_tokenizer("Rivers flow."), prefixed("Rivers flow.")
    assert prefixed.prefix_ids and prefixed.lead_ids == minilm_tokenizer.lead_ids + prefixed.prefix_ids
    assert tok.n_lead == 1 + len(prefixed.prefix_ids) == 3 and tok.special_tokens_mask[:3].all()
    np.testing.assert_array_equal(tok.input_ids[tok.content_start :], plain.input_ids[plain.content_start :])
    np.testing.assert_array_equal(tok.offsets[tok.content_start :], plain.offsets[plain.content_start :])
    assert (tok.offsets[: tok.n_lead] == 0).all()


def test_long_text_is_never_truncated(minilm_tokenizer):
    tok = minilm_tokenizer("word " * 2000)
    assert tok.n_content == 2000 and len(tok) == 2002  # far past the model's 512 positions


def test_a_tokenizer_without_offsets_is_refused():
    class SlowTokenizer:  # a Python ("slow") tokenizer: no return_offsets_mapping
        is_fast = False

    with pytest.raises(TypeError, match="SlowTokenizer is not a fast tokenizer"):
        DocumentTokenizer(SlowTokenizer())


def test_batch_tokenization_equals_one_by_one(minilm_tokenizer):
    docs = [Document("a", "Plain text. " * 50), Document("b", ""), Document("c", "[SEP] typed ☃ naïve café"),
            Document("d", "x" * 3000), Document("e", "  \n\t ")]
    one = [minilm_tokenizer(d) for d in docs]
    many = minilm_tokenizer.batch(docs)
    assert len(many) == len(docs)
    for x, y in zip(one, many):
        np.testing.assert_array_equal(x.input_ids, y.input_ids)
        np.testing.assert_array_equal(x.offsets, y.offsets)
        np.testing.assert_array_equal(x.special_tokens_mask, y.special_tokens_mask)
        assert (x.n_lead, x.n_trail) == (y.n_lead, y.n_trail)
    assert minilm_tokenizer.batch([]) == []


def test_char_spans_run_from_first_token_start_to_last_token_end(minilm_tokenizer):
    text = "Dogs bark. Cats sleep."
    tok = minilm_tokenizer(text)
    cs = char_spans_from_token_spans(text, tok, np.array([[1, 4], [4, 7]]))
    assert cs.dtype == np.int32 and cs.tolist() == [[0, 10], [11, 22]]
    assert char_spans_from_token_spans(text, tok, np.zeros((0, 2))).shape == (0, 2)


def test_leading_characters_go_to_the_first_chunk_and_dropped_ones_to_the_chunk_before(minilm_tokenizer):
    text = "  \x07Dogs bark\x07\x07 \n cats"  # BERT drops the control characters: no token covers them
    tok = minilm_tokenizer(text)
    assert tok.n_content == 3
    cs = char_spans_from_token_spans(text, tok, np.array([[1, 3], [3, 4]])).tolist()
    # the first chunk starts after the leading whitespace, at the dropped \x07 before "Dogs";
    # it ends after the two dropped \x07 behind "bark", but not over the whitespace that follows them
    assert cs == [[2, 14], [17, 21]]
    assert text[2:14] == "\x07Dogs bark\x07\x07" and text[17:21] == "cats"


@pytest.mark.parametrize("spans", [[[0, 2]], [[1, 1]], [[3, 6]], [[2, 1]]])
def test_spans_outside_the_content_tokens_raise(minilm_tokenizer, spans):
    text = "Dogs bark. Cats"
    tok = minilm_tokenizer(text)  # content tokens [1, 5)
    with pytest.raises(ValueError, match="inside content tokens"):
        char_spans_from_token_spans(text, tok, np.array(spans))


# --- BR-023: whitespace tokens (byte-level BPE, SentencePiece) ------------------------------------------------


@pytest.mark.parametrize("kind", ["bpe", "bpe-untrimmed", "unigram"])
def test_br023_content_tokens_of_whitespace_token_families(kind):
    """ContentTokens: a token is a content token iff its offsets cover a non-whitespace character (zero-width and
    whitespace-only tokens are not); its first character skips a leading space (" fox"); keys never decrease."""
    from latechunk.tokenize import content_tokens
    from tests.models import tiny_document_tokenizer

    text = "Owls hunt at night.\n\n\n\nBats fly at dusk.\n   "
    tok = tiny_document_tokenizer(kind)(text)
    ct = content_tokens(text, tok)
    offs = tok.offsets[tok.content_start : tok.content_end].tolist()
    expected = [bool(text[a:b].strip()) for a, b in offs]
    assert ct.mask.tolist() == expected and ct.any and not all(expected)
    for p, (a, b) in enumerate(offs):
        if expected[p]:
            assert ct.first_char[p] == a + len(text[a:b]) - len(text[a:b].lstrip())
    assert (np.diff(ct.keys) >= 0).all()


@pytest.mark.parametrize("kind", ["bpe", "bpe-untrimmed", "unigram"])
def test_br023_char_spans_never_start_or_end_on_whitespace_tokens(kind):
    """A span whose edge tokens are whitespace (or start with a space) still gets a char span with text at both
    ends: "night." and "Bats fly", not ".\\n\\n\\n\\n" or " fly"."""
    from tests.models import tiny_document_tokenizer

    text = "Owls hunt at night.\n\n\n\nBats fly at dusk.\n   "
    tok = tiny_document_tokenizer(kind)(text)
    cs, ce = tok.content_start, tok.content_end
    bats = next(p for p in range(cs, ce) if tok.offsets[p, 0] <= 23 < tok.offsets[p, 1])
    spans = char_spans_from_token_spans(text, tok, np.array([[cs, bats], [bats, ce]])).tolist()
    assert [text[s:e] for s, e in spans] == ["Owls hunt at night.", "Bats fly at dusk."]


def test_wordpiece_has_only_content_tokens(minilm_tokenizer):
    """WordPiece makes no whitespace tokens: every token is a content token, keys are the start offsets (so
    BR-023's rule changes nothing there)."""
    from latechunk.tokenize import content_tokens

    text = "  Dogs\u00a0bark.\n\n\tCats \u3000sleep 한국어 👍🏽\n"
    tok = minilm_tokenizer(text)
    ct = content_tokens(text, tok)
    assert ct.mask.all()
    np.testing.assert_array_equal(ct.keys, tok.offsets[tok.content_start : tok.content_end, 0])


def test_whitespace_table_holds_every_unicode_whitespace_code_point():
    import sys

    from latechunk.tokenize import _WHITESPACE

    every = [c for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    assert _WHITESPACE.tolist() == every
