"""A document's title: the first of its front-matter title, its first heading, a record's ``title`` field (JSONL,
parquet, Arrow; an HTML page's ``<title>``), and its file name.

Contextual headers (``[title > section path]`` before a chunk's text, seed 001 of the design notes; Anthropic,
"Introducing Contextual Retrieval", 2024, https://www.anthropic.com/news/contextual-retrieval) and the chunk
table's ``title`` column take the title from here, so both agree, and the origin is recorded beside it.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from latechunk.io import CODE_SUFFIXES
from latechunk.strategies._markdown import (
    ADORNMENT_LINE,
    heading_plain_text,
    link_references,
    markdown_parser,
    markdown_source,
)
from latechunk.types import Document

__all__ = ["TITLE_ORIGINS", "contextual_header", "document_title", "first_heading"]

#: a heading longer than this many characters, or of more than one line, is not taken as a title
MAX_TITLE_CHARS = 120
#: where a title came from, in the order they are tried
TITLE_ORIGINS = ("front_matter", "heading", "record", "html", "file_name", "none")


def first_heading(text: str) -> str | None:
    """The plain text of the first markdown heading (ATX or setext) of ``text``, outside front matter and code.

    Only the start of a long text is parsed (4,096 characters, doubled until a heading is found or the text ends):
    a heading that ends before the last line of a prefix is the same in the whole text.

    Args:
        text: A markdown text.

    Returns:
        The first heading's plain text (the rule of the heading paths,
        :func:`latechunk.strategies._markdown.heading_plain_text`: ``# The *x* flag { #x }`` gives
        ``"The x flag"``, HTML tags, comments, badges and link syntax dropped, reference-style links read with
        the definitions of the whole text) that is one line of at most
        :data:`MAX_TITLE_CHARS` characters, whitespace collapsed; headings of several lines (a paragraph over a
        setext underline, such as a figure caption followed by ``---``), longer ones and ones with no text (a
        lone ``<!-- comment -->``) are passed over; None when there is no such heading.
    """
    source = markdown_source(text)
    if "#" not in source and "\n=" not in source and "\n-" not in source:
        return None
    references = None  # the whole text's link reference definitions, read when a heading may use them (issue 36)
    n = 4096
    while True:
        whole = n >= len(source)
        prefix = source if whole else source[:n]
        lines = prefix.count("\n")
        tokens = markdown_parser().parse(prefix)
        for i, t in enumerate(tokens):
            if t.type == "heading_open" and i + 1 < len(tokens) and (whole or t.map[1] < lines):
                content = "\n".join(line for line in tokens[i + 1].content.strip().split("\n")
                                     if not ADORNMENT_LINE.fullmatch(line))  # an RST overline read as markdown
                if "]" in content and references is None:  # [text][ref], [![alt][img]][url]: defined anywhere
                    references = link_references(source)
                title = heading_plain_text(content, False, references) if "\n" not in content else ""
                # a setext underline under a paragraph (a figure caption) makes a "heading" of many lines: no title
                if title and "\n" not in content and len(title) <= MAX_TITLE_CHARS:
                    return title
        if whole:
            return None
        n *= 2


def document_title(doc: Document) -> tuple[str, str]:
    """The document's title and where it came from.

    Args:
        doc: The document; ``doc.metadata`` may hold ``title`` and ``title_from`` (set by
            :func:`latechunk.io.iter_inputs`: ``"front_matter"``, ``"record"`` or ``"html"``) and ``source``.

    Returns:
        ``(title, origin)`` with ``origin`` in :data:`TITLE_ORIGINS`, tried in this order: a front-matter title; the
        first heading; a ``title`` from the metadata (a record's field, an HTML ``<title>``, or one given through
        the Python API: origin ``"record"`` when ``title_from`` is not set); the file name without its suffix
        (from ``source``, a file's path; a record's ``file.jsonl:12`` source names no file of its own and is not
        used); else ``("", "none")``.
    """
    meta = doc.metadata or {}
    title = meta.get("title")
    title = " ".join(title.split()) if isinstance(title, str) else ""
    origin = meta.get("title_from") or "record"
    if title and origin == "front_matter":
        return title, origin
    source = meta.get("source")
    is_code = isinstance(source, str) and PurePosixPath(source.split(":")[0]).suffix.lower() in CODE_SUFFIXES
    heading = None if is_code else first_heading(doc.text)  # a code file's "# comment" is no heading
    if heading:
        return heading, "heading"
    if title:
        return title, origin if origin in TITLE_ORIGINS else "record"
    if isinstance(source, str) and source and ":" not in PurePosixPath(source).name:
        stem = PurePosixPath(source).stem
        if stem:
            return stem, "file_name"
    return "", "none"


def contextual_header(title: str, heading_path: tuple[str, ...] | list[str]) -> str:
    """The contextual header of a chunk: ``[title > section > subsection]`` (seed 001 of the design notes).

    The section path leaves out a first heading equal to the title (a document whose title is its first heading
    would say it twice).

    Args:
        title: The document's title (:func:`document_title`); ``""`` when it has none.
        heading_path: The chunk's heading path, outermost first.

    Returns:
        ``"[" + " > ".join(parts) + "]"`` over the non-blank parts, or ``""`` when there are none.
    """
    parts = [" ".join(str(h).split()) for h in heading_path]
    if title and parts and parts[0] == title:
        parts = parts[1:]
    parts = [p for p in [title, *parts] if p]
    return f"[{' > '.join(parts)}]" if parts else ""
