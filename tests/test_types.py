"""latechunk/types.py: the value types (Document, Span, Tokenization, Boundaries, ChunkVectors, Skipped) and the
checks each makes when it is built, so that an object that exists is consistent."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from latechunk.types import Boundaries, ChunkVectors, Document, Skipped, Span, Tokenization


def _tok(n_content: int = 3, n_lead: int = 1, n_trail: int = 1) -> Tokenization:
    n = n_lead + n_content + n_trail
    offs = np.zeros((n, 2), dtype=np.int64)
    offs[n_lead : n_lead + n_content] = [(2 * i, 2 * i + 1) for i in range(n_content)]
    mask = np.zeros(n, dtype=bool)
    mask[:n_lead] = mask[n - n_trail :] = True
    return Tokenization(np.arange(n), offs, mask, n_lead, n_trail)


def test_document_checks_its_fields():
    doc = Document("a", "text")
    assert doc.metadata == {} and doc.text == "text"
    with pytest.raises(TypeError, match="doc_id must be str"):
        Document(1, "text")
    with pytest.raises(ValueError, match="non-empty"):
        Document("", "text")
    with pytest.raises(TypeError, match="text must be str"):
        Document("a", b"bytes")
    with pytest.raises(dataclasses.FrozenInstanceError):
        doc.text = "other"


def test_span_is_half_open_and_never_empty():
    assert len(Span(2, 5)) == 3
    for a, b in [(3, 3), (4, 2), (-1, 2)]:
        with pytest.raises(ValueError, match="0 <= start < end"):
            Span(a, b)


def test_tokenization_layout_and_read_only_arrays():
    tok = _tok(n_content=3, n_lead=2, n_trail=1)
    assert len(tok) == 6 and (tok.content_start, tok.content_end, tok.n_content) == (2, 5, 3)
    assert tok.input_ids.dtype == np.int64 and tok.offsets.dtype == np.int32
    assert tok.special_tokens_mask.tolist() == [True, True, False, False, False, True]
    with pytest.raises(ValueError):
        tok.input_ids[0] = 7  # the arrays are frozen with the object


@pytest.mark.parametrize("bad, match", [
    ({"offsets": np.zeros((4, 2), dtype=np.int32)}, "same length"),
    ({"special_tokens_mask": np.zeros(4, bool)}, "same length"),
    ({"n_lead": 5}, "bad frame"),
    ({"n_trail": -1}, "bad frame"),
    ({"special_tokens_mask": np.array([True, True, False, False, True])}, "exactly on the lead/trail frame"),
    ({"special_tokens_mask": np.array([False, False, False, False, True])}, "exactly on the lead/trail frame"),
    ({"offsets": np.zeros((5, 3))}, r"shape \(n, 2\)"),
    ({"offsets": np.zeros((5, 2), dtype=np.float32)}, "integer"),
])
def test_tokenization_rejects_inconsistent_parts(bad, match):
    good = _tok()
    parts = {"input_ids": good.input_ids, "offsets": good.offsets, "special_tokens_mask": good.special_tokens_mask,
                 "n_lead": 1, "n_trail": 1}
    with pytest.raises((ValueError, TypeError), match=match):
        Tokenization(**{**parts, **bad})


def test_boundaries_fill_defaults_and_cast_to_int32():
    b = Boundaries("d", np.array([[1, 3], [3, 4]], dtype=np.int64), [[0, 3], [4, 5]])
    assert len(b) == 2 and b.token_spans.dtype == np.int32 and b.char_spans.dtype == np.int32
    assert b.heading_paths == ((), ()) and b.contexts == ("", "")
    assert b.texts("abc de") == ["abc", "d"]
    empty = Boundaries("d", np.zeros((0, 2), np.int32), np.zeros((0, 2), np.int32))
    assert len(empty) == 0 and empty.texts("anything") == []


@pytest.mark.parametrize("kwargs, match", [
    ({"token_spans": [[1, 3]], "char_spans": [[0, 3], [4, 5]]}, "1 token spans but 2 char spans"),
    ({"token_spans": [[3, 3]], "char_spans": [[0, 3]]}, "every token span"),
    ({"token_spans": [[-1, 3]], "char_spans": [[0, 3]]}, "every token span"),
    ({"token_spans": [[1, 3]], "char_spans": [[3, 2]]}, "every char span"),
    ({"token_spans": [[1, 3]], "char_spans": [[0, 3]], "heading_paths": ((), ())}, "must have 1 entries"),
    ({"token_spans": [[1, 3]], "char_spans": [[0, 3]], "contexts": ("", "")}, "must have 1 entries"),
    ({"token_spans": [1, 3], "char_spans": [[0, 3]]}, r"shape \(n, 2\)"),
])
def test_boundaries_reject_inconsistent_spans(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Boundaries("d", **kwargs)


def test_chunk_vectors_pack_documents():
    cv = ChunkVectors(np.ones((3, 4), dtype=np.float64), ("a", "b"), [0, 0, 1], [0, 1, 3], "late")
    assert cv.vectors.dtype == np.float32 and cv.dim == 4 and len(cv) == 3 and cv.doc_ids == ("a", "b")
    assert cv.cu_chunks.tolist() == [0, 1, 3] and not cv.vectors.flags.writeable
    empty = ChunkVectors(np.zeros((0, 4), np.float32), (), [], [0], "naive")
    assert len(empty) == 0 and empty.dim == 4


@pytest.mark.parametrize("kwargs, match", [
    ({"vectors": np.ones(3)}, "2-D"),
    ({"cu_chunks": [0, 2]}, "cu_chunks"),
    ({"cu_chunks": [0, 2, 1]}, "cu_chunks"),
    ({"cu_chunks": [1, 2, 3]}, "cu_chunks"),
    ({"chunk_index": [0, 1]}, "one entry per vector"),
    ({"mode": "early"}, "'late', 'naive', 'contextual' or 'fused'"),
    ({"vectors": np.array([[1.0, np.nan]] * 3)}, "NaN or inf"),
])
def test_chunk_vectors_reject_inconsistent_parts(kwargs, match):
    parts = {"vectors": np.ones((3, 2)), "doc_ids": ("a", "b"), "chunk_index": [0, 0, 1], "cu_chunks": [0, 1, 3],
                 "mode": "late"}
    with pytest.raises(ValueError, match=match):
        ChunkVectors(**{**parts, **kwargs})


def test_skipped_is_a_frozen_record():
    s = Skipped("corpus.jsonl:3", "bad JSON")
    assert s.source == "" and s == Skipped("corpus.jsonl:3", "bad JSON", "")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.reason = "other"
