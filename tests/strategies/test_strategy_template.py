"""latechunk/strategies/base.py: ``Strategy.split`` as a template method (issue 37). A strategy gives its own rule in
``_chunk_spans`` (content-relative :class:`ChunkSpans` of a :class:`SplitInput`); ``split`` refuses a call without
the sentence vectors a strategy needs, joins a chunk of markup alone to a neighbour on markdown input as the
strategy's :class:`MarkupJoin` says (its heading path and context following), and shifts the spans to document
positions. Tokenization: the bundled all-MiniLM-L6-v2 tokenizer (``[CLS]`` at position 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest

from latechunk.strategies import registry
from latechunk.strategies.base import ChunkSpans, MarkupJoin, SplitInput, Strategy
from latechunk.types import Document
from tests.invariants import check_boundaries
from tests.models import tiny_document_tokenizer

#: a thematic break (markup alone: 3 wordpieces "-", "-", "-") and then a sentence
TEXT = "---\n\nRivers carry silt to the sea.\n"


@pytest.fixture(scope="module")
def tokenizer():
    return tiny_document_tokenizer("wordpiece")


@dataclass(frozen=True)
class _Halves(Strategy):
    """Two chunks: content tokens ``[0, k)`` with path ``("a",)``, then the rest with path ``("b",)``; markup
    alone joins with ``budget``; ``asked`` records each time a join asks for the cuts."""

    name: ClassVar[str] = "halves"
    asked: ClassVar[list] = []
    k: int = 3
    budget: int | None = None

    def _chunk_spans(self, given: SplitInput) -> ChunkSpans:
        spans = np.array([[0, self.k], [self.k, given.offs.shape[0]]])

        def cuts():
            self.asked.append(given.doc.doc_id)
            return ()

        return ChunkSpans(spans, (("a",), ("b",)), ("ctx a", "ctx b"), MarkupJoin(self.budget, cuts=cuts))


@dataclass(frozen=True)
class _NeedsVectors(Strategy):
    """One chunk of every content token, cut only after asking for the sentence vectors of one span."""

    name: ClassVar[str] = "needs_vectors"
    needs_sentence_vectors: ClassVar[bool] = True

    def _chunk_spans(self, given: SplitInput) -> ChunkSpans:
        n = given.offs.shape[0]
        given.sentence_vectors(given.doc, given.tok, np.array([[given.tok.content_start, given.tok.content_end]]))
        return ChunkSpans(np.array([[0, n]]))


def _split(strategy, tokenizer, source):
    doc = Document("d", TEXT, {"source": source})
    tok = tokenizer(doc)
    b = strategy.split(doc, tok)
    check_boundaries(TEXT, tok, b)
    return tok, b


def test_markup_alone_joins_its_neighbour_on_markdown_input_only(tokenizer):
    _Halves.asked.clear()
    tok, plain = _split(_Halves(), tokenizer, "rivers.txt")
    assert plain.token_spans.tolist() == [[1, 4], [4, tok.content_end]]  # shifted past [CLS]
    assert TEXT[slice(*plain.char_spans[0])] == "---"
    assert plain.heading_paths == (("a",), ("b",)) and plain.contexts == ("ctx a", "ctx b")
    assert plain.strategy == "halves:k=3,budget=None"
    assert _Halves.asked == []  # text input: no join tried, no cuts found

    _, md = _split(_Halves(), tokenizer, "rivers.md")
    assert md.token_spans.tolist() == [[1, tok.content_end]]
    assert md.heading_paths == (("b",),) and md.contexts == ("ctx b",)  # the chunk that holds the content
    assert _Halves.asked == ["d"]


def test_markup_alone_stays_when_the_join_does_not_fit(tokenizer):
    tok, b = _split(_Halves(budget=5), tokenizer, "rivers.md")
    assert tok.content_end - tok.content_start > 5  # the two chunks do not fit 5 tokens together
    assert b.token_spans.tolist() == [[1, 4], [4, tok.content_end]]
    assert b.heading_paths == (("a",), ("b",))


def test_the_template_asks_for_sentence_vectors(tokenizer):
    doc = Document("d", TEXT)
    tok = tokenizer(doc)
    with pytest.raises(ValueError, match="needs_vectors: split\\(\\) needs sentence_vectors"):
        _NeedsVectors().split(doc, tok)
    asked = []
    b = _NeedsVectors().split(doc, tok, lambda d, t, spans: asked.append(spans.tolist()) or np.ones((1, 4)))
    assert asked == [[[1, tok.content_end]]] and b.token_spans.tolist() == [[1, tok.content_end]]


def test_every_builtin_strategy_is_cut_by_the_template():
    for name, cls in registry().items():
        assert "split" not in vars(cls), f"{name} overrides split(); give its rule in _chunk_spans"
        assert not getattr(cls._chunk_spans, "__isabstractmethod__", False), name
