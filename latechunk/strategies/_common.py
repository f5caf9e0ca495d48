"""Span machinery shared by the built-in strategies.

Positions here are *content-relative*: ``p`` in ``[0, n_content]`` names the cut before content token ``p``
(document position ``tok.content_start + p``). :func:`~latechunk.strategies._split.finish` shifts them back and
builds the Boundaries.

A cut between two tokens is *allowed* when the right token starts strictly after the left token starts (or the
left one has zero-width offsets) and not before it ends, so the two sides of a cut never share a character: one character split into several wordpieces
(a Hangul syllable, an emoji with a modifier) always stays in one chunk, and char starts strictly increase
whenever token starts do. With a tokenizer that makes tokens of whitespace alone (byte-level BPE, SentencePiece),
a cut is also made only before a *content token* (one covering a non-whitespace character,
:class:`latechunk.tokenize.ContentTokens`) that has another content token before it: whitespace tokens stay with
the text before them, so no chunk is only whitespace (BR-023). WordPiece makes no whitespace tokens, and there
this second rule never applies. A chunk's token span then leaves out the whitespace tokens at its ends, which lie
outside its char span (:func:`latechunk.strategies.base.trim_token_spans`, issue 36): both spans hold the same
content, and the budget holds for the tokens a chunk keeps.
"""

from __future__ import annotations

import functools
import re
from numbers import Integral
from typing import ClassVar

import numpy as np

from latechunk.sentences import LINE_BREAK, PARAGRAPH_BREAK, SentenceSegmenter
from latechunk.strategies._fences import keep_delimiters
from latechunk.strategies._markdown import block_units, fence_delimiters
from latechunk.strategies._markup_join import content_prefix, join_markup_only
from latechunk.strategies._split import MarkupJoin, content_offsets, finish, with_trimmed_ends
from latechunk.tokenize import ContentTokens, content_tokens
from latechunk.types import Tokenization

__all__ = [
    "MAX_SENTENCES",
    "MAX_TOKENS",
    "PieceBudget",
    "PieceSplitter",
    "SentenceRuns",
    "allowed_cuts",
    "check_int",
    "check_size_overlap",
    "content_offsets",
    "finish",
    "join_markup_only",
    "content_prefix",
    "merge_pieces",
    "or_fresh_segmenter",
    "snap_down",
    "snap_table",
    "strided_spans",
    "with_trimmed_ends",
]

_EMPTY = np.zeros((0, 2), dtype=np.int64)

MAX_TOKENS = 1_000_000
"""The most a token-count parameter (``size``, ``overlap``, ``max_tokens``, ``min_tokens``) may be: far above any
chunk a model can pool from one document, and far below what overflows the int64 token positions of a split."""
MAX_SENTENCES = 100_000
"""The most a sentence-count parameter (``sentence_window``'s ``window``) may be."""


def check_int(
    strategy: str,
    name: str,
    value,
    minimum: int | None = None,
    maximum: int | None = MAX_TOKENS,
    unit: str = "tokens",
) -> None:
    """Check that a strategy parameter is an int (not a bool), at least ``minimum`` and at most ``maximum``.

    Every int parameter has an upper bound, so that a value no one means (``size=99999999999999999999999``) is
    refused when the strategy is built, before any work, instead of overflowing in each document's split.

    Args:
        strategy: The strategy's name, for the message.
        name: The parameter's name, for the message.
        value: The value to check.
        minimum: The smallest allowed value; None: no lower bound.
        maximum: The largest allowed value (default :data:`MAX_TOKENS`); None: none (for a parameter the caller
            bounds itself, such as ``heading``'s levels).
        unit: What the parameter counts, for the message (``tokens``, ``sentences``).

    Raises:
        TypeError: if ``value`` is not an int, or is a bool.
        ValueError: if ``value < minimum`` or ``value > maximum``.
    """
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{strategy}: {name} must be an int, got {value!r} ({type(value).__name__})")
    if minimum is not None and value < minimum:
        raise ValueError(f"{strategy}: {name} must be >= {minimum}, got {name}={value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{strategy}: {name} must be at most {maximum:,} {unit}, got {name}={value}")


def check_size_overlap(strategy: str, size_name: str, size, overlap) -> None:
    """Validate a (size, overlap) pair: ``size > 0`` and ``0 <= overlap < size`` (BR-003).

    Args:
        strategy: The strategy's name, for the message.
        size_name: The size parameter's name (``size``, ``max_tokens``), for the message.
        size: Tokens per chunk.
        overlap: Tokens shared by consecutive chunks.

    Raises:
        TypeError: if either is not an int.
        ValueError: if either is over :data:`MAX_TOKENS`, or naming both values, if the pair is not allowed (a
            stride ``size - overlap <= 0`` never moves).
    """
    check_int(strategy, size_name, size)
    check_int(strategy, "overlap", overlap)
    if size <= 0 or overlap < 0 or overlap >= size:
        raise ValueError(
            f"{strategy}: needs {size_name} > 0 and 0 <= overlap < {size_name}, got {size_name}={size}, "
            f"overlap={overlap}; lower the overlap or raise {size_name}"
        )


def or_fresh_segmenter(sentences: SentenceSegmenter | None) -> SentenceSegmenter:
    """``sentences``, or a fresh in-process segmenter (no workers, its own cache) when None.

    Args:
        sentences: The run's segmenter, as passed to ``Strategy.split``, or None.

    Returns:
        A :class:`~latechunk.sentences.SentenceSegmenter`.
    """
    return SentenceSegmenter() if sentences is None else sentences


class PieceBudget:
    """What ``recursive`` and ``heading`` share as strategies: a ``max_tokens`` budget (with ``overlap``) filled
    with pieces cut coarse first (paragraphs, lines, sentences, tokens: :class:`PieceSplitter`), and LangChain's
    names for the two. Mixed in before :class:`~latechunk.strategies.base.Strategy` by a class with a
    ``max_tokens`` field."""

    aliases: ClassVar[dict[str, str]] = {"chunk_size": "max_tokens", "size": "max_tokens", "chunk_overlap": "overlap"}

    def sentence_paragraphs(self) -> int | None:
        """Paragraphs with a line of more than ``max_tokens`` tokens: only such a line reaches the sentence level.

        Returns:
            ``max_tokens``.
        """
        return self.max_tokens


class SentenceRuns:
    """What ``sentence_window`` and ``semantic`` share as strategies: their chunks are runs of whole sentences.
    Mixed in before :class:`~latechunk.strategies.base.Strategy`."""

    def sentence_paragraphs(self) -> int | None:
        """Every paragraph: a chunk is made of whole sentences, wherever it is.

        Returns:
            0 (the sentences of every paragraph).
        """
        return 0


def allowed_cuts(offs: np.ndarray, content: ContentTokens | None = None) -> np.ndarray:
    """Where a chunk may end: between two tokens that share no character, and (with ``content``) only before a
    content token that has another content token before it (see the module docstring).

    Args:
        offs: (n, 2), int. Character offsets of the content tokens (:func:`content_offsets`).
        content: The document's :class:`~latechunk.tokenize.ContentTokens`; None: every token counts as a
            content token (right for WordPiece, which makes no whitespace tokens).

    Returns:
        (n + 1,), bool. ``allowed[p]``: a chunk may end before content token ``p``; ``allowed[0]`` and
        ``allowed[n]`` are always True.
    """
    n = offs.shape[0]
    ok = np.ones(n + 1, dtype=bool)
    if n > 1:
        # a zero-width token on the left (a space under trim_offsets) shares no character with the right one
        ok[1:n] = ((offs[1:, 0] > offs[:-1, 0]) | (offs[:-1, 1] <= offs[:-1, 0])) & (offs[1:, 0] >= offs[:-1, 1])
        if content is not None:
            ok[1:n] &= content.mask[1:] & np.logical_or.accumulate(content.mask)[:-1]
    return ok


def snap_table(allowed: np.ndarray) -> np.ndarray:
    """The largest allowed cut at or before each position; build it once and index it for many lookups.

    Args:
        allowed: (n + 1,), bool. :func:`allowed_cuts`.

    Returns:
        (n + 1,), int64. ``table[p]``: the largest allowed cut ``<= p`` (content-relative token position; 0 is
        always allowed).
    """
    return np.maximum.accumulate(np.where(allowed, np.arange(allowed.shape[0]), 0))


def snap_down(pos: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """The largest allowed cut ``<= pos``, elementwise (0 is always allowed).

    Args:
        pos: Content-relative token positions in ``[0, n]`` (int array or scalar).
        allowed: (n + 1,), bool. :func:`allowed_cuts`.

    Returns:
        int64 array of the shape of ``pos``: the snapped positions.
    """
    return snap_table(allowed)[np.asarray(pos, dtype=np.int64)]


def strided_spans(a: int, b: int, size: int, overlap: int) -> np.ndarray:
    """Spans of ``size`` positions over ``[a, b)`` with stride ``size - overlap``, the last one not inside the
    previous one.

    Span i is ``[a + i * stride, min(a + i * stride + size, b))``. ``fixed`` applies it to content tokens,
    ``sentence_window`` to sentence indices.

    Args:
        a: First position (token or sentence index, the caller's unit).
        b: One past the last position.
        size: Positions per span (> 0).
        overlap: Positions shared by consecutive spans (``0 <= overlap < size``; not checked here).

    Returns:
        (k, 2), int64. Half-open spans with ``k = 1 + ceil(max(0, b - a - size) / stride)``; (0, 2) when
        ``b <= a``.
    """
    n = b - a
    if n <= 0:
        return _EMPTY.copy()
    stride = size - overlap
    k = 1 + -(-max(0, n - size) // stride)
    s = a + np.arange(k, dtype=np.int64) * stride
    return np.stack([s, np.minimum(s + size, b)], axis=1)


def merge_pieces(
    pieces: np.ndarray,
    max_tokens: int,
    overlap: int = 0,
    cost: np.ndarray | None = None,
    sticky: np.ndarray | None = None,
    alone: np.ndarray | None = None,
) -> np.ndarray:
    """Greedily merge adjacent pieces into chunks of at most ``max_tokens`` tokens.

    A chunk grows while the next piece still fits. With ``overlap > 0`` the next chunk starts with the longest
    proper suffix of whole pieces of the previous chunk that holds at most ``overlap`` tokens and leaves room for
    the next piece (LangChain's ``_merge_splits`` rule, in tokens), so chunk starts strictly increase.
    A chunk does not end with a run of *sticky* pieces (a heading, a table's header rows: they belong to what
    follows): the longest tail of the run that fits with the piece after it moves on to start the next chunk
    (that chunk then carries no overlap), at least one piece staying behind, also when the chunk is all sticky;
    when that piece is sticky too, the tail must fit with the rest of its run and the piece that ends it, unless
    those alone do not fit. A piece marked *alone* (a fence's closing line that does not fit with its code, issue
    36) takes no piece after it into its chunk, nor into the next as overlap: the text after a fence never
    follows a stray closing line (rendered, it would open a code block).

    Args:
        pieces: (k, 2), int. Contiguous half-open token ranges tiling one range, in order.
        max_tokens: Budget per chunk.
        overlap: At most this many tokens shared by consecutive chunks.
        cost: (k,), int or None. Extra tokens (embedding context) a chunk costs when it starts with piece i;
            its budget is then ``max_tokens - cost[i]``.
        sticky: (k,), bool or None. ``sticky[i]``: piece i belongs with the piece after it.
        alone: (k,), bool or None. ``alone[i]``: no piece after piece i joins a chunk that starts with it.

    Returns:
        (m, 2), int64. Chunk token ranges. A piece longer than its budget becomes a chunk of its own.
    """
    k = pieces.shape[0]
    if k == 0:
        return _EMPTY.copy()
    starts = pieces[:, 0].tolist()
    ends = pieces[:, 1].tolist()
    lengths = (pieces[:, 1] - pieces[:, 0]).tolist()
    costs = [0] * k if cost is None else np.asarray(cost).tolist()
    stick = [False] * k if sticky is None else np.asarray(sticky, dtype=bool).tolist()
    lone = [False] * k if alone is None else np.asarray(alone, dtype=bool).tolist()
    follow = lengths[:]  # piece i with the sticky pieces after it and the piece that ends their run
    for i in range(k - 2, -1, -1):
        if stick[i]:
            follow[i] += follow[i + 1]
    out = []
    first = 0  # the current chunk is pieces[first:i]
    total = 0
    for i in range(k):
        n_i = lengths[i]
        if i > first and (total + n_i > max_tokens - costs[first] or lone[first]):
            # the chunk ends before piece j: back over the longest tail of a sticky run that fits with piece i,
            # one piece at least staying before it (issue 36: also when the chunk is all sticky)
            j, carried = i, 0
            need = follow[i] if follow[i] <= max_tokens - costs[i] else n_i  # what follows, when it can fit
            while j - 1 > first and stick[j - 1] and carried + lengths[j - 1] + need <= max_tokens - costs[j - 1]:
                carried += lengths[j - 1]
                j -= 1
            out.append((starts[first], ends[j - 1]))
            if j < i:
                first, total = j, carried
            else:
                while first < i and (total > overlap or total + n_i > max_tokens - costs[first] or lone[first]):
                    total -= lengths[first]
                    first += 1
        total += n_i
    out.append((starts[first], ends[k - 1]))
    return np.asarray(out, dtype=np.int64).reshape(-1, 2)


class PieceSplitter:
    """Cuts token ranges of one document into pieces that fit a budget, coarse separators first.

    Levels: ``paragraph`` (blank lines, CRLF included), ``line`` (any line break), ``sentence`` (pysbd, from
    the run's :class:`~latechunk.sentences.SentenceSegmenter`), ``token`` (every allowed cut). A range that fits
    is one piece; one that does not is cut at its first level that has a cut inside it, and each part that still
    does not fit goes down a level.
    A run of tokens with no allowed cut inside (the wordpieces of one character) stays whole even when it is
    longer than the budget: that is the only way a chunk can exceed ``max_tokens``. (A piece may also be longer
    by whitespace tokens after its text, where no cut is allowed; the chunk's token span leaves them out.)

    Markdown blocks (issue 16, :meth:`set_blocks`): a paragraph-level cut never falls inside a code block
    (fenced or indented, also inside a list item or an admonition) or an admonition/content tab, unless the
    range being cut lies inside that block: so a block that fits is one piece; a code block that alone exceeds
    the budget is cut at lines (then tokens), a container at its own paragraphs. A fence's delimiter lines stay
    with its code (issue 36): no piece ends with an opening line (```` ```python ````) or starts with a closing
    line when the two pieces fit the budget together; when they do not, the code piece is cut at a line so that
    the delimiter line holds its first or last lines (:meth:`keep_delimiters`). Only a delimiter line that does
    not fit the budget with the one line of code next to it is a piece of its own.

    Args:
        text: The document text.
        tok: Its tokenization.
        max_tokens: Budget per piece.
        sentences: The run's sentence segmenter (shared by its strategies); None: a fresh in-process one.
        content: ``content_tokens(text, tok)`` if the caller has it; None: computed here.
    """

    LEVELS = ("paragraph", "line", "sentence", "token")

    def __init__(
        self,
        text: str,
        tok: Tokenization,
        max_tokens: int,
        sentences: SentenceSegmenter | None = None,
        content: ContentTokens | None = None,
    ) -> None:
        self.text = text
        self.sentences = or_fresh_segmenter(sentences)
        self.offs = content_offsets(tok)
        self.n = int(self.offs.shape[0])
        self.content = content_tokens(text, tok) if content is None else content
        self.allowed = allowed_cuts(self.offs, self.content)
        self.max_tokens = max_tokens
        self._global: dict[str, np.ndarray] = {}
        self.blocks = _EMPTY.copy()  # (k, 2) token ranges that paragraph cuts do not enter
        self._containers: set[tuple[int, int]] = set()
        self.after_opening: frozenset[int] = frozenset()  # cuts after a fence's opening line
        self.before_closing: frozenset[int] = frozenset()  # cuts before a fence's closing line

    @functools.cached_property
    def line_starts(self) -> np.ndarray:
        """(n_lines + 1,), int64. The character where each line starts (line breaks as
        :data:`latechunk.sentences.LINE_BREAK`, markdown-it's), then ``len(text)``."""
        ends = np.fromiter((m.end() for m in LINE_BREAK.finditer(self.text)), dtype=np.int64, count=-1)
        return np.concatenate([[0], ends, [len(self.text)]])

    def tokens_at_lines(self, lines) -> np.ndarray:
        """:meth:`tokens_at_chars` of the first characters of 0-based ``lines`` (a line past the last: the end).

        Args:
            lines: 0-based line numbers (int iterable), as markdown-it's token maps give them.

        Returns:
            (m,), int64. Sorted unique content-relative allowed cuts strictly inside ``(0, n)``.
        """
        last = self.line_starts.shape[0] - 1
        return self.tokens_at_chars([int(self.line_starts[min(int(line), last)]) for line in lines])

    def set_markdown_blocks(self, md_tokens) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """:meth:`set_blocks` from the document's markdown parse: its code blocks, admonitions and content tabs,
        and its fences' delimiter lines.

        Args:
            md_tokens: ``markdown_parser().parse(markdown_source(text))``.

        Returns:
            ``(code, containers)`` of :func:`~latechunk.strategies._markdown.block_units`.
        """
        code, containers = block_units(self.text, md_tokens)
        if code or containers:  # a fence is a code block: without one there is no delimiter line either
            self.set_blocks(code, containers, self.line_starts, fence_delimiters(self.text, md_tokens))
        return code, containers

    def set_blocks(self, code, containers, line_starts, delimiters=((), ())) -> None:
        """Keep paragraph-level cuts out of markdown blocks, and fence delimiter lines with their code (see the
        class docstring).

        Args:
            code: ``(first_line, end_line)`` of code blocks (:func:`latechunk.strategies._markdown.block_units`).
            containers: ``(first_line, end_line)`` of admonitions and content tabs.
            line_starts: (n_lines + 1,), int. The character where each line starts, then ``len(text)``.
            delimiters: ``(after_opening, closing)`` line numbers of fences
                (:func:`latechunk.strategies._markdown.fence_delimiters`); ``((), ())``: none kept.
        """
        n_lines = len(line_starts) - 1
        after_opening, closing = ([int(line) for line in lines] for lines in delimiters)
        at = self.tokens_at_chars  # a position that is no allowed cut (or an end) is left out: no cut falls there
        self.after_opening = frozenset(at([line_starts[min(line, n_lines)] for line in after_opening]).tolist())
        self.before_closing = frozenset(at([line_starts[min(line, n_lines)] for line in closing]).tolist())
        ranges = []
        for kind, items in (("code", code), ("container", containers)):
            for l0, l1 in items:
                chars = [line_starts[min(l0, n_lines)], line_starts[min(l1, n_lines)]]
                a, b = np.searchsorted(self.content.keys, np.asarray(chars, dtype=np.int64), side="left").tolist()
                if b - a > 1:
                    ranges.append((a, b))
                    if kind == "container":
                        self._containers.add((a, b))
        self.blocks = np.asarray(sorted(ranges), dtype=np.int64).reshape(-1, 2)

    def _outside_blocks(self, cut: np.ndarray, a: int, b: int) -> np.ndarray:
        """The cuts that fall inside no block, blocks holding the whole range ``[a, b)`` aside."""
        if cut.size == 0 or self.blocks.shape[0] == 0:
            return cut
        keep = np.ones(cut.shape[0], dtype=bool)
        for s, e in self.blocks.tolist():
            if e <= a or s >= b or (s <= a and e >= b):
                continue
            keep &= ~((cut > s) & (cut < e))
        return cut[keep]

    def outside_fitting_blocks(self, cut, budget: int) -> np.ndarray:
        """The cuts that fall inside no markdown block (code block, admonition, content tab) that fits ``budget``:
        where markup may take the tail of the chunk before it (issue 36: link definitions after a fence that fits
        took the fence's last lines, cutting it although the cut before the fence was there).

        Args:
            cut: Sorted content-relative token positions (int array-like).
            budget: Most tokens per chunk.

        Returns:
            (m,), int64: ``cut`` without the positions strictly inside a block of at most ``budget`` tokens.
        """
        cut = np.asarray(cut, dtype=np.int64).reshape(-1)
        fit = self.blocks[self.blocks[:, 1] - self.blocks[:, 0] <= budget]
        if cut.size == 0 or fit.shape[0] == 0:
            return cut
        delta = np.zeros(cut.size + 1, dtype=np.int64)
        np.add.at(delta, np.searchsorted(cut, fit[:, 0], side="right"), 1)  # the first cut after a block's start
        np.add.at(delta, np.searchsorted(cut, fit[:, 1], side="left"), -1)  # the first cut at or after its end
        return cut[np.cumsum(delta[:-1]) == 0]

    def markup_join(self, units: np.ndarray, budget: int, cost: np.ndarray | None = None) -> MarkupJoin:
        """How a chunk of markup alone joins a neighbour when a strategy cuts with this splitter (issue 36): it may
        take the previous chunk's tail from a cut at ``units``, else at a paragraph, else at a line, never inside a
        fence, admonition or tab that fits ``budget`` (:meth:`outside_fitting_blocks`); a fence's closing line cut
        from its code joins no text after it (``trailing``).

        Args:
            units: Sorted content-relative starts of the strategy's units (its pieces, its blocks): the coarsest
                cuts.
            budget: Most tokens per chunk.
            cost: (k,), int, or None. Extra tokens each chunk costs (a table header context).

        Returns:
            The :class:`~latechunk.strategies._split.MarkupJoin`; its cuts are found only when a join is tried.
        """

        def cuts() -> tuple[np.ndarray, ...]:
            coarse_first = (units, self.cuts("paragraph", 0, self.n), self.cuts("line", 0, self.n))
            return tuple(self.outside_fitting_blocks(c, budget) for c in coarse_first)

        return MarkupJoin(budget, cost, cuts, sorted(self.before_closing))

    def tokens_at_chars(self, chars) -> np.ndarray:
        """Token cuts at character positions: the allowed cut before the first token that starts at or after
        each position.

        Args:
            chars: Character positions into the document text (int array-like).

        Returns:
            (m,), int64. Sorted unique content-relative token positions strictly inside ``(0, n)`` that are
            allowed cuts (positions at the ends or not allowed are dropped). Whitespace tokens before such a
            token stay on the left (:attr:`latechunk.tokenize.ContentTokens.keys`).
        """
        pos = np.searchsorted(self.content.keys, np.asarray(chars, dtype=np.int64), side="left")
        pos = np.unique(pos)
        pos = pos[(pos > 0) & (pos < self.n)]
        return pos[self.allowed[pos]]

    def _regex_cuts(self, level: str, regex: re.Pattern) -> np.ndarray:
        if level not in self._global:
            ends = np.fromiter((m.end() for m in regex.finditer(self.text)), dtype=np.int64)
            self._global[level] = self.tokens_at_chars(ends)
        return self._global[level]

    def cuts(self, level: str, a: int, b: int) -> np.ndarray:
        """Sorted cuts of ``level`` strictly inside ``(a, b)``.

        Args:
            level: One of :attr:`LEVELS`.
            a: Start of the content-relative token range.
            b: Its end (exclusive).

        Returns:
            (m,), int64. Content-relative token positions, sorted, each an allowed cut.

        Raises:
            ValueError: on a level not in :attr:`LEVELS`.
        """
        if level in ("paragraph", "line"):
            arr = self._regex_cuts(level, PARAGRAPH_BREAK if level == "paragraph" else LINE_BREAK)
            return arr[np.searchsorted(arr, a, side="right") : np.searchsorted(arr, b, side="left")]
        if level == "sentence":
            c0, c1 = int(self.offs[a, 0]), int(self.offs[b - 1, 1])
            spans = self.sentences.char_spans_in(self.text, c0, c1)  # shared with the other strategies of the run
            if spans.shape[0] <= 1:
                return _EMPTY[:, 0]
            pos = self.tokens_at_chars(spans[:, 0].astype(np.int64))
            return pos[(pos > a) & (pos < b)]
        if level == "token":
            pos = np.arange(a + 1, b, dtype=np.int64)
            return pos[self.allowed[pos]]
        raise ValueError(f"unknown split level {level!r}; levels are {self.LEVELS}")

    def pieces(
        self, a: int, b: int, levels: tuple[str, ...] = LEVELS, max_tokens: int | None = None
    ) -> np.ndarray:
        """(k, 2), int64. Pieces tiling ``[a, b)``, each at most ``max_tokens`` long (see the class docstring).

        Args:
            a: Start of the content-relative token range.
            b: Its end (exclusive).
            levels: The separator levels to use, coarse first.
            max_tokens: Budget per piece; ``self.max_tokens`` if None.

        Returns:
            (k, 2), int64. Half-open content-relative token ranges, contiguous, in order.
        """
        budget = self.max_tokens if max_tokens is None else max_tokens
        return self.keep_delimiters(self._pieces(a, b, levels, budget), budget, levels)

    def is_delimiter_cut(self, pos: int) -> bool:
        """Whether a cut at ``pos`` takes a fence's delimiter line from its code (:meth:`set_blocks`)."""
        return pos in self.after_opening or pos in self.before_closing

    def keep_delimiters(self, pieces: np.ndarray, budget: int, levels: tuple[str, ...] = LEVELS) -> np.ndarray:
        """:func:`latechunk.strategies._fences.keep_delimiters` on this splitter: a fence's delimiter lines joined
        to their code across the cuts of ``pieces`` (issue 36).

        Args:
            pieces: (k, 2), int. Contiguous content-relative token ranges, in order.
            budget: Most tokens per piece.
            levels: The levels the pieces were cut at (:meth:`pieces`).

        Returns:
            (m, 2), int64 pieces tiling the same range.
        """
        return keep_delimiters(self, pieces, budget, levels)

    def _pieces(self, a: int, b: int, levels: tuple[str, ...], budget: int) -> np.ndarray:
        """:meth:`pieces` before :meth:`keep_delimiters`."""
        if b <= a:
            return _EMPTY.copy()
        if b - a <= budget:
            return np.asarray([[a, b]], dtype=np.int64)
        if not levels:  # one character's wordpieces, longer than the budget: never split a character
            return np.asarray([[a, b]], dtype=np.int64)
        cut = self.cuts(levels[0], a, b)
        if levels[0] == "paragraph":
            cut = self._outside_blocks(cut, a, b)
        if cut.size == 0:
            return self._pieces(a, b, levels[1:], budget)
        bounds = np.concatenate([[a], cut, [b]]).astype(np.int64)
        p = np.stack([bounds[:-1], bounds[1:]], axis=1)
        long = np.flatnonzero(p[:, 1] - p[:, 0] > budget)
        if long.size == 0:
            return p
        parts = []
        prev = 0
        for i in long.tolist():
            parts.append(p[prev:i])
            x, y = int(p[i, 0]), int(p[i, 1])
            # a container too long for the budget is cut at its own paragraphs first
            sub = levels if levels[0] == "paragraph" and (x, y) in self._containers else levels[1:]
            parts.append(self._pieces(x, y, sub, budget))
            prev = i + 1
        parts.append(p[prev:])
        return np.concatenate(parts)
