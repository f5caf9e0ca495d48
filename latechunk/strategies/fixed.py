"""``fixed``: chunks of ``size`` content tokens with stride ``size - overlap`` (fixed-size chunking)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from latechunk.strategies._common import allowed_cuts, check_size_overlap, join_markup_only, strided_spans
from latechunk.strategies.base import ChunkSpans, SplitInput, Strategy, register

__all__ = ["Fixed"]


@register("fixed")
@dataclass(frozen=True)
class Fixed(Strategy):
    """Fixed-size chunks: chunk k is content tokens ``[k * stride, k * stride + size)``, stride ``size - overlap``.

    Chunks stop at the last content token, and a last chunk that would lie inside the previous one is not
    emitted (BR-002: 12 tokens, size 4, overlap 1 give 4 chunks, the last one 3 tokens long). A chunk edge
    that would split one character's wordpieces is moved back to the character's first wordpiece, and one that
    would fall before a whitespace-only token (byte-level BPE, SentencePiece) is moved back to the content token
    before it, so that no chunk is only whitespace (BR-023). Whitespace tokens at a chunk's ends lie outside its
    text and are left out of its token span (issue 36), so they do not count toward ``size``: a chunk holds more
    than ``size`` tokens only when they are the tokens of one character.

    Args:
        size: Content tokens per chunk (1..1,000,000); alias ``chunk_size``.
        overlap: Content tokens shared by consecutive chunks (``0 <= overlap < size``); alias
            ``chunk_overlap``.

    Raises:
        TypeError: if ``size`` or ``overlap`` is not an int.
        ValueError: unless ``size > 0`` and ``0 <= overlap < size`` (the message names both values, BR-003).
    """

    bet: ClassVar[str] = "facts end every n tokens"
    aliases: ClassVar[dict[str, str]] = {"chunk_size": "size", "chunk_overlap": "overlap"}

    size: int = field(default=256, metadata={"help": "tokens per chunk (1..1,000,000)"})
    overlap: int = field(
        default=0, metadata={"help": "tokens shared by consecutive chunks (0 <= overlap < size)"}
    )

    def __post_init__(self) -> None:
        check_size_overlap("fixed", "size", self.size, self.overlap)

    def _chunk_spans(self, given: SplitInput) -> ChunkSpans:
        """Fixed-size windows of content tokens (see the class docstring); on markdown input a window of markup
        alone is joined or widened here (:meth:`_no_markup_only`), not by ``split``.

        Args:
            given: The document and its content tokens (no sentences, no sentence vectors are read).

        Returns:
            The windows; no heading paths, no contexts.
        """
        allowed = allowed_cuts(given.offs, given.content)
        spans = (strided_spans(0, given.offs.shape[0], self.size, self.overlap) if allowed.all()
                 else self._spans_whole_chars(allowed, given.content.mask))
        if given.joins_markup(spans):
            spans = self._no_markup_only(given.carried, spans, allowed)
        return ChunkSpans(spans)

    def _no_markup_only(self, content, spans, allowed):
        """Markdown input (issue 16): a window of markup alone joins a neighbour when the two fit ``size``, else
        it starts earlier, taking in the text before it up to ``size`` tokens (never before the previous
        window's start, so starts still increase and every token stays covered)."""
        spans, _ = join_markup_only(spans, content, self.size)
        flags = content[spans[:, 1]] == content[spans[:, 0]]
        if not flags[1:].any():
            return spans
        n = allowed.shape[0] - 1
        next_ge = np.minimum.accumulate(np.where(allowed, np.arange(n + 1), n)[::-1])[::-1]
        spans = spans.copy()
        for i in np.flatnonzero(flags).tolist():
            if i == 0:
                continue
            s, e = int(spans[i, 0]), int(spans[i, 1])
            start = int(next_ge[max(e - self.size, int(spans[i - 1, 0]) + 1)])
            if start < s:
                spans[i, 0] = start
        return spans

    def _spans_whole_chars(self, allowed: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Chunks whose edges are allowed cuts (never inside one character's wordpieces).

        Chunk ``[s, e)``: ``e`` is the last allowed cut whose chunk holds at most ``size`` tokens once the
        whitespace tokens at its ends are left out (:func:`~latechunk.strategies.base.trim_token_spans`; with
        every token a content token, the last allowed cut ``<= s + size``), or the end of the character at ``s``
        when that character alone is longer than ``size``. The next start is the first allowed cut
        ``>= max(e - overlap, u - size, s + 1)``, where ``u`` is the first allowed cut after ``e``: so overlap stays
        ``<= overlap``, the next chunk reaches past ``e``, and starts strictly increase. With every cut
        allowed this is exactly :func:`~latechunk.strategies._common.strided_spans`.

        Args:
            allowed: (n + 1,), bool. :func:`~latechunk.strategies._common.allowed_cuts`.
            mask: (n,), bool. ``ContentTokens.mask``; None: every token is a content token.

        Returns:
            (k, 2), int64. Content-relative token spans, starts strictly increasing.
        """
        n = allowed.shape[0] - 1
        idx = np.arange(n + 1)
        mask = np.ones(n, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        # a chunk [s, u) holds tokens [first_text[s], after_text[u]) once trimmed of its whitespace tokens
        first_text = np.minimum.accumulate(np.where(np.append(mask, True), idx, n)[::-1])[::-1].tolist()
        after_text = np.maximum.accumulate(np.concatenate([[0], np.where(mask, idx[1:], 0)]))
        cut_at = np.flatnonzero(allowed)
        reach = after_text[cut_at]  # non-decreasing
        next_ge = np.minimum.accumulate(np.where(allowed, idx, n)[::-1])[::-1].tolist()
        size, overlap = self.size, self.overlap
        out = []
        s = 0
        while True:
            e = int(cut_at[int(np.searchsorted(reach, first_text[s] + size, side="right")) - 1])
            if e <= s:
                e = next_ge[s + 1]
            out.append((s, e))
            if e >= n:
                break
            u = next_ge[e + 1]
            s = e if u - e > size else next_ge[max(e - overlap, u - size, s + 1)]
        return np.asarray(out, dtype=np.int64)
