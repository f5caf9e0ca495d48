r"""HTML to the markdown the strategies read: headings, lists, tables and code kept; page furniture dropped.

The parse is BeautifulSoup's (with Python's own ``html.parser``: no compiled parser to install), the conversion
markdownify's (MIT licence; html2text, the other well-kept converter, is GPL-3.0, which a core dependency of this
package cannot be). Working on the BeautifulSoup tree, elements are removed before conversion, and markdownify
writes ATX headings (``## Title``, which ``heading`` cuts at), GFM pipe tables (a table without ``<th>`` takes
its first row as the header) and fenced code blocks with the language of a ``class="language-x"``.

Dropped with their content: ``<script>``, ``<style>``, ``<noscript>``, ``<template>``, ``<svg>``, ``<canvas>``,
``<iframe>``, ``<object>``, ``<embed>``, form controls (``<button>``, ``<input>``, ``<select>``, ``<textarea>``),
elements marked ``hidden``, and the page's landmarks that are not its content: ``<nav>``, ``<aside>``, and a
``<header>`` or ``<footer>`` that is not inside an ``<article>``, ``<aside>``, ``<main>``, ``<nav>`` or
``<section>`` (the HTML-ARIA rule for the *banner* and *contentinfo* landmarks: an article's own header, with its
``<h1>``, stays), and any element whose ``role`` is ``navigation``, ``banner``, ``contentinfo``, ``complementary``
or ``search``. Only ``<body>`` is converted (``<head>``'s ``<title>`` becomes the title). An inline image
(``data:`` URI) keeps its alt text only. Markdown escapes of ``_`` and ``*`` are off: the words stay as written
(``snake_case``, not ``snake\_case``), which is what a model should embed.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

__all__ = ["HtmlMarkdown", "converter_name", "html_to_markdown"]

_DROP_TAGS = ("script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed", "button",
              "input", "select", "textarea", "nav", "aside")
_PAGE_LANDMARKS = ("header", "footer")
_SECTIONING = ("article", "aside", "main", "nav", "section")
_DROP_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "search"})
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


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
        def convert_img(self, el, text, parent_tags):
            if str(el.attrs.get("src", "")).startswith("data:"):  # an inline image: its alt text, not its bytes
                return str(el.attrs.get("alt", "") or "")
            return super().convert_img(el, text, parent_tags)

    return _Converter


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
    for el in soup.find_all(lambda t: t.has_attr("hidden")
                            or str(t.get("role", "")).strip().lower() in _DROP_ROLES):
        if not el.decomposed:
            el.decompose()


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
    """
    converter = _converter_class()
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    title = " ".join(soup.title.get_text().split()) if soup.title is not None else ""
    if soup.head is not None:
        soup.head.decompose()
    _drop_furniture(soup)
    root = soup.body if soup.body is not None else soup
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
