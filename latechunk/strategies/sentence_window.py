"""``sentence_window``: a sentence with ``window`` sentences on each side."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from latechunk.sentences import SentenceSegmenter
from latechunk.strategies._common import (
    MAX_SENTENCES,
    check_int,
    content_offsets,
    content_prefix,
    finish,
    join_markup_only,
    or_fresh_segmenter,
    strided_spans,
)
from latechunk.strategies._markdown import is_markdown_input
from latechunk.strategies.base import SentenceVectors, Strategy, register
from latechunk.tokenize import content_tokens
from latechunk.types import Boundaries, Document, Tokenization

__all__ = ["SentenceWindow"]


@register("sentence_window")
@dataclass(frozen=True)
class SentenceWindow(Strategy):
    """Sliding windows of ``2 * window + 1`` sentences, moved by ``stride`` sentences.

    Window k holds sentences ``[k * stride, k * stride + 2 * window + 1)``: its middle sentence with ``window``
    neighbours on each side (at the document's ends the window is cut short rather than re-centred, so that
    chunk starts strictly increase). As in ``fixed``, the last window is not emitted if it would lie inside the
    previous one. ``window=0`` gives one chunk per sentence (BR-009, BR-011). Sentences come from
    :meth:`latechunk.sentences.SentenceSegmenter.token_spans`; a window's token span runs from its first
    sentence's first token to its last sentence's last token. (Sentence-window retrieval as in LlamaIndex's
    ``SentenceWindowNodeParser``, here as the chunk itself.) On markdown input a window of markup alone (a
    thematic break, front matter, a fence marker, link reference definitions, an HTML comment: pysbd makes
    sentences of them) joins the next window, or the previous one at the end (issue 16; this strategy has no
    token budget).

    Args:
        window: Sentences on each side of the middle one (0..100,000); alias ``window_size``.
        stride: Sentences between window starts (``1 <= stride <= 2 * window + 1``).

    Raises:
        TypeError: if ``window`` or ``stride`` is not an int.
        ValueError: unless ``0 <= window <= 100,000`` and ``1 <= stride <= 2 * window + 1`` (a longer stride
            would skip sentences).
    """

    bet: ClassVar[str] = "a fact is a sentence and its neighbours"
    aliases: ClassVar[dict[str, str]] = {"window_size": "window"}

    window: int = field(default=1, metadata={"help": "sentences on each side of the middle one (0..100,000)"})
    stride: int = field(
        default=1, metadata={"help": "sentences between window starts (1 <= stride <= 2*window+1)"}
    )

    def __post_init__(self) -> None:
        check_int("sentence_window", "window", self.window, 0, MAX_SENTENCES, "sentences")
        check_int("sentence_window", "stride", self.stride, 1, maximum=None)  # at most 2 * window + 1, checked next
        if self.stride > 2 * self.window + 1:
            raise ValueError(
                f"sentence_window: stride must be at most 2 * window + 1 = {2 * self.window + 1} so that no "
                f"sentence is skipped, got window={self.window}, stride={self.stride}"
            )

    def sentence_paragraphs(self) -> int | None:
        """Every paragraph: each sentence is a unit here.

        Returns:
            0 (the sentences of every paragraph).
        """
        return 0

    def split(
        self,
        doc: Document,
        tok: Tokenization,
        sentence_vectors: SentenceVectors | None = None,
        sentences: SentenceSegmenter | None = None,
    ) -> Boundaries:
        """Cut ``doc`` into sentence windows (see the class docstring).

        Args:
            doc: The document.
            tok: Its whole-document tokenization.
            sentence_vectors: Unused (no sentence vectors needed).
            sentences: The run's sentence segmenter; None: a fresh in-process one.

        Returns:
            Boundaries: int32 (n_chunks, 2) token spans (from a window's first sentence's first token to its
            last sentence's last token) and their exact char spans; none for a document without sentences.
        """
        content = content_tokens(doc.text, tok)
        sent = or_fresh_segmenter(sentences).token_spans(doc, tok, content.keys).astype(np.int64)
        sent -= tok.content_start
        m = sent.shape[0]
        w = strided_spans(0, m, 2 * self.window + 1, 2 * self.window + 1 - self.stride)
        spans = np.stack([sent[w[:, 0], 0], sent[w[:, 1] - 1, 1]], axis=1) if m else w
        if spans.shape[0] > 1 and is_markdown_input(doc):  # no window of markup alone (issue 16)
            spans, _ = join_markup_only(spans, content_prefix(doc.text, content_offsets(tok)), None)
        return finish(doc, tok, spans, self.spec, content=content)
