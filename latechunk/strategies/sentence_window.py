"""``sentence_window``: a sentence with ``window`` sentences on each side."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from latechunk.strategies._common import MAX_SENTENCES, SentenceRuns, check_int, strided_spans
from latechunk.strategies.base import ChunkSpans, MarkupJoin, SplitInput, Strategy, register

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
