"""Files read as one document each: markdown, text, source code, reStructuredText (section titles as markdown
headings) and HTML pages (converted to markdown): :func:`read_text_file` decodes a file, ``_text_document`` makes
its :class:`Document` (front matter, an HTML page's title)."""

from __future__ import annotations

from pathlib import Path

from latechunk.convert import RST_CONVERTER, declared_charset, decode_html, html_to_markdown, rst_to_markdown
from latechunk.front_matter import FRONT_MATTER, INVISIBLE_MARKS, read_front_matter
from latechunk.io.encoding import (
    _MAX_NON_TEXT_SHARE,
    _REPLACE_ADVICE,
    _SNIFF_CHARS,
    LEGACY_UNDER_REPLACE,
    _non_text_share,
    _utf8_verdict,
    invalid_bytes,
    legacy_hint,
    offsets_text,
    sniff_bom,
)
from latechunk.io.records import DEFAULT_FIELDS, metadata_json
from latechunk.io.suffixes import HTML_SUFFIXES, RST_SUFFIXES
from latechunk.types import Document, RecordFields, Skipped


def read_text_file(path: Path, html: bool = False, encoding_errors: str = "strict") -> tuple[str | None, str]:
    """Read a text file: UTF-8, or the encoding of its byte-order mark (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE); an
    HTML page without a BOM in the charset its ``<meta>`` declares (:func:`latechunk.convert.decode_html`).

    The BOM is removed; there is no newline translation, so offsets index the decoded text exactly as stored.

    Args:
        path: The file.
        html: Read it as an HTML page (BOM, else declared charset, else UTF-8).
        encoding_errors: ``"strict"``: a file with bytes that are not UTF-8 (or not its declared charset) is not
            read, its reason naming their offsets (:func:`utf8_problem`); ``"replace"``: it is read with U+FFFD
            in their place, the second value saying so (``"N bytes not UTF-8 (at bytes ...) read as U+FFFD"``),
            unless it is a legacy 8-bit file (no valid UTF-8 multi-byte character, and it reads as Windows-1252 /
            Latin-1): that one is not read under either setting, its reason advising the conversion (and
            :data:`LEGACY_UNDER_REPLACE` under ``"replace"``).

    Returns:
        ``(text, "")``; ``(text, note)`` for a file read with replacement characters (``encoding_errors=
        "replace"``); or ``(None, reason)`` for an unreadable, binary, non-UTF-8 (without a BOM or declared
        charset), undecodable or empty file.
    """
    try:
        data = path.read_bytes()
    except OSError as err:
        return None, f"unreadable: {err.strerror or err}"
    bom, codec, label = sniff_bom(data)
    if html and not bom:
        if b"\x00" in data[:_SNIFF_CHARS]:
            return None, "binary file (NUL bytes; UTF-16 or UTF-32 text needs a byte-order mark)"
        note = ""
        try:
            text, codec = decode_html(data)
        except UnicodeDecodeError as err:
            why = "as its <meta> declares" if declared_charset(data) else _undeclared_why(data)
            offsets = invalid_bytes(data, err.encoding)[0]
            words = offsets_text(offsets).replace("not UTF-8", f"not {err.encoding}")
            if err.encoding == "utf-8" and _utf8_verdict(data)[1]:  # a legacy page: declare or convert, not replace
                return None, (f"invalid utf-8 at byte {err.start} ({why}): {words}"
                              + legacy_hint(data).replace(": convert it", ": declare its charset (<meta charset="
                                                          '"windows-1252">) or convert it')
                              + (LEGACY_UNDER_REPLACE if encoding_errors == "replace" else ""))
            if encoding_errors != "replace":
                return None, f"invalid {err.encoding} at byte {err.start} ({why}): {words}; {_REPLACE_ADVICE}"
            text, codec = decode_html(data, errors="replace")
            note = f"{words} read as U+FFFD ({why})"
        if not text.strip():
            return None, "empty or whitespace-only"
        return text, note
    if codec == "utf-8":
        if b"\x00" in data[: _SNIFF_CHARS + len(bom)]:
            return None, "binary file (NUL bytes; UTF-16 or UTF-32 text needs a byte-order mark)"
        try:
            text = data[len(bom):].decode("utf-8")
        except UnicodeDecodeError:
            problem, legacy = _utf8_verdict(data[len(bom):], len(bom))
            if encoding_errors != "replace":
                return None, problem
            if legacy:  # replace is for UTF-8 text with a few bad bytes: it would blank every accented letter
                return None, problem + LEGACY_UNDER_REPLACE
            text = data[len(bom):].decode("utf-8", "replace")
            if not text.strip():
                return None, "empty or whitespace-only"
            return text, f"{offsets_text(invalid_bytes(data[len(bom):])[0], len(bom))} read as U+FFFD"
    else:
        try:
            text = data[len(bom):].decode(codec)
        except UnicodeDecodeError as err:
            return None, (f"binary or damaged file: starts with a {label} byte-order mark but is not valid {label} "
                          f"({err.reason} at byte {err.start + len(bom)})")
        if "\x00" in text[:_SNIFF_CHARS]:
            return None, f"binary file (NUL characters after a {label} byte-order mark)"
        if _non_text_share(text) > _MAX_NON_TEXT_SHARE:
            return None, f"binary file (starts with a {label} byte-order mark, but mostly non-text code points follow)"
    if not text.strip():
        return None, "empty or whitespace-only"
    return text, ""


def _undeclared_why(data: bytes) -> str:
    """Why an HTML page without a usable declaration was read as UTF-8: no declaration, or one Python does not
    know (a trial's ``<meta charset="no-such-charset">`` was reported as no declaration at all)."""
    from bs4.dammit import EncodingDetector

    label = EncodingDetector.find_declared_encoding(data, is_html=True)
    if label:
        return f"its <meta> declares {label.strip()!r}, an encoding Python does not know, so read as UTF-8"
    return "no byte-order mark and no <meta charset> declaration, so read as UTF-8"


def _text_document(rel: str, text: str, suffix: str, fields: RecordFields = DEFAULT_FIELDS,
                   degraded: str = "") -> Document | Skipped:
    """A text file's Document: id and source its relative path; a markdown file's front-matter ``title`` (BR-022)
    as ``metadata["title"]``. An HTML file's text is its markdown, with ``metadata`` ``converted_from``,
    ``converter`` and its ``<title>`` as ``title``; a page with no content left after conversion is Skipped.
    ``degraded``: how the file was read with replacement characters (``metadata["degraded"]``), or ``""``."""
    meta = {"source": rel, **({"degraded": degraded} if degraded else {})}
    if suffix in RST_SUFFIXES:  # its section titles as markdown headings: offsets index the converted text
        meta.update(converted_from="rst", converter=RST_CONVERTER)
        return Document(rel, rst_to_markdown(text), meta)
    if suffix in HTML_SUFFIXES:
        try:
            page = html_to_markdown(text)
        except RecursionError:  # elements past convert.MAX_DEPTH are unwrapped first: a last resort, never a crash
            return Skipped(rel, "HTML nested too deeply to convert (RecursionError)", rel)
        if not page.markdown.strip():
            return Skipped(rel, "empty after HTML to markdown conversion (no content outside scripts, styles and "
                                "navigation)", rel)
        meta.update(page.metadata)
        if page.title:
            meta["title"] = page.title
            meta["title_from"] = "html"
        return Document(rel, page.markdown, meta)
    if suffix in (".md", ".markdown"):
        if front_matter_only(text):
            # the strategies keep front matter out of the text they cut (BR-022): nothing would be left to embed
            return Skipped(rel, FRONT_MATTER_ONLY_REASON, rel)
        title, url, problem = read_front_matter(text)  # parsed once
        if title:
            meta["title"] = title
            meta["title_from"] = "front_matter"
        if url:  # the citation target beside the path (issue 12, chunk table ``url``)
            meta["url"] = url
        if fields.metadata:  # --metadata-fields: front-matter keys as a record's fields (title and url have columns)
            from latechunk.front_matter import front_matter_data

            data = {k: v for k, v in front_matter_data(text).items() if isinstance(k, str) and k not in ("title", "url")}
            kept, meta_problem = metadata_json(fields.metadata_of(data) if not fields.all_metadata else data)
            if kept:
                meta["metadata"] = kept
            if meta_problem:  # a value JSON cannot hold: the document is read without its metadata, and it is said
                problem = f"{problem}; " if problem else ""
                problem += f"front matter {meta_problem}: the metadata is ignored"
        if problem:  # the document is read; what was ignored is said (embed's and chunk's notes)
            meta["front_matter_problem"] = problem
    return Document(rel, text, meta)


#: The skip reason of a markdown document that is nothing but its front matter.
FRONT_MATTER_ONLY_REASON = "nothing but front matter (no text after it)"


def front_matter_only(text: str) -> bool:
    """Whether a markdown text is nothing but front matter (:data:`~latechunk.front_matter.FRONT_MATTER`), with
    only whitespace or invisible marks after it: the strategies keep front matter out of what they cut, so such a
    document has nothing to embed (``embed`` and :class:`latechunk.LateChunker` skip it alike)."""
    fm = FRONT_MATTER.match(text)
    return fm is not None and all(ch.isspace() or ch in INVISIBLE_MARKS for ch in text[fm.end():])
