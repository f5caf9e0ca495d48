"""``recursive``: cut at paragraphs, then lines, then sentences, then tokens; merge pieces up to a budget."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from latechunk.strategies._common import PieceBudget, PieceSplitter, check_size_overlap, merge_pieces
from latechunk.strategies._lead_in import join_table_heads, split_after_lead_ins
from latechunk.strategies._markdown import (
    lead_in_lines,
    markdown_parser,
    markdown_source,
    table_delimiter_lines,
)
from latechunk.strategies.base import ChunkSpans, SplitInput, Strategy, register

__all__ = ["Recursive"]


@register("recursive")
@dataclass(frozen=True)
class Recursive(PieceBudget, Strategy):
    r"""Recursive separator splitting, the rule of LangChain's ``RecursiveCharacterTextSplitter``, in tokens.

    1. The content tokens are cut into pieces of at most ``max_tokens`` tokens, coarse separators first: blank
       lines (``\n\n`` and ``\r\n\r\n``, BR-005), then line breaks, then sentence ends
       (:mod:`latechunk.sentences`, BR-009), then between any two tokens. A part goes down a level only if it is
       still too long, so separator-free text costs one pass over its tokens (BR-003).
    2. Adjacent pieces are merged greedily while the chunk still fits ``max_tokens``
       (:func:`~latechunk.strategies._common.merge_pieces`); with ``overlap > 0`` a chunk starts with the
       trailing whole pieces of the previous chunk that hold at most ``overlap`` tokens. A Markdown heading, and
       a table's header and delimiter rows (one piece), belong to what follows them (parsed with markdown-it-py,
       so a ``#`` in a code fence or front matter is no heading): a chunk does not end with them when they fit at
       the start of the next chunk with the piece after them; of a run of headings the longest tail that fits
       moves on, also when the chunk holds nothing else (issue 36). When even the last heading or title line does
       not fit with the piece after it, that piece is cut, coarse first (a fence at lines, no line of code cut for
       it), so that its start does (:func:`~latechunk.strategies._lead_in.split_after_lead_ins`).
    3. Markdown blocks (issue 16, parsed with markdown-it-py and mdit-py-plugins): a code fence (also indented,
       in a list item or nested), an admonition (``!!! type "Title"``, ``??? type``) or a content tab
       (``=== "Tab"``) is one unit at the paragraph level: it is cut inside only when it alone exceeds
       ``max_tokens`` (a fence then at lines, a container at its own paragraphs) or when it is the first block
       after a heading or title line that it does not fit with (above), and a container's title line stays with
       its body. A fence's opening line stays with its first lines of code and its closing line with its last
       when they fit the budget together; a closing line that does not fit with its code takes no text after it
       into its chunk (issue 36: no stray fence line before a heading). On markdown input (:func:`~latechunk.strategies._markdown.is_markdown_input`) a chunk
       of markup alone (a thematic break, front matter, a fence marker, link reference definitions, an HTML
       comment) joins the next chunk, or else the previous one, when the joined chunk fits ``max_tokens``, or
       takes the previous chunk's tail from a piece, paragraph or line cut that is not inside a fence, admonition
       or tab that fits ``max_tokens`` (issue 36) (:func:`~latechunk.strategies._common.join_markup_only`).

    Cuts fall between tokens, so separators are never duplicated or dropped (BR-002) and each chunk's text is
    the exact slice of its tokens. The one way a chunk can exceed ``max_tokens``: the wordpieces of one
    character, when there are more of them than ``max_tokens``.

    Args:
        max_tokens: Most content tokens per chunk (1..1,000,000); aliases ``chunk_size``, ``size``.
        overlap: Most tokens (whole pieces) shared by consecutive chunks (``0 <= overlap < max_tokens``);
            alias ``chunk_overlap``.

    Raises:
        TypeError: if ``max_tokens`` or ``overlap`` is not an int.
        ValueError: unless ``max_tokens > 0`` and ``0 <= overlap < max_tokens`` (BR-003).
    """

    bet: ClassVar[str] = "facts end at paragraphs, then sentences"

    max_tokens: int = field(default=256, metadata={"help": "most tokens per chunk (1..1,000,000)"})
    overlap: int = field(
        default=0,
        metadata={
            "help": "most tokens (whole pieces) shared by consecutive chunks (0 <= overlap < max_tokens)"
        },
    )

    def __post_init__(self) -> None:
        check_size_overlap("recursive", "max_tokens", self.max_tokens, self.overlap)

    def _chunk_spans(self, given: SplitInput) -> ChunkSpans:
        """Pieces cut coarse first, merged greedily up to ``max_tokens`` (see the class docstring).

        Args:
            given: The document, its content tokens and the run's sentence segmenter (for over-long lines).

        Returns:
            The merged chunks, no heading paths; on markdown input a chunk of markup alone may take the tail of
            the chunk before it from a piece, paragraph or line cut (:meth:`~latechunk.strategies._common.PieceSplitter.markup_join`).
        """
        text = given.doc.text
        splitter = PieceSplitter(text, given.tok, self.max_tokens, given.sentences, given.content)
        md_tokens = None
        if splitter.n > self.max_tokens:  # fences, admonitions and tabs stay whole when they fit (issue 16)
            md_tokens = markdown_parser().parse(markdown_source(text))
            splitter.set_markdown_blocks(md_tokens)
        pieces = splitter.pieces(0, splitter.n)
        sticky = None
        if pieces.shape[0] > 1:
            lines = lead_in_lines(text, md_tokens)
            if lines:
                sticky_at = splitter.tokens_at_lines(lines)
                title_at = splitter.tokens_at_lines(lead_in_lines(text, md_tokens, tables=False))  # issue 36
                pieces, _ = split_after_lead_ins(splitter, pieces, title_at, self.max_tokens)
                heads = splitter.tokens_at_lines(table_delimiter_lines(md_tokens))
                pieces = join_table_heads(pieces, heads, self.max_tokens)
                sticky = np.isin(pieces[:, 1], sticky_at)
        closing = sorted(splitter.before_closing)  # a fence's closing line cut from its code (issue 36)
        stray = np.isin(pieces[:, 0], closing) if closing else None
        chunks = merge_pieces(pieces, self.max_tokens, self.overlap, sticky=sticky, alone=stray)
        return ChunkSpans(chunks, markup=splitter.markup_join(pieces[:, 0], self.max_tokens))
