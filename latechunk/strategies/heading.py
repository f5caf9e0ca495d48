"""``heading``: one chunk per Markdown section, with its heading path; long sections cut inside."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from typing import ClassVar

import numpy as np

from latechunk.strategies._common import (
    PieceBudget,
    PieceSplitter,
    check_int,
    check_size_overlap,
    merge_pieces,
    snap_table,
)
from latechunk.strategies._lead_in import split_after_lead_ins
from latechunk.strategies._markdown import (
    heading_plain_text,
    lead_in_lines,
    markdown_parser,
    markdown_source,
    reference_runs,
)
from latechunk.strategies.base import ChunkSpans, SplitInput, Strategy, register

__all__ = ["Heading"]


@register("heading")
@dataclass(frozen=True)
class Heading(PieceBudget, Strategy):
    r"""Markdown sections as chunks (parsed with markdown-it-py, CommonMark + GFM tables).

    1. Sections: a top-level ATX (``## Title``) or setext (``Title`` over ``===``/``---``) heading whose level is
       in ``levels`` starts a section that runs to the next such heading; text before the first heading is a
       section with the empty path. The parser, not a regex, finds headings: a ``#`` line inside a code fence is
       code (BR-006), and ``---`` after a blank line is a thematic break (BR-007). Each chunk keeps its section's
       heading path, outermost first (``("Setup", "Usage")``). A section that holds only its heading line (a
       parent heading right before a sub-heading) is joined to the next section; a chunk of it takes the path of
       the last heading it holds (``# Guide`` + ``## Billing`` cut off from ``### Fees``: ``("Guide", "Billing")``).
       A path holds each heading's plain text, as a reader sees it (issue 16,
       :func:`~latechunk.strategies._markdown.heading_plain_text`): ``## Release 2.0 <small>May 2024</small>
       { #r2 }`` is ``"Release 2.0 May 2024"``, ``### The `--force` flag and [mirrors](m.md)`` is ``"The --force
       flag and mirrors"``; badges, inline or reference-style (``# tool [![CI][ci-img]][ci-url]``, their
       definitions anywhere in the document), give nothing: ``"tool"`` (issue 36). A heading whose text is empty after that (``### <!-- md:option cache.dir -->``) is
       named by the ``#id`` of its attribute list if it has one, else left out of the path; it still starts a
       section (under its parent's path).
    2. A section that fits ``max_tokens`` is one chunk; sections are never merged with each other. A longer
       section is cut at its top-level blocks (paragraph, list, fence, table, ...); a block that does not fit is
       cut like ``recursive`` (blank lines, lines, sentences, tokens), and the pieces of the section are merged
       greedily up to ``max_tokens`` with ``overlap``.
    3. Markdown blocks (issue 16): a code fence (``````` or ``~~~``, also indented in a list item or nested), an
       admonition (``!!! type "Title"``, ``??? type``, ``???+ type``) and a content tab (``=== "Tab"``) are one
       unit when a long block is cut: cut inside only when the block alone exceeds ``max_tokens`` (a fence at
       lines, an admonition or tab at its own paragraphs) or when it is the first block after a heading or title
       line that it does not fit with (next). A heading, an admonition's or tab's title line, and a
       table's header (its header and delimiter rows one piece) do not end a chunk when they fit at the start of
       the next one with what follows: the longest tail of a run of them that fits there moves on, also when the
       chunk holds nothing else (issue 36). When even the last heading or title line does not fit with the piece
       after it (a sentence, a paragraph, a fence or container that fits the budget alone), that piece is cut,
       coarse first (a fence at lines, no line of code cut for it), so that its start does
       (:func:`~latechunk.strategies._lead_in.split_after_lead_ins`). A fence's opening line (```` ```python ````)
       stays with its first lines of code and its closing line with its last when they fit the budget together;
       a closing line that does not fit with its code (a one-line fence over the budget) takes no text after it
       into its chunk, so no heading follows a stray fence line (issue 36). Runs of
       link reference definitions are blocks of their own. On markdown input
       (:func:`~latechunk.strategies._markdown.is_markdown_input`) a chunk of markup alone (front matter, a
       thematic break, a fence marker, link reference definitions, an HTML comment) joins the next chunk, else
       the previous one (whose tail it may take from a block, paragraph or line cut, never inside a fence,
       admonition or tab that fits ``max_tokens``: issue 36), within ``max_tokens``, taking that chunk's heading
       path (:func:`~latechunk.strategies._common.join_markup_only`).
    4. Tables (BR-008): a table that fits stays whole. A longer one is cut between rows only (a row line is never
       cut unless it alone is over budget); a chunk that starts with body rows gets the header and delimiter lines
       as its ``context`` (``"| Part | Unit | Price |\n|---|---|---|"``), and their tokens count against its
       budget. The chunk text stays an exact slice. A header longer than ``max_tokens // 2`` is not repeated.

    Markdown line numbers are mapped to characters with the same line breaks markdown-it uses (``\r\n``,
    ``\r``, ``\n``), so CRLF documents are cut at the same places as LF ones. YAML (``---``) or TOML (``+++``)
    front matter is front matter, not a heading or a thematic break (BR-022): it is text of the preamble section
    (path ``()``), cut inside only when it alone exceeds ``max_tokens``. A byte-order mark or another invisible
    mark at the start of a line does not hide its heading (BR-025). See :mod:`latechunk.strategies._markdown`.

    Args:
        max_tokens: Most content tokens per chunk (1..1,000,000); aliases ``chunk_size``, ``size``.
        overlap: Most tokens shared by consecutive chunks of one long section (``0 <= overlap < max_tokens``);
            alias ``chunk_overlap``.
        levels: Heading levels (1..6) that start a section, e.g. ``(1, 2)``; stored sorted and deduplicated.

    Raises:
        TypeError: if ``max_tokens``, ``overlap`` or a level is not an int.
        ValueError: unless ``max_tokens > 0``, ``0 <= overlap < max_tokens`` and ``levels`` is a non-empty subset
            of 1..6.
    """

    bet: ClassVar[str] = "the author's sections are the facts"

    max_tokens: int = field(
        default=256, metadata={"help": "most tokens per chunk (1..1,000,000); longer sections are cut"}
    )
    overlap: int = field(
        default=0, metadata={"help": "most tokens shared by consecutive chunks of one long section"}
    )
    levels: tuple[int, ...] = field(
        default=(1, 2, 3, 4, 5, 6), metadata={"help": "heading levels that start a section, e.g. 1/2/3"}
    )

    def __post_init__(self) -> None:
        check_size_overlap("heading", "max_tokens", self.max_tokens, self.overlap)
        levels = tuple(self.levels) if isinstance(self.levels, (tuple, list)) else (self.levels,)
        if not levels:
            raise ValueError("heading: levels must name at least one heading level in 1..6, got ()")
        for lv in levels:
            check_int("heading", "levels", lv, maximum=None)  # 1..6, checked next
            if not 1 <= lv <= 6:
                raise ValueError(f"heading: levels must be in 1..6, got levels={levels}")
        object.__setattr__(self, "levels", tuple(sorted({int(lv) for lv in levels})))

    def _chunk_spans(self, given: SplitInput) -> ChunkSpans:
        """Sections, and long sections cut into pieces (see the class docstring).

        Args:
            given: The document (Markdown, or plain text: then one section with the empty heading path), its
                content tokens and the run's sentence segmenter (for over-long lines).

        Returns:
            The chunks with each one's heading path and, for a chunk of table body rows, the table header as its
            context; on markdown input a chunk of markup alone may take the tail of the chunk before it from a
            block, paragraph or line cut (:meth:`~latechunk.strategies._common.PieceSplitter.markup_join`).
        """
        text = given.doc.text
        n = int(given.offs.shape[0])
        if n == 0:
            return ChunkSpans(np.zeros((0, 2), np.int64))
        splitter = PieceSplitter(text, given.tok, self.max_tokens, given.sentences, given.content)
        tok_starts = splitter.content.keys  # whitespace tokens before a line stay with the line above (BR-023)
        line_starts = splitter.line_starts
        n_lines = line_starts.shape[0] - 1
        snapped = snap_table(splitter.allowed)

        def tok_at_line(line: int) -> int:
            char = int(line_starts[min(line, n_lines)])
            return int(snapped[int(np.searchsorted(tok_starts, char, side="left"))])

        md_env: dict = {}  # the link reference definitions, for the headings' reference-style links (issue 36)
        md_tokens = markdown_parser().parse(markdown_source(text), md_env)  # front matter, marks: BR-022, BR-025
        references = md_env.get("references")
        code, _ = splitter.set_markdown_blocks(md_tokens)
        blocks = []  # (start token, index into md_tokens)
        sections = []  # [start token, token after the heading line(s), heading path]
        stack: list[tuple[int, str]] = []
        for line in reference_runs(text, code):  # link definitions: no token of their own (issue 16)
            blocks.append((tok_at_line(line), -1))
        for i, t in enumerate(md_tokens):
            if t.level != 0 or t.nesting < 0 or t.map is None:
                continue
            start = tok_at_line(t.map[0])
            blocks.append((start, i))
            if t.type != "heading_open":
                continue
            level = int(t.tag[1:])
            source = md_tokens[i + 1].content.strip() if i + 1 < len(md_tokens) else ""
            if level not in self.levels or not source:
                continue
            title = heading_plain_text(source, references=references)  # what a reader sees; "": no path part
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            sections.append([start, tok_at_line(t.map[1]), tuple(title for _, title in stack if title)])
        # the preamble: text before the first section heading
        if not sections or sections[0][0] > 0:
            sections.insert(0, [0, 0, ()])
        sections[0][0] = 0
        bounds = [s[0] for s in sections] + [n]
        merged = []  # (start, end, heads) with heading-only sections joined to the next one
        carry = []  # (start, path) of heading-only sections waiting for the next section
        for k, (start, head_end, path) in enumerate(sections):
            end = bounds[k + 1]
            if end <= start:
                continue
            if head_end >= end and k + 1 < len(sections) and path:
                carry.append((start, path))
                continue
            heads = carry + [(start, path)]  # a chunk takes the path of the last heading it holds (issue 36)
            merged.append((heads[0][0], end, heads))
            carry = []
        if carry:  # only empty sections followed them: they stay a chunk of their own
            merged.append((carry[0][0], n, carry[-1:]))

        blocks.sort()
        block_starts = np.asarray([b[0] for b in blocks], dtype=np.int64)
        block_md = [b[1] for b in blocks]
        # a heading, an admonition's or tab's title line, a table's header stay with what follows (issue 16)
        sticky_at = splitter.tokens_at_lines(lead_in_lines(text, md_tokens))
        title_at = splitter.tokens_at_lines(lead_in_lines(text, md_tokens, tables=False))  # may be cut (issue 36)
        spans, paths, contexts, costs = [], [], [], []
        for start, end, heads in merged:
            chunks, ctx, cost = self._section(
                text, splitter, md_tokens, block_starts, block_md, tok_at_line, start, end, sticky_at, title_at
            )
            costs.extend(cost)
            spans.append(chunks)
            at = np.searchsorted(np.asarray([h[0] for h in heads]), chunks[:, 1], side="left") - 1
            paths.extend(heads[max(int(a), 0)][1] for a in at.tolist())
            contexts.extend(ctx)
        out = np.concatenate(spans) if spans else np.zeros((0, 2), np.int64)
        markup = None
        if given.markdown:  # asked of every document with content: a bad `markdown` flag raises for each one
            markup = splitter.markup_join(block_starts, self.max_tokens, np.asarray(costs, dtype=np.int64))
        return ChunkSpans(out, tuple(paths), tuple(contexts), markup)

    def _section(
        self, text, splitter, md_tokens, block_starts, block_md, tok_at_line, start, end, sticky_at=None, title_at=None
    ):
        """Chunks (k, 2) of one section's token range, their contexts and the tokens each context costs."""
        if end - start <= self.max_tokens:
            return np.asarray([[start, end]], dtype=np.int64), [""], [0]
        lo = np.searchsorted(block_starts, start, side="left")
        hi = np.searchsorted(block_starts, end, side="left")
        inner = [(int(block_starts[j]), block_md[j]) for j in range(lo, hi) if start <= block_starts[j] < end]
        cut_set = sorted({s for s, _ in inner if start < s < end})
        kind_at = {}
        for s, j in inner:
            kind_at.setdefault(s, j)
        bounds = [start] + cut_set + [end]
        pieces, costs, ctx_of = [], [], []
        table_ctx: list[str] = [""]
        for x, y in pairwise(bounds):
            j = kind_at.get(x)
            if y - x <= self.max_tokens:
                pieces.append(np.asarray([[x, y]], dtype=np.int64))
                costs.append(np.zeros(1, np.int64))
                ctx_of.append(np.zeros(1, np.int64))
            elif j is not None and j >= 0 and md_tokens[j].type == "table_open":
                p, c, ctx_id = self._table(text, splitter, md_tokens, j, tok_at_line, x, y, table_ctx)
                pieces.append(p)
                costs.append(c)
                ctx_of.append(ctx_id)
            else:
                p = splitter.pieces(x, y)
                pieces.append(p)
                costs.append(np.zeros(p.shape[0], np.int64))
                ctx_of.append(np.zeros(p.shape[0], np.int64))
        p = np.concatenate(pieces)
        c = np.concatenate(costs)
        ctx_id = np.concatenate(ctx_of)
        if title_at is not None and title_at.size and p.shape[0] > 1:
            p, origin = split_after_lead_ins(splitter, p, title_at, self.max_tokens, c)
            c, ctx_id = c[origin], ctx_id[origin]
        sticky = np.isin(p[:, 1], sticky_at) if sticky_at is not None and sticky_at.size else None
        stray = np.isin(p[:, 0], sorted(splitter.before_closing)) if splitter.before_closing else None  # issue 36
        chunks = merge_pieces(p, self.max_tokens, self.overlap, c, sticky, stray)
        first = np.searchsorted(p[:, 0], chunks[:, 0], side="left")
        return chunks, [table_ctx[int(ctx_id[f])] for f in first], [int(c[f]) for f in first]

    def _table(self, text, splitter, md_tokens, j, tok_at_line, x, y, table_ctx):
        """Row pieces of a table that does not fit: header piece, then one piece per body row line."""
        table_line0 = md_tokens[j].map[0]
        body_lines = []
        depth = 0
        in_body = False
        for t in md_tokens[j:]:
            depth += t.nesting
            if t.type == "tbody_open":
                in_body = True
            elif t.type == "tr_open" and in_body and t.map is not None:
                body_lines.append(t.map[0])
            if depth == 0:
                break
        rows = sorted({tok_at_line(line) for line in body_lines if line > table_line0})
        rows = [r for r in rows if x < r < y]
        if not rows:
            p = splitter.pieces(x, y)
            return p, np.zeros(p.shape[0], np.int64), np.zeros(p.shape[0], np.int64)
        head = (x, rows[0])
        n_head = head[1] - head[0]
        body_budget = self.max_tokens
        cost, ctx_id = 0, 0
        if n_head <= self.max_tokens // 2:
            c0 = int(splitter.offs[x, 0])
            c1 = int(splitter.offs[rows[0] - 1, 1])
            table_ctx.append("\n".join(line.strip() for line in text[c0:c1].splitlines() if line.strip()))
            cost, ctx_id = n_head, len(table_ctx) - 1
            body_budget = self.max_tokens - n_head
        parts = [splitter.pieces(*head)]
        n_head_pieces = parts[0].shape[0]
        row_bounds = rows + [y]
        for a, b in pairwise(row_bounds):
            parts.append(splitter.pieces(a, b, ("line", "sentence", "token"), body_budget))
        p = np.concatenate(parts)
        c = np.full(p.shape[0], cost, dtype=np.int64)
        ids = np.full(p.shape[0], ctx_id, dtype=np.int64)
        c[:n_head_pieces] = 0
        ids[:n_head_pieces] = 0
        return p, c, ids
