r"""HTML to the markdown the strategies read: headings, lists, tables and code kept; page furniture dropped.

The parse is BeautifulSoup's (with Python's own ``html.parser``: no compiled parser to install), the conversion
markdownify's (MIT licence; html2text, the other well-kept converter, is GPL-3.0, which a core dependency of this
package cannot be). Working on the BeautifulSoup tree, elements are removed before conversion, and markdownify
writes ATX headings (``## Title``, which ``heading`` cuts at), GFM pipe tables (a table without ``<th>`` takes
its first row as the header) and fenced code blocks with the language of a ``class="language-x"``.

Dropped with their content: ``<script>``, ``<style>``, ``<noscript>``, ``<template>``, ``<svg>``, ``<canvas>``,
``<iframe>``, ``<object>``, ``<embed>``, form controls (``<button>``, ``<input>``, ``<select>``, ``<textarea>``),
hidden elements (the ``hidden`` attribute, ``aria-hidden="true"``, or an inline ``style`` with ``display: none``
or ``visibility: hidden``/``collapse``; a style sheet's rules are not applied), and the page's landmarks that are not its content: ``<nav>``, ``<aside>``, and a
``<header>`` or ``<footer>`` that is not inside an ``<article>``, ``<aside>``, ``<main>``, ``<nav>`` or
``<section>`` (the HTML-ARIA rule for the *banner* and *contentinfo* landmarks: an article's own header, with its
``<h1>``, stays), and any element whose ``role`` is ``navigation``, ``banner``, ``contentinfo``, ``complementary``
or ``search``. Only ``<body>`` is converted (``<head>``'s ``<title>`` becomes the title). An inline image
(``data:`` URI) keeps its alt text only. Markdown escapes of ``_`` and ``*`` are off: the words stay as written
(``snake_case``, not ``snake\_case``), which is what a model should embed.

Only ``<h1>``..``<h6>`` make headings: text that markdown would read as block syntax where it starts a line (a
paragraph's ``# 1 rule``, a line of ``=`` after a ``<br>``, ``> quote``, ``1. step``, a fence, ``<div>`` written as
text) gets a backslash before that syntax (``\# 1 rule``), and nothing else of the text is escaped (markdownify's
``escape_misc`` would backslash every ``=``, ``>``, ``+`` and ``|`` of the prose). The Document's text is this
markdown, backslashes included: its char spans index it exactly. Code is never escaped, and never ends early: a
``<pre>``'s fence is longer than every run of backticks in its code (markdownify's is always three, which a
```` ``` ```` line of the code closed, the rest read as markdown), or tildes when its language holds a backtick;
a ``<code>`` outside ``<pre>`` (a code span) has its line breaks written as spaces (what CommonMark renders
them as), so no line of it is read as a heading or any other block.

Nesting: markdownify converts recursively (a few Python frames per level), so elements nested deeper than
:data:`MAX_DEPTH` levels (old pages with hundreds of unclosed ``<font>`` tags, generated ``<div>`` towers) are
unwrapped before conversion: their text stays, in order, their own markup (emphasis, a list's bullets) is lost.

Bytes: :func:`decode_html` decodes a page by its byte-order mark, else the charset its ``<meta>`` declares
(WHATWG's encoding sniffing, without the guessing), else UTF-8.
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass, field

__all__ = ["MAX_DEPTH", "HtmlMarkdown", "converter_name", "declared_charset", "decode_html", "html_to_markdown"]

_DROP_TAGS = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "button",
              "input", "select", "textarea", "nav", "aside")
_PAGE_LANDMARKS = ("header", "footer")
_SECTIONING = ("article", "aside", "main", "nav", "section")
_DROP_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
#: inline-style declarations that hide an element (and its content) from the reader
_HIDING_STYLE = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse))\s*(?:!\s*important\s*)?(?:;|$)",
                           re.IGNORECASE)
#: elements nested deeper than this (below the converted root) are unwrapped before conversion: markdownify
#: recurses a few Python frames per level, and Python's default limit of 1,000 frames failed at ~400 levels
MAX_DEPTH = 128
#: WHATWG Encoding Standard: the labels a browser decodes as windows-1252 (its superset of Latin-1 and ASCII)
_WINDOWS_1252_LABELS = frozenset({"ascii", "us-ascii", "iso-8859-1", "iso8859-1", "iso_8859-1", "latin1", "latin-1",
                                  "l1", "cp819", "ibm819", "iso-ir-100", "csisolatin1", "x-cp1252", "cp1252",
                                  "windows-1252", "ansi_x3.4-1968"})


@dataclass(frozen=True)
class HtmlMarkdown:
    """An HTML page converted to markdown.

    Attributes:
        markdown: The markdown text (the Document's text: character offsets index it, not the HTML).
        title: The text of ``<head><title>`` with whitespace collapsed; ``""`` when there is none.
        metadata: What the Document records of the conversion: ``{"converted_from": "html", "converter":
            "markdownify 1.2.3"}``.
    """

    markdown: str
    title: str = ""
    metadata: dict[str, str] = field(default_factory=dict)


@functools.lru_cache(maxsize=1)
def converter_name() -> str:
    """The converter and its version, as recorded in each converted document's metadata.

    Returns:
        ``"markdownify <version>"``, e.g. ``"markdownify 1.2.3"``.

    Raises:
        ImportError: if markdownify is not installed (a core dependency: only a broken install lacks it).
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"markdownify {version('markdownify')}"
    except PackageNotFoundError as err:
        raise ImportError("reading .html files needs markdownify: pip install markdownify") from err


@functools.lru_cache(maxsize=1)
def _converter_class():
    try:
        from markdownify import MarkdownConverter
    except ImportError as err:
        raise ImportError("reading .html files needs markdownify: pip install markdownify") from err

    class _Converter(MarkdownConverter):
        # markdownify's own escapes (escape_misc) backslash every ``=``, ``>``, ``+``, ``|`` of the text; here only
        # what markdown would read as block syntax at the start of a line is (a paragraph's "# 1 rule" is no heading)
        _starts_line = True

        def process_text(self, el, parent_tags=None):
            self._starts_line = _starts_line(el)
            return super().process_text(el, parent_tags)

        def escape(self, text, parent_tags):
            return _escape_line_starts(super().escape(text, parent_tags), self._starts_line)

        def convert_pre(self, el, text, parent_tags):
            return _refence(super().convert_pre(el, text, parent_tags))

        def convert_code(self, el, text, parent_tags):
            if "_noformat" not in parent_tags and "pre" not in parent_tags:  # a code span: never a line's start
                text = _SPAN_LINE_BREAK.sub(" ", text)
            return super().convert_code(el, text, parent_tags)

        def convert_img(self, el, text, parent_tags):
            if str(el.attrs.get("src", "")).startswith("data:"):  # an inline image: its alt text, not its bytes
                return str(el.attrs.get("alt", "") or "")
            return super().convert_img(el, text, parent_tags)

    return _Converter


#: what markdown reads as block syntax at the start of a line (after up to 3 spaces), in a text node's words: an
#: ATX heading marker, a setext underline or thematic break (a run of ``=``, ``-``, ``*``, ``_``), a bullet
#: (``-``, ``+``, ``*`` and a space), an ordered list marker (``1.``, ``1)``), a blockquote (``>``), a code fence
#: (three backticks or tildes), an HTML block (``<tag``, ``</``, ``<!``, ``<?``), an admonition (``!!!``, ``???``)
_SYNTAX = (
    r"([ \t]{0,3})("
    r"#{1,6}(?=[ \t]|$)"  # ATX heading
    r"|=+(?=[ \t]*$|[ \t]*\")"  # setext underline, content tab (=== "Tab")
    r"|[-*_](?=[ \t]*[-*_][ \t]*[-*_][-*_ \t]*$)"  # thematic break, setext --- underline
    r"|-+(?=[ \t]*$)"  # setext underline of one or two dashes
    r"|[-+*](?=[ \t]|$)"  # bullet
    r"|\d{1,9}(?=[.)](?:[ \t]|$))"  # ordered list marker: the digits kept, the . or ) escaped
    r"|>"  # blockquote
    r"|`{3,}|~{3,}"  # code fence
    r"|<(?=[A-Za-z/!?])"  # HTML block
    r"|[!?]{3}(?=[ \t+])"  # admonition (!!! note, ??? note, ???+ note)
    r")")
_LINE_START_SYNTAX = re.compile("^" + _SYNTAX, re.MULTILINE)  # at the text's start and after each newline
_NEW_LINE_SYNTAX = re.compile(r"(?<=\n)" + _SYNTAX, re.MULTILINE)  # after each newline only
#: elements markdownify writes as blocks of their own (or line breaks): text right after one, or first inside one,
#: starts a line; inside any other element (``<span>``, ``<b>``, ``<a>``, an unknown tag) it goes on the line
_BLOCKS = frozenset({"address", "article", "aside", "blockquote", "body", "br", "caption", "dd", "details", "div",
                     "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5",
                     "h6", "header", "hr", "html", "li", "main", "ol", "p", "pre", "section", "summary", "table",
                     "tbody", "td", "tfoot", "th", "thead", "tr", "ul", "[document]"})


def _starts_line(el) -> bool:
    """Whether the text node ``el`` starts a line of the markdown: nothing but whitespace between it and the start
    of its block (or a ``<br>``, a block before it, a newline kept in the text before it)."""
    from bs4 import NavigableString

    node = el
    while True:
        prev = node.previous_sibling
        while prev is not None and isinstance(prev, NavigableString):
            before = str(prev)
            if before.strip(" \t\r\f"):  # words before it on the line, unless they end with a newline
                return before.rstrip(" \t\r\f").endswith("\n")
            if "\n" in before:
                return True
            prev = prev.previous_sibling
        if prev is not None:
            return prev.name in _BLOCKS
        node = node.parent
        if node is None or node.name in _BLOCKS:
            return True


def _escape_line_starts(text: str, starts_line: bool = True) -> str:
    r"""``text`` (a text node's words) with a backslash before each piece of markdown block syntax that would start
    a line (:data:`_SYNTAX`): ``# Fees`` -> ``\# Fees``, ``===`` -> ``\===``, ``1. x`` -> ``1\. x``.

    Args:
        text: The words.
        starts_line: Whether the text starts a line (:func:`_starts_line`); else only the syntax after a newline
            in it is escaped.
    """
    if not text:
        return text

    def esc(m: re.Match) -> str:
        indent, syntax = m.group(1), m.group(2)
        if syntax[0].isdigit():  # the digits stay, the . or ) after them is escaped
            return f"{indent}{syntax}\\"
        return f"{indent}\\{syntax}"

    return (_LINE_START_SYNTAX if starts_line else _NEW_LINE_SYNTAX).sub(esc, text)


#: markdownify's fenced block for a ``<pre>``: blank lines, the opening fence and its info string, the code, the
#: closing fence, blank lines
_PRE_BLOCK = re.compile(r"(\s*)```([^\n]*)\n(.*)\n```(\s*)", re.DOTALL)
#: a line break in a code span's text (with the spaces around it): markdown would read the next line as a block
_SPAN_LINE_BREAK = re.compile(r"[ \t]*(?:\r\n?|\n)[ \t]*")


def _refence(block: str) -> str:
    r"""The fenced code block markdownify writes for a ``<pre>``, with a fence no line of the code can close
    (CommonMark: a closing fence is at least as long as the opening one): backticks, one more than the longest
    run of backticks in the code (at least 3); tildes, one more than the longest run of tildes (at least 3), when
    the info string (the language) holds a backtick, which a backtick fence's info string may not. A block not of
    that shape (``""`` for an empty ``<pre>``) is returned as it is.

    Args:
        block: ``"\n\n```lang\ncode\n```\n\n"``, as markdownify writes it.

    Returns:
        The block with its two fences replaced; the code, the info string and the blank lines around it unchanged.
    """
    m = _PRE_BLOCK.fullmatch(block)
    if m is None:
        return block
    before, info, code, after = m.groups()
    char = "~" if "`" in info else "`"
    fence = char * max(3, 1 + max((len(r) for r in re.findall(re.escape(char) + "+", code)), default=0))
    return f"{before}{fence}{info}\n{code}\n{fence}{after}"


def _code_language(el) -> str:
    """The language of a ``<pre>`` block from ``class="language-x"`` (or ``lang-x``) on it or its ``<code>``."""
    code = el.find("code")
    classes = list(el.get("class") or []) + (list(code.get("class") or []) if code is not None else [])
    for cls in classes:
        for prefix in ("language-", "lang-"):
            if cls.startswith(prefix) and len(cls) > len(prefix):
                return cls[len(prefix):]
    return ""


def _drop_furniture(soup) -> None:
    """Remove the elements that are not the page's content (see the module docstring), in place."""
    for el in soup.find_all(_DROP_TAGS):
        if not el.decomposed:  # not inside one removed before
            el.decompose()
    for el in soup.find_all(_PAGE_LANDMARKS):
        if not el.decomposed and el.find_parent(_SECTIONING) is None:
            el.decompose()
    for el in soup.find_all(lambda t: _hidden(t) or str(t.get("role", "")).strip().lower() in _DROP_ROLES):
        if not el.decomposed:
            el.decompose()


def _hidden(el) -> bool:
    """Whether an element is hidden from readers: ``hidden``, ``aria-hidden="true"``, or an inline style with
    ``display: none`` or ``visibility: hidden``/``collapse``."""
    if el.has_attr("hidden") or str(el.get("aria-hidden", "")).strip().lower() == "true":
        return True
    style = el.get("style")
    return bool(style) and _HIDING_STYLE.search(str(style)) is not None


def _flatten(root, max_depth: int = MAX_DEPTH) -> int:
    """Unwrap every element nested more than ``max_depth`` levels below ``root``, in place, so the recursive
    conversion stays within Python's recursion limit: an element at depth ``max_depth`` with deeper elements
    gets the strings of its subtree, in document order, as its only children (what unwrapping each deeper
    element gives, without bs4's per-unwrap walk up the ancestors, quadratic in the depth).

    Args:
        root: The BeautifulSoup element to convert.
        max_depth: Levels of elements kept below ``root`` (>= 1).

    Returns:
        The number of elements unwrapped.
    """
    from bs4 import NavigableString, Tag

    depth = {id(root): 0}
    cut: list = []
    for el in root.descendants:  # bs4 walks the tree iteratively, parents before children
        if isinstance(el, Tag):
            d = depth[id(el.parent)] + 1
            depth[id(el)] = d
            if d == max_depth + 1 and (not cut or cut[-1] is not el.parent):
                cut.append(el.parent)
    removed = 0
    for el in cut:
        strings = []
        for node in el.descendants:
            if isinstance(node, Tag):
                removed += 1
            elif isinstance(node, NavigableString):
                strings.append(type(node)(str(node)))
        el.clear()
        el.extend(strings)
    return removed


def _tidy(markdown: str) -> str:
    """Runs of blank lines outside fenced code collapsed to one, leading and trailing blank lines dropped, no
    trailing whitespace on a line outside code (markdownify leaves these where elements were removed)."""
    out: list[str] = []
    fence = ""
    blank = False
    for line in markdown.split("\n"):
        m = _FENCE.match(line)
        if fence:
            out.append(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):]:
                fence = ""
            continue
        if m:
            fence = m.group(1)
        stripped = line.rstrip() if not line.endswith("  ") else line  # two trailing spaces: a hard line break
        if not stripped.strip():
            blank = bool(out)
            continue
        if blank:
            out.append("")
            blank = False
        out.append(stripped)
    return "\n".join(out) + ("\n" if out else "")


def html_to_markdown(html: str) -> HtmlMarkdown:
    """Convert an HTML page (or fragment) to markdown (see the module docstring for what is kept and dropped).

    Args:
        html: The HTML source, decoded.

    Returns:
        The :class:`HtmlMarkdown`: its ``markdown`` (``""`` for a page with no content left), ``title`` and
        ``metadata`` (``converted_from``, ``converter``). The same input always gives the same output.

    Raises:
        ImportError: if markdownify (or BeautifulSoup) is not installed.
        RecursionError: if the conversion still recurses too deep (elements deeper than :data:`MAX_DEPTH` are
            unwrapped first, so only when called with little stack left); ``latechunk.io`` lists such a file as
            skipped.
    """
    converter = _converter_class()
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    title = " ".join(soup.title.get_text().split()) if soup.title is not None else ""
    if soup.head is not None:
        soup.head.decompose()
    _drop_furniture(soup)
    root = soup.body if soup.body is not None else soup
    _flatten(root)
    markdown = converter(
        heading_style="ATX",
        bullets="-",
        escape_underscores=False,
        escape_asterisks=False,
        table_infer_header=True,
        code_language_callback=_code_language,
    ).convert_soup(root)
    meta = {"converted_from": "html", "converter": converter_name()}
    return HtmlMarkdown(_tidy(markdown), title, meta)


def declared_charset(data: bytes) -> str | None:
    """The character encoding an HTML page declares in its first bytes: ``<meta charset=...>`` or
    ``<meta http-equiv="Content-Type" content="...; charset=...">`` (BeautifulSoup's ``EncodingDetector``), as a
    Python codec name.

    Labels follow the WHATWG Encoding Standard where it differs from Python: ``iso-8859-1``, ``us-ascii`` and
    their aliases are decoded as ``windows-1252`` (as every browser does); a declared UTF-16/UTF-32 without a
    byte-order mark is taken as UTF-8 (the bytes of a ``<meta>`` that can be read as ASCII are not UTF-16).

    Args:
        data: The page's bytes (the declaration is looked for in the first 2,048 bytes, or 5% of the file).

    Returns:
        The codec name (``"windows-1252"``, ``"shift_jis"``, ``"utf-8"``, ...), or ``None`` when the page declares
        none or one Python does not know.
    """
    import codecs

    from bs4.dammit import EncodingDetector

    label = EncodingDetector.find_declared_encoding(data, is_html=True)
    if not label:
        return None
    label = label.strip().lower()
    if label in _WINDOWS_1252_LABELS:
        return "windows-1252"
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    return "utf-8" if name.startswith(("utf-16", "utf-32")) else name


def decode_html(data: bytes, default: str = "utf-8", errors: str = "strict") -> tuple[str, str]:
    """Decode an HTML page's bytes (without a byte-order mark: the caller strips one and uses its encoding).

    Args:
        data: The bytes after any byte-order mark.
        default: The codec when the page declares none (or an unknown one).
        errors: ``"strict"``, or ``"replace"``: a byte not valid in the codec becomes U+FFFD.

    Returns:
        ``(text, codec)``: the text and the codec it was decoded with. Bytes windows-1252 leaves undefined
        (0x81, 0x8D, 0x8F, 0x90, 0x9D) decode to the C1 control of the same number, as browsers do.

    Raises:
        UnicodeDecodeError: if the bytes are not valid in that codec (``errors="strict"``).
    """
    codec = declared_charset(data) or default
    if codec == "windows-1252":  # WHATWG's windows-1252: Latin-1 with 0x80-0x9F remapped where defined
        return data.decode("latin-1").translate(_WINDOWS_1252_C1), codec
    return data.decode(codec, errors), codec


def _windows_1252_c1() -> dict[int, str]:
    table = {}
    for b in range(0x80, 0xA0):
        try:
            table[b] = bytes([b]).decode("windows-1252")
        except UnicodeDecodeError:  # 0x81, 0x8D, 0x8F, 0x90, 0x9D: undefined, kept as the C1 control
            pass
    return table


_WINDOWS_1252_C1 = _windows_1252_c1()


# --------------------------------------------------------------------------- reStructuredText section titles

#: an RST adornment line: one punctuation character (docutils' set: printable 7-bit ASCII that is not a letter,
#: digit or space) repeated, nothing else but trailing whitespace
_RST_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1*[ \t]*")
#: a converter name recorded in each converted document's metadata (no external converter: see rst_to_markdown)
RST_CONVERTER = "latechunk rst-titles 2"


def rst_to_markdown(text: str) -> str:
    r"""An RST document as markdown the strategies read: each section title becomes an ATX heading, the rest stays
    verbatim.

    A section title (the docutils rules, https://docutils.sourceforge.io/docs/ref/rst/restructuredtext.html#sections)
    is a title line, not indented, after a blank line or the start of the text, with an underline of one
    punctuation character repeated, at least as long as the title (or at least 4 characters, which docutils takes
    with a warning); or a title line between an overline and an underline of the same character and length, at
    least as long as the title (which may be inset). Levels are the order in which adornment styles (character,
    and whether there is an overline) first appear; a style after the 6th is level 6. The title's lines become
    ``#`` x level, a space and the title text (its inline markup kept: ``Using ``latechunk``\ `` stays as written),
    with the underline's line break; everything else, indented blocks (literal blocks, directives' bodies) and
    transitions (an adornment between blank lines) included, is kept as it is, so char spans index this markdown,
    except where markdown would read an indented line as a heading (:func:`_unheading_indented_lines`: a code
    block's ``# comment`` 3 spaces in, an underlined line in a directive's body): a backslash goes before that
    syntax (``\# comment``, ``\=====``), and before a fence or HTML block opener that would hide a section title.

    Args:
        text: The RST source.

    Returns:
        The markdown; ``text`` itself when it has no section title.
    """
    lines = text.splitlines(keepends=True)
    bodies = [ln.rstrip("\r\n") for ln in lines]
    styles: list[tuple[str, bool]] = []
    out: list[str] = []
    changed = False

    def adornment(k: int) -> str:
        """The adornment character of line ``k`` (``""`` when it is none)."""
        return bodies[k][0] if k < len(bodies) and _RST_ADORNMENT.fullmatch(bodies[k]) else ""

    def heading(style: tuple[str, bool], title: str, eol: str) -> str:
        if style not in styles:
            styles.append(style)
        return "#" * min(styles.index(style) + 1, 6) + " " + title.strip() + eol

    i, blank_before = 0, True
    title_lines: list[int] = []  # the index in ``out`` of each section title's heading line
    while i < len(lines):
        line = bodies[i]
        ch = adornment(i)
        if ch and blank_before and i + 2 < len(lines):  # overline, title, underline
            title = bodies[i + 1]
            width = len(line.rstrip())
            if (title.strip() and not adornment(i + 1) and adornment(i + 2) == ch
                    and len(bodies[i + 2].rstrip()) == width and width >= len(title.rstrip())):
                out.append(heading((ch, True), title, lines[i + 2][len(bodies[i + 2]):]))
                title_lines.append(len(out) - 1)
                i, blank_before, changed = i + 3, False, True
                continue
        under = adornment(i + 1) if i + 1 < len(lines) else ""
        if (under and blank_before and line.strip() and not line[0].isspace() and not ch
                and len(bodies[i + 1].rstrip()) >= min(len(line.rstrip()), 4)):
            out.append(heading((under, False), line, lines[i + 1][len(bodies[i + 1]):]))
            title_lines.append(len(out) - 1)
            i, blank_before, changed = i + 2, False, True
            continue
        out.append(lines[i])
        blank_before = not line.strip()
        i += 1
    starts = [0]
    for piece in out:
        starts.append(starts[-1] + len(piece))
    markdown = _unheading_indented_lines("".join(out), [starts[k] for k in title_lines])
    return markdown if changed or markdown != text else text


#: a line and its line break as markdown-it splits lines (``\r\n``, ``\r`` or ``\n``; str.splitlines splits at
#: more characters, so its line numbers are not markdown-it's)
_MD_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _unheading_indented_lines(markdown: str, title_at: list[int]) -> str:
    r"""``markdown`` (RST converted by :func:`rst_to_markdown`) with a backslash where markdown would read an indented
    RST line (a literal block's, a directive's body, a block quote: never a section title, which RST never indents)
    as a heading: before the ``#`` of an ATX heading on an indented line (``   # comment`` -> ``   \# comment``),
    before the underline of a setext heading that holds an indented line (``   =====`` -> ``   \=====``); and before
    the opener of a fence or HTML block (three backticks, ``<pre>``) that would hide a section title in code.

    CommonMark's reading (markdown-it-py, block rules), so the containers a line is in count (a list item's body
    is indented relative to its marker). Lines that are not indented are not changed, nor lines markdown reads
    as code or text.

    Args:
        markdown: The converted text.
        title_at: The char offset of each section title's ``#`` line in ``markdown``.

    Returns:
        The text, ``markdown`` itself when nothing is read as a heading that should not be.
    """
    from markdown_it import MarkdownIt

    lines = _MD_LINE.findall(markdown)
    starts, n = [], 0
    for ln in lines:
        starts.append(n)
        n += len(ln)
    titles = set()
    for off in title_at:
        k = bisect.bisect_right(starts, off) - 1
        if k >= 0 and starts[k] == off:
            titles.add(k)
    parser = MarkdownIt("commonmark").disable("inline")

    def indented(k: int) -> bool:
        return lines[k][:1] in (" ", "\t") and bool(lines[k].strip())

    def escape(k: int, pattern: str) -> bool:
        m = re.search(pattern, lines[k])
        if m is None:
            return False
        lines[k] = lines[k][:m.start()] + "\\" + lines[k][m.start():]
        return True

    for _ in range(len(lines) + 1):  # each round escapes at least one line, or ends
        tokens = parser.parse("".join(lines))
        fixed = False
        read_as_heading = set()
        for t in tokens:
            if t.type != "heading_open" or t.map is None:
                continue
            a, b = t.map
            read_as_heading.add(a)
            if a in titles:
                continue
            if t.markup.startswith("#"):  # ATX: the first '#' of the line (container markers hold none)
                fixed |= indented(a) and escape(a, "#")
            elif any(indented(k) for k in range(a, b)):  # setext: the underline's run
                fixed |= escape(b - 1, r"[=-]+[ \t]*(?:\r\n|\r|\n)?\Z")
        for t in tokens:  # a section title inside a fence or HTML block an indented line opened
            if (t.type in ("fence", "html_block") and t.map is not None and indented(t.map[0])
                    and any(t.map[0] < k < t.map[1] and k not in read_as_heading for k in titles)):
                fixed |= escape(t.map[0], "[`~]" if t.type == "fence" else "<")
        if not fixed:
            break
    out = "".join(lines)
    return out if out != markdown else markdown
