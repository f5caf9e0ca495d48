"""The data of one :meth:`~latechunk.strategies.base.Strategy.split` call: what a strategy's own rule reads
(:class:`SplitInput`), what it returns (:class:`ChunkSpans`, with its :class:`MarkupJoin`), and the
:class:`~latechunk.types.Boundaries` made of it (:func:`finish`, :func:`make_boundaries`; a chunk's token span
without the whitespace tokens at its ends: :func:`trim_token_spans`, :func:`with_trimmed_ends`).

Positions in :class:`ChunkSpans` are *content-relative*: ``p`` in ``[0, n_content]`` names the cut before content
token ``p`` (document position ``tok.content_start + p``); :func:`finish` shifts them back.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence

import numpy as np

from latechunk.sentences import SentenceSegmenter
from latechunk.strategies._markdown import is_markdown_input
from latechunk.strategies._markup_join import content_prefix
from latechunk.tokenize import ContentTokens, char_spans_from_token_spans, content_tokens
from latechunk.types import Boundaries, Document, Tokenization

__all__ = [
    "SentenceVectors",
    "SplitInput",
    "ChunkSpans",
    "MarkupJoin",
    "content_offsets",
    "finish",
    "make_boundaries",
    "trim_token_spans",
    "with_trimmed_ends",
]

# (doc, tok, sentence_token_spans (n, 2) int32) -> (n, dim) float32 sentence vectors
SentenceVectors = Callable[[Document, Tokenization, np.ndarray], np.ndarray]


@dataclasses.dataclass(eq=False)
class SplitInput:
    """One document as a strategy's own rule (:meth:`~latechunk.strategies.base.Strategy._chunk_spans`) reads it:
    the arguments of ``Strategy.split`` and what several strategies derive from them, each computed once, when
    first asked for.

    Attributes:
        doc: The document.
        tok: Its one whole-document tokenization.
        sentence_vectors: As given to ``Strategy.split``: the sentence-vector callable, or None.
        segmenter: As given to ``Strategy.split``: the run's sentence segmenter, or None (:attr:`sentences` then
            makes a fresh one).
    """

    doc: Document
    tok: Tokenization
    sentence_vectors: SentenceVectors | None = None
    segmenter: SentenceSegmenter | None = None

    @functools.cached_property
    def content(self) -> ContentTokens:
        """The document's content tokens: ``content_tokens(doc.text, tok)``."""
        return content_tokens(self.doc.text, self.tok)

    @functools.cached_property
    def sentences(self) -> SentenceSegmenter:
        """The run's sentence segmenter, or a fresh in-process one (no workers, its own cache) when none was given."""
        return SentenceSegmenter() if self.segmenter is None else self.segmenter

    @functools.cached_property
    def offs(self) -> np.ndarray:
        """(n, 2), int32. The content tokens' character offsets (:func:`content_offsets`)."""
        return content_offsets(self.tok)

    @functools.cached_property
    def markdown(self) -> bool:
        """Whether the document is markdown input (:func:`~latechunk.strategies._markdown.is_markdown_input`).

        Raises:
            ValueError: on a ``markdown`` metadata value that is not a flag (the pipeline skips the document).
        """
        return is_markdown_input(self.doc)

    @functools.cached_property
    def carried(self) -> np.ndarray:
        """(n + 1,), int64. Prefix counts of the content tokens that carry content, not markup alone
        (:func:`~latechunk.strategies._markup_join.content_prefix`)."""
        return content_prefix(self.doc.text, self.offs)

    def joins_markup(self, spans: np.ndarray) -> bool:
        """Whether chunks of markup alone join a neighbour (issue 16): more than one chunk, on markdown input.

        Args:
            spans: (k, 2). The chunks' spans.

        Returns:
            ``k > 1 and self.markdown`` (:attr:`markdown` is read only when ``k > 1``).
        """
        return spans.shape[0] > 1 and self.markdown


@dataclasses.dataclass(frozen=True)
class MarkupJoin:
    """How a chunk of markup alone (front matter, a thematic break, a fence marker, link reference definitions, an
    HTML comment) joins a neighbour on markdown input: the arguments of
    :func:`~latechunk.strategies._markup_join.join_markup_only` (issue 16).

    Attributes:
        budget: Most tokens per joined chunk; None: no limit.
        cost: (k,), int, or None. Extra tokens each chunk costs (a table header context).
        cuts: Returns sorted content-relative positions where the chunk before markup may hand over its tail,
            coarse first; called only when a join is tried.
        trailing: Content-relative positions where markup that belongs to the text before it starts (a fence's
            closing line cut from its code, issue 36).
    """

    budget: int | None
    cost: np.ndarray | None = None
    cuts: Callable[[], tuple[np.ndarray, ...]] = tuple
    trailing: Sequence[int] = ()


@dataclasses.dataclass(frozen=True)
class ChunkSpans:
    """A strategy's chunks of one document, before the steps ``Strategy.split`` does for every strategy.

    Attributes:
        spans: (k, 2), int. Half-open content-relative token spans, starts strictly increasing.
        heading_paths: k tuples of heading titles, outermost first; None: none.
        contexts: k strings of extra embedding context (never part of the chunk text); None: none.
        markup: How a chunk of markup alone joins a neighbour on markdown input; None: never joined.
    """

    spans: np.ndarray
    heading_paths: tuple[tuple[str, ...], ...] | None = None
    contexts: tuple[str, ...] | None = None
    markup: MarkupJoin | None = None


def content_offsets(tok: Tokenization) -> np.ndarray:
    """The character offsets of the content tokens (the frame left out).

    Args:
        tok: The document's tokenization.

    Returns:
        (n_content, 2), int32, read-only: a view of ``tok.offsets`` (no copy: 8 bytes a token of a long document).
        Half-open ``[start, end)`` character offsets into the document text; row p is content token p (document
        token ``tok.content_start + p``).
    """
    return tok.offsets[tok.content_start : tok.content_end]


def finish(
    doc: Document,
    tok: Tokenization,
    spans: np.ndarray,
    spec: str,
    heading_paths: tuple[tuple[str, ...], ...] | None = None,
    contexts: tuple[str, ...] | None = None,
    content: ContentTokens | None = None,
) -> Boundaries:
    """Shift content-relative spans to document positions and build the Boundaries.

    A document without a content token (only whitespace tokens, from a byte-level BPE or SentencePiece
    tokenizer) gets no chunks, as one without tokens does (BR-004, BR-023).

    Args:
        doc: The document.
        tok: Its tokenization.
        spans: (n_chunks, 2), int. Half-open content-relative token spans.
        spec: The strategy's canonical SPEC, stored in the Boundaries.
        heading_paths: Per chunk, heading titles outermost first; None: none.
        contexts: Per chunk, extra embedding context (never part of the chunk text); None: none.
        content: ``content_tokens(doc.text, tok)`` if the strategy has it; None: computed here.

    Returns:
        The :class:`~latechunk.types.Boundaries` (token spans shifted by ``tok.content_start``; char spans
        from the token offsets).

    Raises:
        ValueError: as :func:`make_boundaries` (an empty span, a span outside the
            content tokens, per-chunk tuples of the wrong length).
    """
    spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    content = content_tokens(doc.text, tok) if content is None else content
    if spans.shape[0] and not content.any:
        spans = spans[:0]
        heading_paths = () if heading_paths is not None else None
        contexts = () if contexts is not None else None
    return make_boundaries(doc, tok, spans + tok.content_start, spec, heading_paths, contexts, content)


def make_boundaries(
    doc: Document,
    tok: Tokenization,
    token_spans: np.ndarray | list[tuple[int, int]],
    strategy: str,
    heading_paths: tuple[tuple[str, ...], ...] | None = None,
    contexts: tuple[str, ...] | None = None,
    content: ContentTokens | None = None,
) -> Boundaries:
    """Build :class:`Boundaries` from content token spans; char spans come from the token offsets.

    The char spans hold no whitespace at either end, so whitespace-only tokens (byte-level BPE, SentencePiece;
    some zero-width under ``trim_offsets``) at either end of a span that lie outside its char span are dropped
    from the token span (:func:`trim_token_spans`): a chunk's token span and char span then hold the same
    content, and a chunk ``"a"`` followed by a newline token is one token, not two (issue 36). Such tokens
    between two chunks belong to neither; a whitespace token between two of a chunk's characters stays in it.

    Args:
        doc: The document.
        tok: Its tokenization.
        token_spans: (n, 2), int. Half-open token positions into ``tok``, inside the content tokens.
        strategy: The SPEC of the strategy, stored in the Boundaries.
        heading_paths: n tuples of heading titles, outermost first; ``None`` = none.
        contexts: n strings of extra embedding context (never part of the chunk text); ``None`` = none.
        content: ``latechunk.tokenize.content_tokens(doc.text, tok)`` if the caller has it; None: computed.

    Returns:
        Boundaries with ``char_spans = char_spans_from_token_spans(doc.text, tok, token_spans)`` and the token
        spans trimmed to them (never longer than given), both int32 (n, 2).

    Raises:
        ValueError: if a span is empty or outside the content tokens, or the per-chunk tuples have the wrong
            length.
    """
    ts = np.asarray(token_spans, dtype=np.int32).reshape(-1, 2)
    content = content_tokens(doc.text, tok) if content is None else content
    cs = char_spans_from_token_spans(doc.text, tok, ts, content)
    return Boundaries(
        doc_id=doc.doc_id,
        token_spans=trim_token_spans(tok, ts, cs, content),
        char_spans=cs,
        heading_paths=heading_paths or (),
        contexts=contexts or (),
        strategy=strategy,
    )


def trim_token_spans(tok: Tokenization, token_spans: np.ndarray, char_spans: np.ndarray,
                     content: ContentTokens) -> np.ndarray:
    """Token spans without the whitespace-only tokens at their ends that lie outside their char spans.

    A token at either end of a span is dropped when it covers no non-whitespace character (``content.mask`` is
    False) and is not strictly inside the char span ``[s, e)`` (``s < start`` and ``end < e``; for a zero-width
    token at ``p``, ``s < p < e``). A span that holds no content token (only a caller's own spans can be so) is
    kept as it is.

    Args:
        tok: The document's tokenization.
        token_spans: (n, 2), int. Half-open token positions into ``tok``, inside the content tokens.
        char_spans: (n, 2), int. Their char spans (:func:`~latechunk.tokenize.char_spans_from_token_spans`).
        content: The document's :class:`~latechunk.tokenize.ContentTokens`.

    Returns:
        (n, 2), int32. The trimmed token spans: each inside the one given, non-empty, holding every content
        token of the one given.
    """
    ts = np.asarray(token_spans, dtype=np.int64).reshape(-1, 2)
    out = ts.astype(np.int32, copy=True)
    if ts.shape[0] == 0 or content.mask.all():  # WordPiece: no whitespace tokens, nothing to trim
        return out
    c0 = tok.content_start
    mask = content.mask
    offs = tok.offsets[c0 : tok.content_end].astype(np.int64)
    rel = ts - c0
    odd = np.flatnonzero(~mask[rel[:, 0]] | ~mask[rel[:, 1] - 1])
    for i in odd.tolist():
        a, b = rel[i].tolist()
        if not mask[a:b].any():
            continue
        s, e = (int(x) for x in char_spans[i])
        while not mask[a] and not _strictly_inside(offs[a], s, e):
            a += 1
        while not mask[b - 1] and not _strictly_inside(offs[b - 1], s, e):
            b -= 1
        out[i] = (a + c0, b + c0)
    return out


def _strictly_inside(off, s: int, e: int) -> bool:
    """Whether a token at offsets ``off`` lies strictly inside ``[s, e)`` (a zero-width one at ``p``: s < p < e)."""
    t0, t1 = int(off[0]), int(off[1])
    return s < t0 < e if t1 <= t0 else s < t0 and t1 < e


def with_trimmed_ends(points: np.ndarray, content: ContentTokens) -> np.ndarray:
    """Cut points with the ends of the token spans that start or end there once trimmed of whitespace tokens
    (:func:`trim_token_spans`): for each point ``p``, also the first content token at
    or after it and one past the last content token before it.

    Args:
        points: Content-relative token positions in ``[0, n]`` (int array).
        content: The document's :class:`~latechunk.tokenize.ContentTokens` (n content tokens).

    Returns:
        Sorted unique int64 content-relative positions, a superset of ``points``.
    """
    points = np.asarray(points, dtype=np.int64).reshape(-1)
    mask = content.mask
    n = mask.shape[0]
    if mask.all() or points.size == 0:
        return np.unique(points)
    idx = np.arange(n + 1, dtype=np.int64)
    next_content = np.minimum.accumulate(np.where(np.append(mask, True), idx, n)[::-1])[::-1]
    after_last = np.maximum.accumulate(np.concatenate([[0], np.where(mask, idx[1:], 0)]))
    return np.unique(np.concatenate([points, next_content[points], after_last[points]]))
