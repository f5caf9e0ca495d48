"""Markdown as the strategies read it: markdown-it-py's block parse, with front matter and invisible marks at the
start of a line seen for what they are.

The strategies map markdown-it's line numbers (``Token.map``) back to characters with the same line breaks
markdown-it uses (:data:`latechunk.sentences.LINE_BREAK`), so the text handed to the parser
(:func:`markdown_source`) may differ from the document *within* a line but must keep every line break: offsets
always index the text as given.

- **Front matter** (BR-022): a block of YAML between ``---`` lines, or of TOML between ``+++`` lines, at the very
  start of the text (Jekyll, Hugo, Pandoc, Obsidian). Parsed as CommonMark it is not inert: the closing ``---``
  is a setext underline that turns the last YAML line into an h2 heading, the opening one a thematic break, and a
  TOML ``# comment`` line an h1. Its lines reach the parser empty, so it is no markdown block at all; a
  strategy sees it as text before the first block (``heading``: in the preamble section, path ``()``).
- **Invisible marks** (BR-025): a byte-order mark (U+FEFF) or another zero-width format character (U+200B..U+200F,
  U+2060..U+2064, U+00AD) at the start of a line hides a ``#`` heading from the parser. A file's leading BOM is
  taken off by the file reader, but text given through the Python API, a JSONL line or a parquet cell (where a
  title puts the text's start at the start of a later line) reaches the strategy as given. Such marks at the
  start of any line are left out of the parsed text (never out of the document: offsets still index it).
"""

from __future__ import annotations

import re

from latechunk.front_matter import FRONT_MATTER, INVISIBLE_MARKS

__all__ = ["FRONT_MATTER", "INVISIBLE_MARKS", "markdown_parser", "markdown_source"]

_LEADING_MARKS = re.compile(f"(?<![^\\r\\n])[{INVISIBLE_MARKS}]+")
_LINE_TEXT = re.compile(r"[^\r\n]+")
#: a line that may be an ATX heading, a setext underline or a table delimiter row (a cheap test before parsing)
_MAYBE_LEAD_IN = re.compile(
    r"^[ \t]{0,3}(?:#{1,6}(?:[ \t]|$)|=+[ \t]*$|-+[ \t]*$"
    r"|(?=[^\n]*\|)\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$)",
    re.MULTILINE,
)

_MD = None


def markdown_parser():
    """The shared markdown-it-py parser: CommonMark with GFM tables, block rules only (built once).

    Returns:
        A ``markdown_it.MarkdownIt`` whose ``parse`` gives block tokens (the inline parse is never read by the
        strategies and was half the time).
    """
    global _MD
    if _MD is None:
        from markdown_it import MarkdownIt

        _MD = MarkdownIt("commonmark").enable("table").disable("inline")
    return _MD


def markdown_source(text: str) -> str:
    """The text to hand the markdown parser: ``text`` with its front matter's lines emptied and invisible marks
    at line starts left out, every line break kept (see the module docstring).

    Args:
        text: The document text.

    Returns:
        A string with the same line breaks, in the same order, as ``text`` (so markdown-it's line numbers are
        the document's); ``text`` itself when there is nothing to change.
    """
    m = FRONT_MATTER.match(text)
    if m:
        text = _LINE_TEXT.sub("", m.group(0)) + text[m.end() :]
    return _LEADING_MARKS.sub("", text)


def lead_in_lines(text: str) -> list[int]:
    """Lines that a chunk should not start with, because the line before them belongs to what follows: the line
    after each heading (ATX, or setext with its underline) and, in each table, the lines after its header row and
    after its delimiter row (so a table's header stays with its first body row). Headings inside code fences,
    and front matter, are not headings (:func:`markdown_source`).

    Args:
        text: The document text.

    Returns:
        Sorted 0-based line numbers (line breaks as :data:`latechunk.sentences.LINE_BREAK`); a number may equal
        the count of lines (a heading on the last line).
    """
    source = markdown_source(text)
    if not _MAYBE_LEAD_IN.search(source.replace("\r", "\n")):
        return []
    out = set()
    tokens = markdown_parser().parse(source)
    body_line = None
    for t in reversed(tokens):  # a table's tbody comes after its table_open: walk backwards
        if t.map is None:
            continue
        if t.type == "heading_open":
            out.add(t.map[1])
        elif t.type == "tbody_open":
            body_line = t.map[0]
        elif t.type == "table_open":
            end = body_line if body_line is not None else t.map[1]
            out.update(range(t.map[0] + 1, end + 1))
            body_line = None
    return sorted(out)
