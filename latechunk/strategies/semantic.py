"""``semantic``: cut where consecutive sentences are least similar."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from numbers import Real
from typing import ClassVar

import numpy as np

from latechunk.sentences import SentenceSegmenter
from latechunk.strategies._common import (
    PieceSplitter,
    SentenceRuns,
    check_int,
    merge_pieces,
    or_fresh_segmenter,
    with_trimmed_ends,
)
from latechunk.strategies.base import ChunkSpans, MarkupJoin, SplitInput, Strategy, register
from latechunk.tokenize import ContentTokens, content_tokens
from latechunk.types import Document, Tokenization

__all__ = ["Semantic"]

#: semantic's default ``min_tokens`` (``max_tokens`` when that is smaller); see :class:`Semantic`
_DEFAULT_MIN_TOKENS = 16
#: semantic's most tokens per chunk when ``max_tokens`` is not given, capped at the model's content limit
DEFAULT_MAX_TOKENS = 512


def _consecutive_cosine(vectors: np.ndarray) -> np.ndarray:
    """(m - 1,), float64. ``sim[i] = cos(v[i], v[i + 1])``; 0 where either vector is zero."""
    v = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(v, axis=1)
    v = v / np.where(norms > 0, norms, 1.0)[:, None]
    return np.einsum("ij,ij->i", v[:-1], v[1:])


@register("semantic")
@dataclass(frozen=True)
class Semantic(SentenceRuns, Strategy):
    """Percentile breakpoints between sentences (Greg Kamradt, "5 Levels of Text Splitting", 2024,
    https://github.com/FullStackRetrieval-com/RetrievalTutorials, level 4; LangChain ``SemanticChunker`` with
    ``breakpoint_threshold_type="percentile"``).

    1. Sentences ``S_0..S_{m-1}`` from :meth:`latechunk.sentences.SentenceSegmenter.token_spans`.
    2. Sentence vectors ``v_i = sentence_vectors(doc, tok, spans)`` (one call; in late mode the pipeline pools
       the token states of the same forward pass over each sentence span).
    3. ``sim_i = cos(v_i, v_{i+1})`` for ``i < m - 1``; cut after sentence i iff
       ``sim_i < percentile(sim, self.percentile)`` (``numpy.percentile``, linear interpolation). ``percentile=10``
       cuts about the lowest decile of the document's own similarities. Kamradt and LangChain cut where the
       *distance* ``1 - sim`` exceeds its ``breakpoint_percentile``, so their 95 is this strategy's 5; the spec
       alias ``breakpoint_percentile=p`` sets ``percentile = 100 - p``.
    4. A group longer than ``max_tokens`` is re-cut at sentence ends (then tokens) and merged greedily up to
       ``max_tokens``; then, left to right, a chunk shorter than ``min_tokens`` takes in the group after it
       while they fit ``max_tokens`` (LangChain's ``min_chunk_size``: a cut is skipped while the chunk is too
       short), and a short last chunk joins the one before it. So a lone heading or code fence, a sentence of its
       own that the similarity cut leaves alone, stays with the text it introduces.
    5. On markdown input a chunk of markup alone (thematic break, front matter, fence marker, link reference
       definitions, HTML comment) joins the next chunk, else the previous one, when the two fit ``max_tokens``
       (issue 16, :func:`~latechunk.strategies._common.join_markup_only`).

    0 sentences give 0 chunks and 1 sentence gives 1 chunk, without asking for sentence vectors (BR-010): the threshold
    is never a percentile of an empty list.

    Args:
        percentile: Cut where the similarity of consecutive sentences is below this percentile of the
            document's similarities (0..100); alias ``breakpoint_percentile=p`` for ``100 - p``.
        min_tokens: A chunk shorter than this many tokens takes in the group after it (the last one joins the
            one before) while they fit ``max_tokens`` (>= 0, at most ``max_tokens``; 0: never); on markdown
            input only tokens that carry content count (front matter and markup do not); alias
            ``min_chunk_size``. The default 16 (``max_tokens`` when that is smaller)
            keeps a lone heading or code fence (3 tokens) with the text it introduces: on the five Chroma
            corpora (MiniLM) chunks under 8 tokens fall from 380 of 1590 (``min_tokens=0``) to 6 of 1144.
        max_tokens: Most tokens per chunk (1..1,000,000); alias ``chunk_size``. ``None`` (the default): 512,
            capped at the model's content limit (its input limit less the document frame: 510 for MiniLM) when
            the pipeline runs the strategy (:meth:`for_model`), so that no naive chunk needs two windows.
        source: Where sentence vectors come from: ``"late"`` (pooled from the same late pass) or a model name
            (the pipeline encodes each sentence's text with it).

    Raises:
        TypeError: if ``percentile`` is not a number, or ``min_tokens``/``max_tokens`` not an int.
        ValueError: on parameters out of range (``percentile`` outside [0, 100], ``max_tokens < 1``,
            ``min_tokens < 0`` or ``> max_tokens``, ``source`` empty or holding ``,``, ``=`` or ``|``).
    """

    bet: ClassVar[str] = "a fact ends where the text changes subject"
    needs_sentence_vectors: ClassVar[bool] = True
    aliases: ClassVar[dict] = {
        "breakpoint_percentile": ("percentile", lambda p: 100.0 - p),
        "chunk_size": "max_tokens",
        "min_chunk_size": "min_tokens",
    }

    percentile: float = field(
        default=10.0, metadata={"help": "cut where similarity < this percentile of the document's (0..100)"}
    )
    min_tokens: int = field(
        default=_DEFAULT_MIN_TOKENS,
        metadata={"help": "a chunk shorter than this takes in the next one (a lone heading stays with its text; >= 0)"},
    )
    max_tokens: int | None = field(
        default=None,
        metadata={"help": "most tokens per chunk (1..1,000,000); none: 512, capped at the model's content limit"},
    )
    source: str = field(
        default="late",
        metadata={"help": "sentence vectors: 'late' (pooled from the same pass) or a model name (pipeline)"},
    )

    def __post_init__(self) -> None:
        if isinstance(self.percentile, bool) or not isinstance(self.percentile, Real):
            raise TypeError(f"semantic: percentile must be a number, got {self.percentile!r}")
        if not 0.0 <= float(self.percentile) <= 100.0:
            raise ValueError(f"semantic: percentile must be in [0, 100], got percentile={self.percentile}")
        object.__setattr__(self, "percentile", float(self.percentile))
        if self.max_tokens is not None:
            check_int("semantic", "max_tokens", self.max_tokens, 1)
        check_int("semantic", "min_tokens", self.min_tokens, 0)
        limit = self.limit
        if self.min_tokens == _DEFAULT_MIN_TOKENS and limit < _DEFAULT_MIN_TOKENS:
            object.__setattr__(self, "min_tokens", limit)  # the default never exceeds max_tokens
        if self.min_tokens > limit:
            raise ValueError(
                f"semantic: needs min_tokens <= max_tokens, got min_tokens={self.min_tokens}, "
                f"max_tokens={limit}"
            )
        if not isinstance(self.source, str) or not self.source or any(c in self.source for c in ",=|"):
            raise ValueError(
                f"semantic: source must be 'late' or a model name without ',', '=', '|', got {self.source!r}"
            )

    @property
    def limit(self) -> int:
        """The most tokens per chunk as run: ``max_tokens``, or when that is None 512 capped at the content
        limit given to :meth:`for_model` (512 when none was given)."""
        if self.max_tokens is not None:
            return self.max_tokens
        return min(DEFAULT_MAX_TOKENS, getattr(self, "_content_limit", DEFAULT_MAX_TOKENS))

    def for_model(self, content_limit: int) -> Semantic:
        """The strategy as run for a model whose inputs hold at most ``content_limit`` content tokens.

        Args:
            content_limit: The model's input limit less its document frame, in tokens (510 for MiniLM).

        Returns:
            ``self`` when ``max_tokens`` is set; else a copy whose :attr:`limit` is
            ``min(512, content_limit)``. The copy's :attr:`spec` is unchanged (``max_tokens=None``).

        Raises:
            ValueError: if ``content_limit < 1``.
        """
        if self.max_tokens is not None:
            return self
        if content_limit < 1:
            raise ValueError(f"semantic: content_limit must be >= 1, got {content_limit}")
        copy = dataclasses.replace(self)
        object.__setattr__(copy, "_content_limit", int(content_limit))
        return copy

    def _chunk_spans(self, given: SplitInput) -> ChunkSpans:
        """Runs of sentences cut at low similarity, then re-cut and joined to fit (see the class docstring).

        Args:
            given: The document, its content tokens, the run's sentence segmenter, and ``sentence_vectors``
                (``(doc, tok, sentence_token_spans)`` -> sentence vectors: spans (m, 2) int32 in ``tok``'s
                positions, vectors (m, dim) float), called once per document of 2 or more sentences.

        Returns:
            The chunks; on markdown input a chunk of markup alone may take the tail of the chunk before it from a
            sentence start.

        Raises:
            ValueError: if ``sentence_vectors`` returns an array that is not (m, dim) or holds NaN or inf.
        """
        doc, tok = given.doc, given.tok
        sent = given.sentences.token_spans(doc, tok, given.content.keys)
        m = sent.shape[0]
        rel = sent.astype(np.int64) - tok.content_start
        if m <= 1:  # nothing to compare: no sentence vectors asked for, no percentile of an empty list (BR-010)
            groups = rel
        else:
            vectors = np.asarray(given.sentence_vectors(doc, tok, sent))
            if vectors.ndim != 2 or vectors.shape[0] != m:
                raise ValueError(
                    f"semantic: sentence_vectors returned shape {vectors.shape} for {m} sentences; "
                    f"expected ({m}, dim)"
                )
            if not np.isfinite(vectors).all():
                raise ValueError(f"semantic: sentence_vectors returned NaN or inf for document {doc.doc_id!r}")
            sim = _consecutive_cosine(vectors)
            threshold = float(np.percentile(sim, self.percentile))
            cut_after = np.flatnonzero(sim < threshold)  # cut between sentence i and i + 1
            group_starts = np.concatenate([[0], cut_after + 1])
            group_ends = np.append(cut_after + 1, m)
            groups = np.stack([rel[group_starts, 0], rel[group_ends - 1, 1]], axis=1)
        carried = given.carried if given.markdown else None
        groups = self._fit(doc.text, tok, rel, groups, given.sentences, given.content, carried)
        return ChunkSpans(groups, markup=MarkupJoin(self.limit, cuts=lambda: (rel[:, 0],)))

    def cut_points(
        self, doc: Document, tok: Tokenization, sentences: SentenceSegmenter | None = None
    ) -> np.ndarray:
        """Every token position where :meth:`split` may start or end a chunk, whatever the sentence vectors: the
        sentence starts and ends, and the cuts ``_fit`` may make inside a sentence longer than ``max_tokens``
        (lines, then tokens). Chunks are runs of sentences, re-cut and merged only at these points.

        Args:
            doc: The document.
            tok: Its whole-document tokenization.
            sentences: The run's sentence segmenter; None: a fresh in-process one.

        Returns:
            (k,), int64. Sorted unique document token positions.
        """
        sentences = or_fresh_segmenter(sentences)
        content = content_tokens(doc.text, tok)
        rel = sentences.token_spans(doc, tok, content.keys).astype(np.int64) - tok.content_start
        points = [rel.reshape(-1)]
        long = rel[rel[:, 1] - rel[:, 0] > self.limit]
        if long.shape[0]:
            splitter = PieceSplitter(doc.text, tok, self.limit, sentences, content)
            points += [splitter.pieces(int(a), int(b), ("line", "token")).reshape(-1) for a, b in long.tolist()]
        # a chunk's token span leaves out the whitespace tokens at its ends (make_boundaries): their ends too
        return with_trimmed_ends(np.concatenate(points), content) + tok.content_start

    def _fit(
        self,
        text: str,
        tok: Tokenization,
        rel: np.ndarray,
        groups: np.ndarray,
        sentences: SentenceSegmenter,
        content: ContentTokens,
        carried: np.ndarray | None = None,
    ) -> np.ndarray:
        """Re-cut groups longer than max_tokens, then join groups shorter than min_tokens: counted in the tokens
        that carry content (``carried``, :func:`content_prefix`; markdown input) where given, so front matter
        before a heading does not make "front matter + heading" long enough to stand alone (third trial)."""
        def short(a: int, b: int) -> bool:
            n = b - a if carried is None else int(carried[b] - carried[a])
            return n < self.min_tokens

        lengths = groups[:, 1] - groups[:, 0]
        if (lengths > self.limit).any():
            splitter = PieceSplitter(text, tok, self.limit, sentences, content)
            parts = []
            for a, b in groups.tolist():
                if b - a <= self.limit:
                    parts.append(np.asarray([[a, b]], dtype=np.int64))
                    continue
                # sentence pieces inside the group, each cut further if it alone is too long
                inner = rel[np.searchsorted(rel[:, 0], a) : np.searchsorted(rel[:, 1], b, side="right")]
                pieces = np.concatenate(
                    [splitter.pieces(int(x), int(y), ("line", "token")) for x, y in inner.tolist()]
                )
                parts.append(merge_pieces(pieces, self.limit))
            groups = np.concatenate(parts)
        if self.min_tokens > 0 and groups.shape[0] > 1:
            out = [list(groups[0])]
            for a, b in groups[1:].tolist():
                pa, pb = out[-1]
                if short(pa, pb) and b - pa <= self.limit:  # too short: take the next group in
                    out[-1][1] = b
                else:
                    out.append([a, b])
            if len(out) > 1 and short(*out[-1]) and out[-1][1] - out[-2][0] <= self.limit:
                last = out.pop()  # a short last chunk joins the one before it
                out[-1][1] = last[1]
            groups = np.asarray(out, dtype=np.int64)
        return groups
