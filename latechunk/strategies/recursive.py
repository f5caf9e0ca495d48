"""``recursive``: cut at paragraphs, then lines, then sentences, then tokens; merge pieces up to a budget."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from latechunk.sentences import LINE_BREAK, SentenceSegmenter
from latechunk.strategies._common import (
    PieceSplitter,
    check_size_overlap,
    content_prefix,
    finish,
    join_markup_only,
    merge_pieces,
    or_fresh_segmenter,
)
from latechunk.strategies._lead_in import join_table_heads, split_after_lead_ins
from latechunk.strategies._markdown import (
    block_units,
    fence_delimiters,
    is_markdown_input,
    lead_in_lines,
    markdown_parser,
    markdown_source,
    table_delimiter_lines,
)
from latechunk.strategies.base import SentenceVectors, Strategy, register
from latechunk.types import Boundaries, Document, Tokenization

__all__ = ["Recursive"]


@register("recursive")
@dataclass(frozen=True)
class Recursive(Strategy):
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
    aliases: ClassVar[dict[str, str]] = {
        "chunk_size": "max_tokens",
        "size": "max_tokens",
        "chunk_overlap": "overlap",
    }

    max_tokens: int = field(default=256, metadata={"help": "most tokens per chunk (1..1,000,000)"})
    overlap: int = field(
        default=0,
        metadata={
            "help": "most tokens (whole pieces) shared by consecutive chunks (0 <= overlap < max_tokens)"
        },
    )

    def __post_init__(self) -> None:
        check_size_overlap("recursive", "max_tokens", self.max_tokens, self.overlap)

    def sentence_paragraphs(self) -> int | None:
        """Paragraphs with a line of more than ``max_tokens`` tokens: only such a line is cut at sentences.

        Returns:
            ``max_tokens``.
        """
        return self.max_tokens

    def split(
        self,
        doc: Document,
        tok: Tokenization,
        sentence_vectors: SentenceVectors | None = None,
        sentences: SentenceSegmenter | None = None,
    ) -> Boundaries:
        """Cut ``doc`` into chunks (see the class docstring).

        Args:
            doc: The document.
            tok: Its whole-document tokenization.
            sentence_vectors: Unused (no sentence vectors needed).
            sentences: The run's sentence segmenter (for over-long lines); None: a fresh in-process one.

        Returns:
            Boundaries: int32 (n_chunks, 2) half-open token spans over content tokens (positions in ``tok``)
            and their exact int32 (n_chunks, 2) char spans.
        """
        splitter = PieceSplitter(doc.text, tok, self.max_tokens, or_fresh_segmenter(sentences))
        line_starts = md_tokens = None
        if splitter.n > self.max_tokens:  # fences, admonitions and tabs stay whole when they fit (issue 16)
            md_tokens = markdown_parser().parse(markdown_source(doc.text))
            code, containers = block_units(doc.text, md_tokens)
            if code or containers:
                line_starts = [0] + [m.end() for m in LINE_BREAK.finditer(doc.text)] + [len(doc.text)]
                splitter.set_blocks(code, containers, line_starts, fence_delimiters(doc.text, md_tokens))
        pieces = splitter.pieces(0, splitter.n)
        sticky = None
        if pieces.shape[0] > 1:
            lines = lead_in_lines(doc.text, md_tokens)
            if lines:
                if line_starts is None:
                    line_starts = [0] + [m.end() for m in LINE_BREAK.finditer(doc.text)] + [len(doc.text)]
                chars = [line_starts[min(n, len(line_starts) - 1)] for n in lines]
                sticky_at = splitter.tokens_at_chars(chars)
                titles = lead_in_lines(doc.text, md_tokens, tables=False)  # issue 36
                title_at = splitter.tokens_at_chars([line_starts[min(n, len(line_starts) - 1)] for n in titles])
                pieces, _ = split_after_lead_ins(splitter, pieces, title_at, self.max_tokens)
                heads = [line_starts[min(n, len(line_starts) - 1)] for n in table_delimiter_lines(md_tokens)]
                pieces = join_table_heads(pieces, splitter.tokens_at_chars(heads), self.max_tokens)
                sticky = np.isin(pieces[:, 1], sticky_at)
        closing = sorted(splitter.before_closing)  # a fence's closing line cut from its code (issue 36)
        stray = np.isin(pieces[:, 0], closing) if closing else None
        chunks = merge_pieces(pieces, self.max_tokens, self.overlap, sticky=sticky, alone=stray)
        if chunks.shape[0] > 1 and is_markdown_input(doc):  # no chunk of markup alone (issue 16)
            cuts = tuple(  # never inside a fence or container that fits (issue 36)
                splitter.outside_fitting_blocks(c, self.max_tokens)
                for c in (pieces[:, 0], splitter.cuts("paragraph", 0, splitter.n), splitter.cuts("line", 0, splitter.n))
            )
            chunks, _ = join_markup_only(
                chunks, content_prefix(doc.text, splitter.offs), self.max_tokens, cuts=cuts, trailing=closing
            )
        return finish(doc, tok, chunks, self.spec, content=splitter.content)
