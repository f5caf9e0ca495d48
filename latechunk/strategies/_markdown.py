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
- **Admonitions and content tabs** (issue 16): Python-Markdown / MkDocs admonitions (``!!! type "Title"``,
  collapsible ``??? type`` and ``???+ type``; mdit-py-plugins' ``admon_plugin``,
  https://python-markdown.github.io/extensions/admonition/) and pymdownx content tabs (``=== "Tab"``,
  ``===+``, ``===!``; https://facelessuser.github.io/pymdown-extensions/extensions/tabbed/, a block rule here
  written on the model of the admonition plugin) are blocks whose 4-space-indented body belongs to their title
  line (:func:`block_units`). The body runs over blank lines to the first line indented less, as in
  Python-Markdown (issue 36: the plugin ended it at two blank lines, also inside a fence, so a tab or the rest of
  a fence after them was read as an indented code block).
- **Heading text** (issue 16): a heading path holds what a reader sees (:func:`heading_plain_text`): the
  heading's inline tokens rendered to text (HTML tags and comments dropped, their text kept; links as their
  text; images, badges among them, dropped, issue 36; code spans as their content) after a trailing attribute
  list (``{ #id .class key=value }``, Python-Markdown ``attr_list``) is taken off; a heading whose text is then
  empty is named by its ``#id``. Reference-style links and images (``[text][ref]``, ``[text][]``, ``[text]``,
  ``[![alt][img]][url]``) are read with the document's link reference definitions (:func:`link_references`),
  wherever in the document they are, as a renderer reads them (issue 36).
- **Markup-only text** (issue 16): :func:`markup_only` tells a span that carries no content (thematic breaks,
  front matter, fence markers, link reference definitions, HTML comments and bare tags, attribute lists).
"""

from __future__ import annotations

import re

import numpy as np

from latechunk.front_matter import FRONT_MATTER, INVISIBLE_MARKS
from latechunk.sentences import LINE_BREAK
from latechunk.types import CHUNKER_MARKDOWN_KEY

__all__ = [
    "FRONT_MATTER",
    "INVISIBLE_MARKS",
    "block_units",
    "heading_plain_text",
    "is_markdown_input",
    "link_references",
    "markdown_parser",
    "markdown_source",
    "content_counts",
    "fence_delimiters",
    "front_matter_end",
    "markup_only",
    "reference_runs",
]

_LEADING_MARKS = re.compile(f"(?<![^\\r\\n])[{INVISIBLE_MARKS}]+")
_LINE_TEXT = re.compile(r"[^\r\n]+")
#: a line that may be an ATX heading, a setext underline or a table delimiter row (a cheap test before parsing)
_MAYBE_LEAD_IN = re.compile(
    r"^[ \t]{0,3}(?:#{1,6}(?:[ \t]|$)|=+[ \t]*$|-+[ \t]*$"
    r"|(?=[^\n]*\|)\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*(?:\|[ \t]*)?$)",
    re.MULTILINE,
)

_MD = None
_INLINE = None
#: a content tab's title line (pymdownx.tabbed): ``=== "Title"``, ``===+ "Title"`` (selected), ``===! "Title"``
_TAB_LINE = re.compile(r'===[+!]{0,2}[ \t]+"[^"\r\n]*"[ \t]*$')
#: a trailing attribute list (Python-Markdown attr_list): ``{ #id .class key=value key="v" bare }``, ``{: ...}``
#:
#: Every pattern in this module runs in time linear in its input (a document is any text a user has): no two
#: parts of a pattern can match the same characters, so a failed match never retries them in another split
#: (``(?=(?P<x>...))(?P=x)`` is an atomic group, which ``re`` has only from Python 3.11). An attribute item is
#: ``#?name`` (``.`` is a name character, so ``.class`` is a name) with an optional value, quoted or not, each
#: taken whole; lines are matched with their leading and trailing spaces and tabs stripped.
_ATTR_BODY = (
    r"\{:?[ \t]*((?:#?(?=(?P<name>[\w:.-]+))(?P=name)"
    r"(?:=(?=(?P<value>\"[^\"]*\"|'[^']*'|[^\s}]+))(?P=value))?[ \t]*)+)\}"
)
_ATTR_LIST = re.compile(_ATTR_BODY + r"[ \t]*$")
#: a line of one punctuation character repeated (an RST over- or underline, ``=====``): no part of a heading's text
ADORNMENT_LINE = re.compile(r"[ \t]*([!-/:-@\[-`{-~])\1{2,}[ \t]*")
_ATTR_ID = re.compile(r"(?:^|\s)#([\w:.-]+)")


def _body_end(state, start_line: int, end_line: int) -> int:
    """The line after an indented body (``state.blkIndent`` already set to the body's indent): Python-Markdown's
    rule, the body runs over blank lines and lines indented to the body, and the first other line ends it (issue
    36: not two blank lines, as in markdown-it-admon, which left a tab after them an indented code block)."""
    next_line = start_line + 1
    while next_line < end_line:
        pos = state.bMarks[next_line] + state.tShift[next_line]
        if pos < state.eMarks[next_line] and state.sCount[next_line] < state.blkIndent:
            break
        next_line += 1
    return next_line


def _admonition(state, start_line: int, end_line: int, silent: bool) -> bool:
    """markdown-it block rule: mdit-py-plugins' admonition (its tokens, marker and title rules), with the body's
    end as Python-Markdown finds it (:func:`_body_end`)."""
    from mdit_py_plugins.admon.index import MARKER_LEN, MARKERS, _extra_classes, _get_tag, admonition

    if not admonition(state, start_line, end_line, True):  # a marker with a type, not in an indented code block
        return False
    if silent:
        return True
    start = state.bMarks[start_line] + state.tShift[start_line]
    maximum = state.eMarks[start_line]
    markup = next(m for m in sorted(MARKERS, key=len, reverse=True) if state.src.startswith(m, start))
    params = state.src[start + len(markup) : maximum]
    body = start + len(markup)
    while body < maximum and state.src[body] == " ":
        body += 1
    old_parent, old_line_max, old_indent = state.parentType, state.lineMax, state.blkIndent
    state.parentType = "admonition"
    state.blkIndent += body - start + MARKER_LEN - len(markup)
    next_line = _body_end(state, start_line, end_line)
    state.lineMax = next_line
    tags, title = _get_tag(params)
    token = state.push("admonition_open", "div", 1)
    token.markup, token.block, token.info, token.content = markup, True, params, title
    token.attrs = {"class": " ".join(["admonition", *tags, *_extra_classes(markup)])}
    token.meta = {"tag": tags[0]}
    token.map = [start_line, next_line]
    if title:
        token = state.push("admonition_title_open", "p", 1)
        token.markup, token.map = f"{markup} {tags[0]}", [start_line, start_line + 1]
        token = state.push("inline", "", 0)
        token.content, token.map, token.children = title, [start_line, start_line + 1], []
        state.push("admonition_title_close", "p", -1)
    state.md.block.tokenize(state, start_line + 1, next_line)
    token = state.push("admonition_close", "div", -1)
    token.markup, token.block = markup, True
    state.parentType, state.lineMax, state.blkIndent = old_parent, old_line_max, old_indent
    state.line = next_line
    return True


def _content_tab(state, start_line: int, end_line: int, silent: bool) -> bool:
    """markdown-it block rule: a pymdownx content tab, its title line and the 4-space-indented lines under it."""
    if state.sCount[start_line] - state.blkIndent >= 4:  # an indented code line
        return False
    start = state.bMarks[start_line] + state.tShift[start_line]
    maximum = state.eMarks[start_line]
    if state.src[start : start + 3] != "===" or not _TAB_LINE.match(state.src, start, maximum):
        return False
    if silent:
        return True
    old_parent, old_line_max, old_indent = state.parentType, state.lineMax, state.blkIndent
    state.parentType = "content_tab"
    state.blkIndent += 4
    next_line = _body_end(state, start_line, end_line)
    state.lineMax = next_line
    token = state.push("content_tab_open", "div", 1)
    token.block = True
    token.markup = "==="
    token.info = state.src[start:maximum]
    token.map = [start_line, next_line]
    state.md.block.tokenize(state, start_line + 1, next_line)
    token = state.push("content_tab_close", "div", -1)
    token.block = True
    state.parentType, state.lineMax, state.blkIndent = old_parent, old_line_max, old_indent
    state.line = next_line
    return True


def markdown_parser():
    """The shared markdown-it-py parser: CommonMark with GFM tables, admonitions and content tabs, block rules
    only (built once).

    Returns:
        A ``markdown_it.MarkdownIt`` whose ``parse`` gives block tokens (the inline parse is never read by the
        strategies and was half the time; :func:`heading_plain_text` parses a heading's inline text alone).
        Admonitions give ``admonition_open``/``admonition_close`` tokens, content tabs
        ``content_tab_open``/``content_tab_close`` (``map``: the title line to the end of the body).
    """
    global _MD
    if _MD is None:
        from markdown_it import MarkdownIt
        from mdit_py_plugins.admon import admon_plugin

        md = MarkdownIt("commonmark").enable("table").disable("inline").use(admon_plugin)
        md.block.ruler.at("admonition", _admonition, {"alt": ["paragraph", "reference", "blockquote", "list"]})
        md.block.ruler.before(
            "fence", "content_tab", _content_tab, {"alt": ["paragraph", "reference", "blockquote", "list"]}
        )
        _MD = md
    return _MD


def _inline_parser():
    global _INLINE
    if _INLINE is None:
        from markdown_it import MarkdownIt

        _INLINE = MarkdownIt("commonmark")
    return _INLINE


def link_references(source: str) -> dict:
    """The link reference definitions of a document (``[label]: url "title"``), as markdown-it-py's block parse
    collects them (outside code, in quotes, list items and admonitions too).

    Args:
        source: The text handed to the parser (:func:`markdown_source`).

    Returns:
        ``env["references"]`` of ``markdown_parser().parse(source, env)``: a dict from a normalized label
        (``"BUILD-IMG"``) to ``{"href", "title", "map"}``; ``{}`` when the text has none (not parsed then).
    """
    if "]:" not in source:
        return {}
    env: dict = {}
    markdown_parser().parse(source, env)
    return env.get("references", {})


def heading_plain_text(source: str, anchor_fallback: bool = True, references: dict | None = None) -> str:
    """A heading's text as a reader sees it, from the heading's inline source (``Token.content`` of its
    ``inline`` token).

    Rule (issue 16): a trailing attribute list (``{ #id .class key=value }``, Python-Markdown ``attr_list``,
    https://python-markdown.github.io/extensions/attr_list/) is taken off; the rest is parsed by markdown-it-py's
    inline rules and rendered to text: text and entities as text, code spans as their content, links and
    emphasis as their text, images dropped (a badge ``[![Build Status](ci.svg)](ci-url)``, a link whose only
    content is an image, gives nothing; issue 36), HTML tags and comments dropped (the text between tags
    kept), line breaks as spaces; whitespace is collapsed. Reference-style links and images (full
    ``[text][ref]``, collapsed ``[text][]``, shortcut ``[text]``; a badge ``[![alt][img]][url]``) are links and
    images when ``references`` defines their label, as in a renderer (issue 36); an undefined one is text. A heading whose text is then empty is named by the
    attribute list's ``#id`` (its anchor), if it has one; else the result is ``""`` (the caller leaves it out).

    Args:
        source: The heading's inline markdown, e.g. ``"Release 2.0 <small>May 2024</small> { #r2 }"``.
        anchor_fallback: Name an empty heading by its ``#id`` (heading paths); False: ``""`` (titles).
        references: The document's link reference definitions (:func:`link_references`, or ``env["references"]``
            of the caller's block parse); None: none defined.

    Returns:
        The plain text, e.g. ``"Release 2.0 May 2024"``; ``"r2"`` for ``"<!-- note --> { #r2 }"``; ``""`` for
        ``"<!-- md:option cache.dir -->"``.
    """
    if "\n" in source:  # a setext heading under an RST overline ("=====\nTitle"): the adornment is no text
        source = "\n".join(line for line in source.split("\n") if not ADORNMENT_LINE.fullmatch(line))
    anchor = ""
    m = _ATTR_LIST.search(source)
    if m:
        ids = _ATTR_ID.findall(m.group(1))
        anchor = ids[-1] if ids else ""
        source = source[: m.start()].rstrip(" \t")
    parts: list[str] = []
    if any(c in source for c in "\\`*_[]<>!&"):
        env = {"references": references} if references else None
        for tok in _inline_parser().parseInline(source, env):
            for child in tok.children or ():
                if child.type in ("text", "code_inline"):
                    parts.append(child.content)
                elif child.type in ("softbreak", "hardbreak"):
                    parts.append(" ")
                # an image (a badge: [![Build Status](ci.svg)](ci-url)) gives nothing, its alt text no title (issue 36)
    else:
        parts.append(source)
    text = " ".join("".join(parts).split())
    return text or (anchor if anchor_fallback else "")


_FLAG_WORDS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def is_markdown_input(doc) -> bool:
    """Whether a document is markdown input: a ``.md``/``.markdown`` file, an HTML page converted to markdown, or
    a document whose metadata says so.

    Args:
        doc: A :class:`~latechunk.types.Document`; its ``metadata`` ``markdown`` (a bool: the caller's word), then
            :data:`~latechunk.types.CHUNKER_MARKDOWN_KEY` (``LateChunker(markdown=True)``), ``converted_from`` (set for HTML pages), and the file's name:
            ``source`` (as ``embed`` reads files, and LangChain's loaders), else ``file_path`` or ``file_name``
            (LlamaIndex's readers), are read, in that order.

    Returns:
        True for markdown input; False for text, records (JSONL, parquet) and text given through the API without
        a markdown file name or flag, whose lines are taken as written.

    Raises:
        ValueError: for a ``markdown`` value that is neither a bool, None, nor one of the words ``true``, ``yes``,
            ``1``, ``false``, ``no``, ``0`` (any case): the document is then skipped with this reason.
    """
    meta = doc.metadata or {}
    for key in ("markdown", CHUNKER_MARKDOWN_KEY):  # the document's own word, then its LateChunker's
        flag = meta.get(key)
        if isinstance(flag, str) and flag.strip().lower() in _FLAG_WORDS:  # a JSONL or YAML writer's "true"/"no"
            flag = _FLAG_WORDS[flag.strip().lower()]
        if isinstance(flag, bool):
            return flag
        if flag is not None:
            raise ValueError(f"metadata {key!r} must be true or false (a bool, or one of "
                             f"{', '.join(map(repr, _FLAG_WORDS))}), got {flag!r}")
    if meta.get("converted_from"):
        return True
    for key in ("source", "file_path", "file_name"):
        name = meta.get(key)
        if isinstance(name, str) and name:
            if "://" in name:  # a URL: its path names the file (https://host/docs/page.md?plain=1#part)
                name = name.split("#", 1)[0].split("?", 1)[0]
            return name.lower().endswith((".md", ".markdown"))
    return False


def block_units(text: str, tokens=None) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The blocks that a paragraph-level cut must not enter: fenced and indented code, and admonitions and
    content tabs (their title line with its indented body), at any depth (inside list items, quotes, other
    admonitions).

    Args:
        text: The document text.
        tokens: ``markdown_parser().parse(markdown_source(text))`` if the caller has it; None: parsed here.

    Returns:
        ``(code, containers)``: lists of ``(first_line, end_line)``, 0-based half-open line ranges (line breaks
        as :data:`latechunk.sentences.LINE_BREAK`). A code block is cut inside only at lines (when it alone
        exceeds a budget); a container at its own paragraphs, its title line kept with what follows.
    """
    if tokens is None:
        source = markdown_source(text)
        if "```" not in source and "~~~" not in source and "    " not in source and "\t" not in source:
            return [], []
        tokens = markdown_parser().parse(source)
    code, containers = [], []
    for t in tokens:
        if t.map is None:
            continue
        if t.type in ("fence", "code_block"):
            code.append((t.map[0], t.map[1]))
        elif t.type in ("admonition_open", "content_tab_open"):
            containers.append((t.map[0], t.map[1]))
    return code, containers


#: a fence's closing line (CommonMark: the opening's character, at least as many, then only spaces), after the
#: indent and quote markers of its containers
_FENCE_CLOSE = re.compile(r"[ \t>]*(`{3,}|~{3,})[ \t]*")


def fence_delimiters(text: str, tokens=None) -> tuple[list[int], list[int]]:
    """Where a cut would take a code fence's delimiter line from its code (issue 36): the line after each fence's
    opening line (```` ```python ````), and each closing line, at any depth (list items, quotes, admonitions).

    Args:
        text: The document text.
        tokens: ``markdown_parser().parse(markdown_source(text))`` if the caller has it; None: parsed here.

    Returns:
        ``(after_opening, closing)``: sorted 0-based line numbers (line breaks as
        :data:`latechunk.sentences.LINE_BREAK`). A fence with no line after its opening line (the last line of
        the text) has no entry in ``after_opening``; an unclosed fence (it runs to the end of its container) none
        in ``closing``.
    """
    source = markdown_source(text)
    if "```" not in source and "~~~" not in source:
        return [], []
    if tokens is None:
        tokens = markdown_parser().parse(source)
    fences = [t for t in tokens if t.type == "fence" and t.map is not None]
    if not fences:
        return [], []
    lines = LINE_BREAK.split(source)
    after_opening, closing = set(), set()
    for t in fences:
        l0, l1 = t.map
        if l1 > l0 + 1:
            after_opening.add(l0 + 1)
        m = _FENCE_CLOSE.fullmatch(lines[l1 - 1]) if l0 < l1 - 1 < len(lines) else None
        if m and t.markup and m.group(1)[0] == t.markup[0] and len(m.group(1)) >= len(t.markup):
            closing.add(l1 - 1)
    return sorted(after_opening), sorted(closing)


_REFERENCE_DEF = re.compile(r" {0,3}\[[^\]\r\n]+\]:[ \t]*\S")


def reference_runs(text: str, code: list[tuple[int, int]]) -> list[int]:
    """The first lines of runs of link reference definitions (``[name]: url``) that start a block: after a blank
    line, outside code blocks. markdown-it keeps no token for them (they join the paragraph block before them in
    a strategy's view); ``heading`` cuts before such a run so that it can join a neighbour as markup.

    Args:
        text: The document text.
        code: Code blocks' ``(first_line, end_line)`` (:func:`block_units`), where no definition is read.

    Returns:
        Sorted 0-based line numbers.
    """
    if "]:" not in text:
        return []
    lines = LINE_BREAK.split(markdown_source(text))
    in_code = np.zeros(len(lines) + 1, dtype=bool)
    for l0, l1 in code:
        in_code[l0:l1] = True
    out = []
    for i, line in enumerate(lines):
        if i and not in_code[i] and (not lines[i - 1].strip()) and _REFERENCE_DEF.match(line):
            out.append(i)
    return out


#: lines that carry no content, stripped of spaces and tabs, HTML comments already blanked: thematic breaks,
#: fence markers (with an info string), link reference definitions, bare HTML tags, attribute lists, table
#: delimiter rows, setext underlines (linear, as the patterns above)
_MARKUP_LINE = re.compile(
    r"[-*_](?:[ \t]*[-*_]){2,}"
    r"|=+"
    r"|`{3,}[^`\r\n]*|~~~[^`\r\n]*"
    r"|\[[^\]\r\n^][^\]\r\n]*\]:[ \t]*\S+(?:[ \t]+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?"
    r"|</?[A-Za-z][^<>]*>(?:[ \t]*</?[A-Za-z][^<>]*>)*"
    r"|" + _ATTR_BODY + r"|\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?"
)


def comment_spans(text: str):
    """The HTML comments of a text, as ``re.finditer(r"<!--.*?-->", text, re.DOTALL)`` finds them, in linear time
    (that pattern rescans the rest of the text from every ``<!--`` that is never closed).

    Args:
        text: Any text.

    Yields:
        ``(start, end)`` character offsets of each comment, ``<!--`` to ``-->`` inclusive, in order.
    """
    pos = 0
    while True:
        start = text.find("<!--", pos)
        if start < 0:
            return
        end = text.find("-->", start + 4)
        if end < 0:  # no comment after this one closes either
            return
        pos = end + 3
        yield start, pos


_NOT_LINE_BREAK = re.compile(r"[^\r\n]")
_SPACE = re.compile(r"\s+")


def content_counts(text: str) -> np.ndarray:
    """Prefix counts of content characters: non-whitespace characters outside markup that carries no content
    (front matter; HTML comments, also over several lines; lines that are a thematic break or setext underline,
    a fence marker with or without an info string, link reference definitions, bare HTML tags, an attribute list
    such as ``{ .annotate }``, or a table delimiter row, once comments are blanked).

    Args:
        text: The document text.

    Returns:
        (len(text) + 1,), int64. ``c[j] - c[i]``: content characters in ``text[i:j]``.
    """
    n = len(text)
    markup = np.zeros(n, dtype=bool)
    fm = front_matter_end(text)
    markup[:fm] = True
    blanked = text
    if "<!--" in text:
        pieces, last = [], 0
        for start, end in comment_spans(text):
            markup[start:end] = True
            pieces += [text[last:start], _NOT_LINE_BREAK.sub(" ", text[start:end])]
            last = end
        blanked = "".join(pieces) + text[last:]
    pos = 0
    for line in blanked.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if body.strip() and _MARKUP_LINE.fullmatch(body.strip(" \t")):
            markup[pos : pos + len(body)] = True
        pos += len(line)
    if n == 0:
        return np.zeros(1, dtype=np.int64)
    space = np.zeros(n, dtype=bool)
    for m in _SPACE.finditer(text):
        space[m.start() : m.end()] = True
    return np.concatenate([[0], np.cumsum(~space & ~markup)]).astype(np.int64)


def markup_only(text: str, start: int, end: int, counts: np.ndarray | None = None) -> bool:
    """Whether ``text[start:end]`` is markup that carries no content: it holds no content character
    (:func:`content_counts`; front matter, HTML comments, thematic breaks, fence markers, link reference
    definitions, bare HTML tags, attribute lists and table delimiter rows are markup). A span that starts or ends
    inside a comment is judged with the whole comment.

    Args:
        text: The document text.
        start: First character of the span.
        end: One past its last character.
        counts: ``content_counts(text)`` when the caller asks for many spans of one text; None: computed.

    Returns:
        True when the span holds no content character (a span of whitespace alone too).
    """
    c = content_counts(text) if counts is None else counts
    return bool(c[end] - c[start] == 0)


def front_matter_end(text: str) -> int:
    """The end (characters) of ``text``'s front matter (:data:`FRONT_MATTER`), 0 when it has none."""
    m = FRONT_MATTER.match(text)
    return m.end() if m else 0


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


def lead_in_lines(text: str, tokens=None, tables: bool = True) -> list[int]:
    """Lines that a chunk should not start with, because the line before them belongs to what follows: the line
    after each heading (ATX, or setext with its underline) and, in each table, the lines after its header row and
    after its delimiter row (so a table's header stays with its first body row), and the line after each
    admonition's or content tab's title line (issue 16). Headings inside code fences, and front matter, are not
    headings (:func:`markdown_source`).

    Args:
        text: The document text.
        tokens: ``markdown_parser().parse(markdown_source(text))`` if the caller has it; None: parsed here.
        tables: Include the lines of table headers; False: headings and title lines only (the lead-ins after
            which a piece may be cut so that its start joins them, issue 36).

    Returns:
        Sorted 0-based line numbers (line breaks as :data:`latechunk.sentences.LINE_BREAK`); a number may equal
        the count of lines (a heading on the last line).
    """
    if tokens is None:
        source = markdown_source(text)
        if (
            not _MAYBE_LEAD_IN.search(source.replace("\r", "\n"))
            and "!!!" not in source
            and "???" not in source
            and "===" not in source
        ):
            return []
        tokens = markdown_parser().parse(source)
    out = set()
    body_line = None
    for t in reversed(tokens):  # a table's tbody comes after its table_open: walk backwards
        if t.map is None:
            continue
        if t.type in ("admonition_open", "content_tab_open"):  # the title line belongs to the body
            out.add(t.map[0] + 1)
        elif t.type == "heading_open":
            out.add(t.map[1])
        elif not tables:
            continue
        elif t.type == "tbody_open":
            body_line = t.map[0]
        elif t.type == "table_open":
            end = body_line if body_line is not None else t.map[1]
            out.update(range(t.map[0] + 1, end + 1))
            body_line = None
    return sorted(out)


def table_delimiter_lines(tokens) -> list[int]:
    """The delimiter row (``|---|---|``) of each GFM table, the line after its header row (issue 36: the two rows
    are one piece when they fit, so a chunk never holds one of them without the other).

    Args:
        tokens: ``markdown_parser().parse(markdown_source(text))``.

    Returns:
        Sorted 0-based line numbers.
    """
    return sorted(t.map[0] + 1 for t in tokens if t.type == "table_open" and t.map is not None)

