"""``sentence_window``: a sentence with ``window`` sentences on each side."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from latechunk.sentences import SentenceSegmenter
from latechunk.strategies._common import MAX_SENTENCES, SentenceRuns, check_int, strided_spans
from latechunk.strategies.base import ChunkSpans, MarkupJoin, SplitInput, Strategy, register
from latechunk.tokenize import content_tokens
from latechunk.types import Boundaries, Document, Tokenization

__all__ = ["SentenceWindow"]


@register("sentence_window")
@dataclass(frozen=True)
class SentenceWindow(SentenceRuns, Strategy):
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

    ``late_unit=sentence`` separates the indexing unit from the context unit (issue 38; the seed's "indexing unit
    vs context unit", LlamaIndex's sentence-window retrieval): late pooling already puts the neighbours' context
    into every token state, so pooling the whole overlapping window makes neighbouring vectors nearly equal. With
    it, late mode pools each window's middle sentence (:meth:`pool_spans`; the first window also pools the
    sentences before its middle one, the last those after it, so every sentence is pooled once) while the chunk
    (text, spans, what search returns) stays the window; naive mode is unchanged (it encodes the window text).

    Args:
        window: Sentences on each side of the middle one (0..100,000); alias ``window_size``.
        stride: Sentences between window starts (``1 <= stride <= 2 * window + 1``).
        late_unit: What late mode pools: ``window`` (the chunk) or ``sentence`` (its middle sentence; with
            ``stride`` > 1 the ``stride`` sentences from the middle one on).

    Raises:
        TypeError: if ``window`` or ``stride`` is not an int.
        ValueError: unless ``0 <= window <= 100,000`` and ``1 <= stride <= 2 * window + 1`` (a longer stride
            would skip sentences), or on a ``late_unit`` other than ``window`` or ``sentence``.
    """

    bet: ClassVar[str] = "a fact is a sentence and its neighbours"
    aliases: ClassVar[dict[str, str]] = {"window_size": "window"}

    window: int = field(default=1, metadata={"help": "sentences on each side of the middle one (0..100,000)"})
    stride: int = field(
        default=1, metadata={"help": "sentences between window starts (1 <= stride <= 2*window+1)"}
    )

    late_unit: str = field(default="window", metadata={
        "help": "what late mode pools: window (the chunk) or sentence (its middle sentence)", "omit_default": True})

    def __post_init__(self) -> None:
        if self.late_unit not in ("window", "sentence"):
            raise ValueError(f"sentence_window: late_unit must be 'window' or 'sentence', got {self.late_unit!r}")
        check_int("sentence_window", "window", self.window, 0, MAX_SENTENCES, "sentences")
        check_int("sentence_window", "stride", self.stride, 1, maximum=None)  # at most 2 * window + 1, checked next
        if self.stride > 2 * self.window + 1:
            raise ValueError(
                f"sentence_window: stride must be at most 2 * window + 1 = {2 * self.window + 1} so that no "
                f"sentence is skipped, got window={self.window}, stride={self.stride}"
            )

    def _chunk_spans(self, given: SplitInput) -> ChunkSpans:
        """Windows of sentences (see the class docstring).

        Args:
            given: The document, its content tokens and the run's sentence segmenter.

        Returns:
            The windows, each from its first sentence's first token to its last sentence's last token; none for a
            document without sentences. A window of markup alone joins a neighbour with no token budget.
        """
        sent = given.sentences.token_spans(given.doc, given.tok, given.content.keys).astype(np.int64)
        sent -= given.tok.content_start
        m = sent.shape[0]
        w = strided_spans(0, m, 2 * self.window + 1, 2 * self.window + 1 - self.stride)
        spans = np.stack([sent[w[:, 0], 0], sent[w[:, 1] - 1, 1]], axis=1) if m else w
        return ChunkSpans(spans, markup=MarkupJoin(budget=None))

    def pool_spans(self, b: Boundaries, doc: Document, tok: Tokenization,
                   sentences: SentenceSegmenter | None = None) -> np.ndarray:
        """Late mode's pooled spans: each window (``late_unit=window``) or its middle sentence(s) (``sentence``).

        With ``late_unit=sentence`` the pooled units tile the chunks' tokens: unit k runs from cut k to cut k + 1,
        clipped to chunk k's span, where cut k is the start of chunk k's middle sentence (its ``window + 1``-th, or
        its last when shorter) but no later than chunk k - 1's end (cut 0: chunk 0's start; the last unit runs to
        its chunk's end). So overlapping windows pool their middle sentence (the first and last window also the
        sentences before / after it) and windows that do not overlap (``stride = 2 * window + 1``) pool
        themselves. A unit that would be empty (windows joined on markdown) falls back to chunk k's span.

        Args:
            b: This strategy's chunks of ``doc``.
            doc: The document.
            tok: Its whole-document tokenization.
            sentences: The run's sentence segmenter; None: a fresh in-process one.

        Returns:
            (n_chunks, 2) int64 half-open document token positions.
        """
        ts = b.token_spans.astype(np.int64)
        if self.late_unit == "window" or len(ts) == 0:
            return ts
        seg = sentences if sentences is not None else SentenceSegmenter()
        sent = seg.token_spans(doc, tok, content_tokens(doc.text, tok).keys).astype(np.int64)
        first = np.searchsorted(sent[:, 1], ts[:, 0], side="right")  # the sentence holding each chunk's start
        last = np.searchsorted(sent[:, 1], ts[:, 1], side="left")  # the sentence holding each chunk's end
        middle = np.minimum(first + self.window, np.minimum(last, len(sent) - 1))
        # the cut between units k - 1 and k: chunk k's middle sentence start, no later than chunk k - 1's end
        starts = np.maximum(np.minimum(sent[middle, 0], np.append(ts[0, 0], ts[:-1, 1])), ts[:, 0])
        starts[0] = ts[0, 0]
        ends = np.append(starts[1:], ts[-1, 1])
        units = np.stack([np.maximum(starts, ts[:, 0]), np.minimum(ends, ts[:, 1])], axis=1)
        bad = units[:, 1] <= units[:, 0]
        units[bad] = ts[bad]
        return units
