"""Reading input documents: ``.md``/``.txt`` files, source code (``.py``, ``.js``, ``.ts``, ``.go``, ``.rs``,
``.java``: read as text, cut by the ``code`` strategy), HTML pages (``.html``/``.htm``: converted to markdown,
:mod:`latechunk.convert`), reStructuredText (``.rst``: its section titles as markdown headings, the rest verbatim,
:func:`latechunk.convert.rst_to_markdown`), folders of them, ``.jsonl`` (``id``/``text``, optional
``title``), BEIR ``corpus.jsonl`` (``_id``/``title``/``text``), ``.parquet`` (``id``/``text`` columns, optional
``title``; read in row batches), Arrow IPC files (``.arrow``, stream or file format, the same columns) and Hugging
Face ``datasets`` folders written by ``Dataset.save_to_disk`` / ``DatasetDict.save_to_disk`` (their ``.arrow``
shards memory-mapped and read in record batches, without importing ``datasets``). Streams documents one at a
time: memory does not grow with the corpus.

Nothing is lost: every input either becomes a :class:`Document` or a :class:`Skipped` record with its reason
(empty, invalid UTF-8, binary, unreadable, bad JSON line, bad parquet row, duplicate id), and so does every file
found under an input folder that is not read: an unsupported type (one suffix policy, :func:`unsupported_reason`,
for files named as inputs and files found in folders), a symlink loop or broken symlink, a special file; a
symlinked folder (never followed, so no loop is walked), a version-control folder, another hidden folder (a name
starting with ``.``: ``.venv``, ``.cache``; read when named as an input itself), a latechunk output folder or an
unreadable folder is one Skipped entry (its doc id ends in ``/``).

Encodings: text and JSONL files are UTF-8 unless they start with a byte-order mark: a UTF-8, UTF-16 (LE/BE) or
UTF-32 (LE/BE) BOM selects that encoding, and the BOM itself is not part of the text. Duplicate ids policy: the
first occurrence wins; later ones are skipped with a reason naming both sources (and, when the two come from
different inputs and one is a file's id, its path relative to its input, how to keep both: name the folders'
common parent as one input).

Empty inputs are one Skipped each, never nothing: a text file that is empty or whitespace-only, a markdown file
that is nothing but front matter (:data:`latechunk.front_matter.FRONT_MATTER`, kept out of what the strategies
cut), a JSONL file without a line that is not blank ("empty file: no JSON lines"), a parquet or Arrow file or a
dataset split with the id/text columns but no rows ("empty parquet file: no rows", ...), under the file's (or
split's) own name.

Records (JSONL lines, table rows): the id is the first of the fields ``id``, ``_id``, ``doc_id`` present (even
when null) and must be a non-blank string or an integer (``1`` and ``"1"`` are the same id); a null, blank or
other-typed id (float, boolean, list, object) skips the record, its reason naming the field and the value's type.
``text`` must be a string. ``title`` is optional: a string, or a number used as its string form (``5`` ->
``"5"``); null (or NaN, a missing value as pandas writes it) is no title; any other type (boolean, list,
object) skips the record with a reason naming the field and its type, rather than embed it without the title
it was given.

Sources (``Document.metadata["source"]``, ``Skipped.source``) are stored relative to the input root, never as
absolute paths: ``notes/a.md`` for a file, ``corpus.jsonl:12`` for line 12 (1-based) of a JSONL file,
``docs.parquet:7`` for row 7 (0-based) of a parquet file (``docs.arrow:7`` of an Arrow file). A single-file
input's root is its folder.

A Hugging Face ``datasets`` folder (:func:`hf_dataset_kind`) is one input item like a file, never walked as a folder
(its ``.arrow``/``.json`` files are not listed): a ``Dataset`` folder (``state.json`` + ``dataset_info.json``)
is read shard by shard in the order of ``state.json``'s ``_data_files``, row ``r`` (0-based over all shards) has
the source ``ds:r``; a ``DatasetDict`` folder (``dataset_dict.json``) reads every split in the order it lists
them, sources ``dd/train:r``, ``dd/test:r`` (an id repeated across splits is a duplicate, skipped). To read one
split only, give its sub-folder (``dd/train``, itself a ``Dataset`` folder; sources ``train:r``).
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import json
import math
import os
import re
import stat
import sys
import unicodedata
from collections.abc import Iterator, Sequence
from io import TextIOWrapper
from pathlib import Path
from typing import NamedTuple

from latechunk.convert import RST_CONVERTER, declared_charset, decode_html, html_to_markdown, rst_to_markdown
from latechunk.front_matter import FRONT_MATTER, INVISIBLE_MARKS, read_front_matter
from latechunk.types import DEFAULT_ID_FIELDS, Document, RecordFields, Skipped

__all__ = ["CODE_SUFFIXES", "HTML_SUFFIXES", "NOT_READ_REASONS", "RST_SUFFIXES", "SUPPORTED_SUFFIXES", "TABLE_SUFFIXES",
           "TEXT_SUFFIXES", "count_input_bytes",
           "DEFAULT_FIELDS", "RecordFields", "count_inputs", "hf_dataset_kind", "missing_inputs_message", "is_not_read", "iter_inputs", "read_text_file", "require_documents",
           "unsupported_reason"]

TEXT_SUFFIXES = (".md", ".markdown", ".txt")
#: reStructuredText: the Document's text is the source with its section titles as ATX headings
#: (:func:`latechunk.convert.rst_to_markdown`), so ``heading`` cuts it by its sections; ``metadata`` records it
RST_SUFFIXES = (".rst",)
#: source files, read as text as they are (the ``code`` strategy takes their language from the suffix)
CODE_SUFFIXES = (".py", ".js", ".ts", ".go", ".rs", ".java")
#: HTML pages: the Document's text is their markdown (:func:`latechunk.convert.html_to_markdown`), so its
#: offsets index the markdown, not the HTML; ``metadata`` records the conversion
HTML_SUFFIXES = (".html", ".htm")
TABLE_SUFFIXES = (".jsonl", ".parquet", ".arrow")
#: every suffix read as documents (any case); every other file found or named is listed as skipped
SUPPORTED_SUFFIXES = TEXT_SUFFIXES + RST_SUFFIXES + CODE_SUFFIXES + HTML_SUFFIXES + TABLE_SUFFIXES
#: folders of version-control systems, listed as one skipped entry each and never walked
VCS_FOLDERS = frozenset({".git", ".hg", ".svn", ".bzr"})
#: how the reason of an entry that is not read at all (by its type or kind, never opened) starts
NOT_READ_REASONS = ("unsupported type", "symlinked folder not followed", "symlink loop", "broken symlink",
                    "not a regular file", "version-control folder", "hidden folder", "latechunk output folder",
                    "same file as")
PARQUET_BATCH_ROWS = 256
#: the fields (JSONL) or columns (tables) a record's id is read from, the first present one
_ID_COLUMNS = DEFAULT_ID_FIELDS


DEFAULT_FIELDS = RecordFields()  # the defaults: id (_id, doc_id), text, title
#: rows turned into Python objects at a time from an Arrow record batch (the batch itself is memory-mapped)
ARROW_BATCH_ROWS = 256


# longest first: the UTF-32LE mark starts with the UTF-16LE one
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32LE"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32BE"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16LE"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16BE"),
)
_SNIFF_CHARS = 8192
#: Share of non-text code points (controls other than whitespace, unassigned, private use) above which a file
#: with a UTF-16/UTF-32 byte-order mark is taken for binary data that merely starts with those bytes.
_MAX_NON_TEXT_SHARE = 0.1


def sniff_bom(data: bytes) -> tuple[bytes, str, str]:
    """The byte-order mark ``data`` starts with (UTF-32 marks are tested before the UTF-16 ones they extend).

    Args:
        data: The file's first bytes (or all of them).

    Returns:
        ``(bom, codec, label)``: the mark's bytes, a Python codec name without BOM handling (``"utf-16-le"``)
        and a label for messages (``"UTF-16LE"``); ``(b"", "utf-8", "UTF-8")`` when there is none.
    """
    for bom, codec, label in _BOMS:
        if data.startswith(bom):
            return bom, codec, label
    return b"", "utf-8", "UTF-8"


def _non_text_share(text: str) -> float:
    """Share of the first :data:`_SNIFF_CHARS` characters that are no text (Cc but whitespace, Cn, Co, Cs)."""
    head = text[:_SNIFF_CHARS]
    if not head:
        return 0.0
    bad = sum(
        1 for ch in head
        if ch not in "\t\n\r\f\v" and unicodedata.category(ch) in ("Cc", "Cn", "Co", "Cs")
    )
    return bad / len(head)


def legacy_hint(data: bytes) -> str:
    """For bytes that are not UTF-8: a hint when they read as text in Windows-1252 (a superset of Latin-1's
    printable characters, the usual legacy encoding of Western text), ``""`` otherwise (binary, damaged)."""
    try:
        text = data[: _SNIFF_CHARS * 4].decode("cp1252", errors="strict")
    except UnicodeDecodeError:
        return ""
    if _non_text_share(text) > 0.01:
        return ""
    return ("; it reads as Windows-1252 / Latin-1 text: convert it to UTF-8 first, keeping its name (e.g. iconv -f "
            "WINDOWS-1252 -t UTF-8 FILE > FILE.tmp && mv FILE.tmp FILE)")


#: invalid byte offsets a reason names (then ", ..." and the count)
_SHOWN_OFFSETS = 5
_REPLACE_ADVICE = "--encoding-errors replace reads it with U+FFFD in their place"
#: appended to a legacy 8-bit file's reason under ``--encoding-errors replace``, which is for UTF-8 text with a few
#: invalid bytes: read with it, a Windows-1252 file would have U+FFFD for each of its accented letters
LEGACY_UNDER_REPLACE = (" (not read with --encoding-errors replace, which is for UTF-8 text with a few invalid "
                        "bytes: it would put U+FFFD in place of every non-ASCII character of a legacy 8-bit file)")


def invalid_bytes(data: bytes, codec: str = "utf-8") -> tuple[list[int], int]:
    """The offsets of the bytes of ``data`` that are not valid in ``codec``, and how many bytes of its valid
    characters are past one a character (for UTF-8: > 0 when it holds a valid multi-byte character).

    Args:
        data: The bytes (after any byte-order mark).
        codec: A stateless Python codec (``"utf-8"``, ``"shift_jis"``, ...).

    Returns:
        ``(offsets, extra)``: every invalid byte's offset (0-based, ascending), and the byte count of the valid
        characters minus their number.
    """
    text = data.decode(codec, "surrogateescape")  # each invalid byte: one U+DC80..U+DCFF
    offsets: list[int] = []
    pos = last = extra = 0
    for m in _ESCAPED.finditer(text):
        seg = text[last:m.start()]
        size = len(seg.encode(codec))
        pos, extra = pos + size, extra + size - len(seg)
        offsets.extend(range(pos, pos + m.end() - m.start()))
        pos += m.end() - m.start()
        last = m.end()
    seg = text[last:]
    return offsets, extra + len(seg.encode(codec)) - len(seg)


_ESCAPED = re.compile("[\\udc80-\\udcff]+")


def offsets_text(offsets: Sequence[int], skip: int = 0) -> str:
    """``"1 byte ... (at byte 12)"``-style words for invalid bytes: the first :data:`_SHOWN_OFFSETS` offsets
    (plus ``skip``, a BOM's or a line's start) and the count."""
    n = len(offsets)
    shown = ", ".join(str(o + skip) for o in offsets[:_SHOWN_OFFSETS]) + (", ..." if n > _SHOWN_OFFSETS else "")
    return f"{n} byte{'s' if n > 1 else ''} not UTF-8 (at byte{'s' if n > 1 else ''} {shown})"


def utf8_problem(data: bytes, skip: int = 0) -> str:
    """Why ``data`` (bytes that do not decode as UTF-8) is not read, telling UTF-8 text with a few bad bytes from a
    legacy 8-bit file.

    The reason starts ``invalid UTF-8 at byte F: N bytes not UTF-8 (at bytes ...)``; then, for text that holds
    valid UTF-8 multi-byte characters too, ``in otherwise valid UTF-8 text`` and :data:`_REPLACE_ADVICE`
    (converting it from Windows-1252 would garble its correct characters); for text without one that reads as
    Windows-1252, how to convert it (:func:`legacy_hint`); else (binary, damaged) :data:`_REPLACE_ADVICE`.

    Args:
        data: The bytes (after any byte-order mark), not valid UTF-8.
        skip: Added to each offset (the BOM's length).

    Returns:
        The reason; ``""`` when ``data`` is valid UTF-8.
    """
    return _utf8_verdict(data, skip)[0]


def _utf8_verdict(data: bytes, skip: int = 0) -> tuple[str, bool]:
    """``(reason, legacy)``: :func:`utf8_problem`'s reason, and whether it calls ``data`` a legacy 8-bit file (no
    valid UTF-8 multi-byte character, and it reads as Windows-1252: converting it is the advice, never
    ``--encoding-errors replace``)."""
    offsets, extra = invalid_bytes(data)
    if not offsets:
        return "", False
    head = f"invalid UTF-8 at byte {offsets[0] + skip}: {offsets_text(offsets, skip)}"
    if extra:
        return f"{head} in otherwise valid UTF-8 text; {_REPLACE_ADVICE}", False
    hint = legacy_hint(data)
    return head + (hint or f"; {_REPLACE_ADVICE}"), bool(hint)


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


def _iter_jsonl(path: Path, root_name: str, fields: RecordFields = DEFAULT_FIELDS) -> Iterator[Document | Skipped]:
    try:
        fh = open(path, "rb")  # noqa: SIM115  (closed by the `with fh` below; an open error is a Skipped)
    except OSError as err:
        yield Skipped(root_name, f"unreadable: {err.strerror or err}", root_name)
        return
    with fh:
        try:
            bom, codec, label = sniff_bom(fh.read(4))
            fh.seek(len(bom))
        except OSError as err:
            yield Skipped(root_name, f"unreadable: {err.strerror or err}", root_name)
            return
        if codec == "utf-8":
            lines: Iterator[tuple[int, str | UnicodeDecodeError | _BadLine]] = _utf8_lines(fh, len(bom))
        else:
            lines = _decoded_lines(fh, codec)
        any_line = False  # a line that is not blank (good or bad): a file without one is listed as empty
        utf8_text: bool | None = None  # whether the file holds valid UTF-8 multi-byte characters (asked once)
        for lineno, line in lines:
            where = f"{root_name}:{lineno}"
            degraded = ""
            if isinstance(line, _BadLine):  # one bad line (UTF-8 lines are split on bytes): the others are read
                words = f"line {lineno}: {offsets_text(invalid_bytes(line.raw)[0], line.start)}"
                if utf8_text is None:
                    utf8_text = _holds_utf8_multibyte(path)
                hint = "" if utf8_text else legacy_hint(line.raw)  # a legacy file: converted, never replaced
                if fields.encoding_errors == "replace" and not hint:
                    line, degraded = line.raw.decode("utf-8", "replace"), f"{words} read as U+FFFD"
                else:
                    if hint:
                        advice = hint.replace("; it reads as", "; the file reads as") + (
                            LEGACY_UNDER_REPLACE if fields.encoding_errors == "replace" else "")
                    else:
                        advice = f"{' in otherwise valid UTF-8 text' if utf8_text else ''}; {_REPLACE_ADVICE}"
                    yield Skipped(where, f"invalid UTF-8 in {words}{advice}", where)
                    any_line = True
                    continue
            if isinstance(line, UnicodeDecodeError):
                reason = f"invalid {label} at or after line {lineno} ({line.reason}); the rest of the file is not read"
                yield Skipped(where, reason, where)
                return
            if not line.strip():
                continue
            any_line = True
            try:
                obj = json.loads(line, object_pairs_hook=_pairs)
            except json.JSONDecodeError as err:  # its lineno/colno count inside this one line: give the column
                yield Skipped(where, f"bad JSON line: {err.msg} at column {err.pos + 1} of line {lineno}", where)
                continue
            kept = set(getattr(obj, "repeated", ())) if fields.all_metadata else set(fields.metadata)
            twice = sorted(set(getattr(obj, "repeated", ())) & {*fields.ids, fields.text, fields.title, "url", *kept})
            if twice:  # json keeps the last of two values silently: which one the writer meant is unknown
                yield Skipped(where, f"the JSON object gives {', '.join(map(repr, twice))} twice (which value is "
                                     "meant is unknown)", where)
                continue
            if not isinstance(obj, dict):
                yield Skipped(where, "JSON line is not an object", where)
                continue
            id_field = next((k for k in fields.ids if k in obj), None)  # the first present, even when null
            doc_id = obj[id_field] if id_field is not None else None
            yield _degraded(_record(doc_id, obj.get(fields.text, _NO_FIELD), obj.get(fields.title), where,
                                    url=obj.get("url"), id_field=id_field, keys=tuple(obj), fields=fields,
                                    metadata=fields.metadata_of(obj)), degraded)
        if not any_line:  # 0 bytes, a byte-order mark alone or blank lines only: one item, never nothing
            yield Skipped(root_name, "empty file: no JSON lines", root_name)


class _Pairs(dict):
    """A JSON object as a dict, with the keys it gave more than once (``repeated``)."""

    repeated: tuple[str, ...] = ()


def _pairs(pairs: list[tuple[str, object]]) -> dict:
    """``object_pairs_hook`` of the JSONL reader: a dict, and the keys given twice noted (json keeps the last)."""
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    marked = _Pairs(obj)
    marked.repeated = tuple(k for k, _ in pairs if k in seen or seen.add(k))
    return marked


class _BadLine(NamedTuple):
    """A line of a UTF-8 file that is not UTF-8: its bytes and the file offset it starts at."""

    raw: bytes
    start: int


def _utf8_lines(fh, start: int = 0) -> Iterator[tuple[int, str | _BadLine]]:
    """Lines of a UTF-8 byte stream (BOM already consumed; ``start``: its length); a line that is not UTF-8 comes
    back as a :class:`_BadLine`."""
    for lineno, raw in enumerate(fh, 1):
        try:
            yield lineno, raw.decode("utf-8")
        except UnicodeDecodeError:
            yield lineno, _BadLine(raw, start)
        start += len(raw)


#: a decoded character that is not ASCII and not an undecodable byte (surrogateescape's U+DC80..U+DCFF)
_MULTIBYTE = re.compile("[\x80-\udc7f\udd00-\U0010ffff]")


def _holds_utf8_multibyte(path: Path) -> bool:
    """Whether the file holds a valid UTF-8 multi-byte character (read in 1 MiB blocks): a file of UTF-8 text
    with a few bad bytes does, a legacy 8-bit file (Windows-1252, Latin-1) almost never."""
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                if _MULTIBYTE.search(decoder.decode(block)):
                    return True
    except OSError:
        return False
    return False


def _degraded(item: Document | Skipped, note: str) -> Document | Skipped:
    """``item`` with ``metadata["degraded"] = note`` when it is a Document and ``note`` is set (a file, line or
    record read with U+FFFD for bytes that are not UTF-8: the manifest's ``degraded`` list)."""
    if not note or not isinstance(item, Document):
        return item
    return Document(item.doc_id, item.text, {**item.metadata, "degraded": note})


def _decoded_lines(fh, codec: str) -> Iterator[tuple[int, str | UnicodeDecodeError]]:
    """Lines of a UTF-16/UTF-32 byte stream (BOM already consumed); a decode error ends the stream."""
    text = TextIOWrapper(fh, encoding=codec, newline="")
    lineno = 0
    try:
        for lineno, line in enumerate(text, 1):
            yield lineno, line
    except UnicodeDecodeError as err:
        yield lineno + 1, err
    finally:
        with contextlib.suppress(ValueError, OSError):  # leave ``fh`` to its owner's ``with``
            text.detach()


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


def _value_kind(value) -> str:
    """``value``'s type and a short form of it, for a reason: ``a list [1, 2]``, ``a boolean true``, ``null``."""
    if value is None:
        return "null"
    kinds = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "a list",
             dict: "an object"}
    kind = kinds.get(type(value), "an object" if isinstance(value, dict) else f"a {type(value).__name__}")
    try:
        shown = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        shown = repr(value)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return f"{kind} {shown}"


def _id_reason(doc_id, field: str | None, fields: RecordFields = DEFAULT_FIELDS) -> str:
    """Why ``doc_id`` (the value of the record's ``field``) is not an id; ``""`` when it is one (a non-blank string
    or an integer, never a boolean)."""
    if field is None:
        return ("no 'id' (or '_id', 'doc_id') field" if fields.id is None
                else f"no {fields.id!r} field (--id-field)")
    if doc_id is None:
        return f"'{field}' is null (an id must be a string or an integer)"
    if isinstance(doc_id, str):
        return "" if doc_id.strip() else f"'{field}' is blank (an id must be a non-blank string or an integer)"
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        return ""
    hint = ""
    if isinstance(doc_id, float) and doc_id.is_integer():
        hint = f"; write {int(doc_id)}, not {doc_id!r}"
    return f"'{field}' is {_value_kind(doc_id)} (an id must be a string or an integer{hint})"


def _record_title(title, field: str = "title") -> tuple[str, str]:
    """``(title, reason)`` of a record's ``title`` value: a string as it is, an integer or a finite float as its
    string form (``5`` -> ``"5"``, as a front-matter title); null, absent or NaN (a missing value, as pandas
    writes one) is no title, ``("", "")``; any other value (a boolean, a list, an object, an infinite float,
    bytes) is ``("", reason)``: the record is skipped rather than embedded without the title it was given."""
    if title is None or isinstance(title, str):
        return title or "", ""
    if isinstance(title, float) and math.isnan(title):
        return "", ""
    if isinstance(title, (int, float)) and not isinstance(title, bool) and math.isfinite(title):
        return str(title), ""
    return "", f"{field!r} is {_value_kind(title)} (a title must be a string or a number)"


#: a JSONL line without a ``text`` field (``_record`` tells it from ``"text": null``)
_NO_FIELD = object()


def _undeclared_why(data: bytes) -> str:
    """Why an HTML page without a usable declaration was read as UTF-8: no declaration, or one Python does not
    know (a trial's ``<meta charset="no-such-charset">`` was reported as no declaration at all)."""
    from bs4.dammit import EncodingDetector

    label = EncodingDetector.find_declared_encoding(data, is_html=True)
    if label:
        return f"its <meta> declares {label.strip()!r}, an encoding Python does not know, so read as UTF-8"
    return "no byte-order mark and no <meta charset> declaration, so read as UTF-8"


#: The skip reason of a markdown document that is nothing but its front matter.
FRONT_MATTER_ONLY_REASON = "nothing but front matter (no text after it)"


def front_matter_only(text: str) -> bool:
    """Whether a markdown text is nothing but front matter (:data:`~latechunk.front_matter.FRONT_MATTER`), with
    only whitespace or invisible marks after it: the strategies keep front matter out of what they cut, so such a
    document has nothing to embed (``embed`` and :class:`latechunk.LateChunker` skip it alike)."""
    fm = FRONT_MATTER.match(text)
    return fm is not None and all(ch.isspace() or ch in INVISIBLE_MARKS for ch in text[fm.end():])


def surrogate_reason(text: str, what: str = "text") -> str:
    r"""Why ``text`` is not valid Unicode text: a lone surrogate (a JSON ``"\ud800"`` escape without its pair
    decodes to one), which no UTF-8 encoder, hash or tokenizer takes; ``""`` when it has none.

    Args:
        text: A string.
        what: What it is, for the reason (``"text"``, ``"'id'"``, ``"'title'"``).

    Returns:
        ``""``, or e.g. ``"text holds a lone surrogate U+D800 at character 15 (...)"``.
    """
    if text.isascii():
        return ""
    try:
        text.encode("utf-8")
        return ""
    except UnicodeEncodeError as err:
        return (f"{what} holds a lone surrogate U+{ord(text[err.start]):04X} at character {err.start} (not valid "
                "Unicode: in JSON, a \\uD800-\\uDFFF escape without its pair)")


def _record(doc_id, text, title, where: str, url=None, id_field: str | None = "id",
            keys: tuple[str, ...] = (), fields: RecordFields = DEFAULT_FIELDS,
            metadata: dict | None = None) -> Document | Skipped:
    r"""One JSONL line or parquet row as a Document (``title + "\n\n" + text`` when titled) or a Skipped; a
    non-blank string ``url`` (a JSONL ``url`` field, a table's ``url`` column) goes to ``metadata["url"]``.

    ``id_field`` names the field or column ``doc_id`` came from (None: the record has none), for the reason of a
    null or ill-typed id. A number ``title`` is used as its string form; a title of another type skips the
    record (:func:`_record_title`). ``keys``: the record's field names, listed in the reason of a record
    without an id or text field (a corpus whose text field is ``body`` says so on its first line); ``fields``:
    which of them hold the id, text and title (:class:`RecordFields`); ``metadata``: the record's kept
    metadata fields (:meth:`RecordFields.metadata_of`), made JSON-ready into ``metadata["metadata"]``
    (:func:`metadata_json`; a value that cannot be skips the record)."""
    shown = ", ".join(repr(k) for k in keys[:8]) + (", ..." if len(keys) > 8 else "")
    reason = _id_reason(doc_id, id_field, fields) or (surrogate_reason(doc_id, f"'{id_field}'")
                                                       if isinstance(doc_id, str) else "")
    if reason and id_field is None and keys:  # no id field at all: say which fields there are
        reason += f" (its fields: {shown}; --id-field names the one that holds the id)"
    if reason:
        return Skipped(where, reason, where)
    if not isinstance(text, str):  # listed under the record's own id (it has a valid one), its place as source
        t = fields.text
        if text is _NO_FIELD:
            other = next((k for k in keys if k not in fields.ids and k not in (fields.title, "url")), "body")
            hint = (f" (its fields: {shown}; give the field that holds the text: --text-field {other})"
                    if keys else "")
            return Skipped(str(doc_id), f"no {t!r} field{hint}", where)
        if text is None:
            return Skipped(str(doc_id), f"{t!r} is null", where)
        return Skipped(str(doc_id), f"{t!r} must be a string, got {type(text).__name__}", where)
    title, reason = _record_title(title, fields.title)
    url, url_reason = _record_url(url)
    kept, meta_reason = metadata_json(metadata or {})
    reason = reason or url_reason or meta_reason or surrogate_reason(text) or surrogate_reason(title, "'title'")
    if reason:
        return Skipped(str(doc_id), reason, where)
    if not text.strip():  # a title alone is not a document (a trial's {"text": "", "title": "T"} became "T")
        return Skipped(str(doc_id), "empty or whitespace-only" + (f" {fields.text!r} (its title alone is not "
                                                                  "embedded)" if title else ""), where)
    full = f"{title}\n\n{text}" if title else text
    meta = {"source": where}
    if title:
        meta["title"] = title
        meta["title_from"] = "record"
    if url:
        meta["url"] = url
    if kept:
        meta["metadata"] = kept
    return Document(str(doc_id), full, meta)


def metadata_json(values: dict) -> tuple[dict, str]:
    """A record's metadata fields made JSON-ready (``embed --metadata-fields``): ``(values, reason)``.

    JSON values stay as they are; a NaN float (a table's missing value, or ``NaN`` in a JSON line) becomes None;
    a date, time or datetime becomes its ISO 8601 text, a ``Decimal`` its exact text, a ``timedelta`` its
    seconds. An infinite float (``1e400`` in a JSON line) or a value of another kind (bytes, a set, an object)
    gives ``({}, reason)``: the record is skipped rather than embedded without the metadata asked for.

    Args:
        values: ``{field: value}`` (:meth:`latechunk.types.RecordFields.metadata_of`).

    Returns:
        ``(json_ready, "")``, or ``({}, reason)`` naming the field and the value's type.
    """
    import datetime as dt
    import decimal

    def ready(v, name):
        if v is None or isinstance(v, (bool, int, str)):
            return v
        if isinstance(v, float):
            if math.isnan(v):
                return None
            if math.isinf(v):
                raise TypeError(f"metadata field {name!r} is an infinite number, which JSON cannot hold")
            return v
        if isinstance(v, (dt.datetime, dt.date, dt.time)):
            return v.isoformat()
        if isinstance(v, decimal.Decimal):
            return str(v)
        if isinstance(v, dt.timedelta):
            return v.total_seconds()
        if isinstance(v, (list, tuple)):
            return [ready(x, name) for x in v]
        if isinstance(v, dict) and all(isinstance(k, str) for k in v):
            return {k: ready(x, name) for k, x in v.items()}
        raise TypeError(f"metadata field {name!r} is {type(v).__name__}, which JSON cannot hold (--metadata-fields "
                        "keeps text, numbers, booleans, dates, lists and objects)")

    try:
        out = {k: ready(v, k) for k, v in values.items()}
    except TypeError as err:
        return {}, str(err)
    bad = next((k for k, v in out.items() if surrogate_reason(json.dumps(v, ensure_ascii=False))), None)
    if bad is not None:
        return {}, surrogate_reason(json.dumps(out[bad], ensure_ascii=False), f"metadata field {bad!r}")
    return out, ""


def _record_url(url) -> tuple[str, str]:
    """``(url, reason)`` of a record's ``url`` value: a string stripped (blank: no url); null, absent or NaN is
    no url; a string holding a lone surrogate, or a value of another type, is ``("", reason)``: the record is
    skipped rather than embedded without the url it was given (as a title, :func:`_record_title`)."""
    if url is None or (isinstance(url, float) and math.isnan(url)):
        return "", ""
    if not isinstance(url, str):
        return "", f"'url' is {_value_kind(url)} (a url must be a string)"
    return url.strip(), surrogate_reason(url, "'url'")


def _iter_parquet(path: Path, root_name: str, fields: RecordFields = DEFAULT_FIELDS) -> Iterator[Document | Skipped]:
    """Rows of a parquet file with ``id`` (or ``_id``/``doc_id``) and ``text`` columns, ``title`` optional.

    Read in batches of :data:`PARQUET_BATCH_ROWS` rows of the needed columns only (row group by row group), so a
    large file is never held in memory whole.
    """
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as err:  # noqa: BLE001  (pyarrow raises several types for a damaged file)
        yield Skipped(root_name, f"unreadable parquet: {type(err).__name__}: {err}", root_name)
        return
    names = set(pf.schema_arrow.names)
    cols = _table_columns(list(names), fields)
    if cols is None:
        yield Skipped(root_name, _columns_reason("parquet", list(names), fields), root_name)
        return
    id_col = cols[0]
    row = 0
    batches = pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=cols)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            if row == 0:  # the columns are there, the rows not: one item, never nothing
                yield Skipped(root_name, "empty parquet file: no rows", root_name)
            return
        except Exception as err:  # noqa: BLE001  (a damaged row group ends the file, listed)
            where = f"{root_name}:{row}"
            yield Skipped(where, f"parquet rows from {row} on unreadable: {type(err).__name__}: {err}", where)
            return
        yield from _table_records(*_batch_pydict(batch), id_col, fields, root_name, row)
        row += batch.num_rows


# --------------------------------------------------------------------------- Arrow files and Hugging Face datasets


def hf_dataset_kind(d: Path) -> str:
    """Whether ``d`` is a folder written by Hugging Face ``datasets``' ``save_to_disk`` (no ``datasets`` import).

    Args:
        d: A folder.

    Returns:
        ``"dataset_dict"`` for a ``DatasetDict`` folder (a ``dataset_dict.json`` file, one sub-folder per split),
        ``"dataset"`` for a ``Dataset`` folder (``state.json`` beside ``dataset_info.json``), else ``""``.
    """
    if (d / "dataset_dict.json").is_file():
        return "dataset_dict"
    if (d / "state.json").is_file() and (d / "dataset_info.json").is_file():
        return "dataset"
    return ""


def _table_columns(names: Sequence[str], fields: RecordFields = DEFAULT_FIELDS) -> list[str] | None:
    """The columns to read (id, text, and title, ``url`` and the kept metadata fields when present) of a table
    with these column names; None when it has no id (``id``/``_id``/``doc_id``, or ``fields.id``) or no text
    (``fields.text``) column."""
    id_col = next((c for c in fields.ids if c in names), None)
    if id_col is None or fields.text not in names:
        return None
    return [id_col, fields.text] + [c for c in (fields.title, "url") if c in names] + \
        fields.metadata_names(c for c in names if c != id_col)


def _batch_pydict(batch) -> tuple[dict, dict[int, list[tuple[str, bytes]]]]:
    """``(columns, bad)``: a record batch as ``{column: values}``, and per row (0-based in the batch) the string
    values that are not UTF-8, ``[(column, bytes)]`` (pyarrow's ``to_pydict`` fails on the whole batch for one: a
    trial lost every later row of a parquet file). Such a value is in ``columns`` decoded with U+FFFD."""
    try:
        return batch.to_pydict(), {}
    except UnicodeDecodeError:
        pass
    import pyarrow as pa

    data: dict = {}
    bad: dict[int, list[tuple[str, bytes]]] = {}
    for name, col in zip(batch.schema.names, batch.columns):
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            raw = col.view(pa.binary() if pa.types.is_string(col.type) else pa.large_binary()).to_pylist()
            values = []
            for i, b in enumerate(raw):
                try:
                    values.append(None if b is None else b.decode("utf-8"))
                except UnicodeDecodeError:
                    values.append(b.decode("utf-8", "replace"))
                    bad.setdefault(i, []).append((name, b))
            data[name] = values
        else:
            data[name] = col.to_pylist()
    return data, bad


def _table_records(data: dict, bad: dict[int, list[tuple[str, bytes]]], id_col: str, fields: RecordFields,
                   root_name: str, row: int) -> Iterator[Document | Skipped]:
    """The rows of one batch of table columns (``data``: ``{column: values}``) as :func:`_record` items, sources
    ``root_name:ROW`` from ``row`` on. A row with values that are not UTF-8 (``bad``, :func:`_batch_pydict`) is
    Skipped naming the column and the bytes' offsets in its value, or with ``fields.encoding_errors`` ``"replace"``
    read with U+FFFD and marked degraded; the other rows are read either way."""
    n = len(data[fields.text])
    nothing = [None] * n
    meta_cols = fields.metadata_names(c for c in data if c != id_col)
    for i, (doc_id, text, title, url) in enumerate(zip(data[id_col], data[fields.text],
                                                       data.get(fields.title) or nothing, data.get("url") or nothing)):
        where = f"{root_name}:{row + i}"
        words = "; ".join(f"column {c!r}: {offsets_text(invalid_bytes(b)[0])}" for c, b in bad.get(i, ()))
        if words and fields.encoding_errors != "replace":
            yield Skipped(where, f"invalid UTF-8 in {words}; {_REPLACE_ADVICE}", where)
            continue
        meta = {c: data[c][i] for c in meta_cols}
        yield _degraded(_record(doc_id, text, title, where, url=url, id_field=id_col, fields=fields, metadata=meta),
                        f"{words} read as U+FFFD" if words else "")


def _columns_reason(what: str, names: Sequence[str], fields: RecordFields = DEFAULT_FIELDS) -> str:
    ids = "an 'id' (or '_id', 'doc_id')" if fields.id is None else f"an {fields.id!r}"
    return (f"{what} needs {ids} and a {fields.text!r} column, has {sorted(names)} (--id-field and --text-field "
            "name other columns)")


def _arrow_batches(source) -> tuple:
    """``(schema, record batches)`` of an Arrow IPC file or stream (``source``: an open, memory-mapped file)."""
    import pyarrow as pa

    magic = source.read(6)
    source.seek(0)
    if magic == b"ARROW1":  # the IPC file format (Feather v2); datasets writes the stream format
        reader = pa.ipc.open_file(source)
        return reader.schema, (reader.get_batch(i) for i in range(reader.num_record_batches))
    reader = pa.ipc.open_stream(source)
    return reader.schema, iter(reader)


def _iter_arrow_rows(files: Sequence[Path], root_name: str, what: str,
                     fields: RecordFields = DEFAULT_FIELDS) -> Iterator[Document | Skipped]:
    """Rows of one table stored as Arrow files read in order (the shards of a dataset split, or one ``.arrow``
    file), as Documents with sources ``root_name:row`` (``row`` 0-based over all the files).

    Each record batch is memory-mapped and turned into Python objects :data:`ARROW_BATCH_ROWS` rows at a time, so
    a large table is never held in memory whole. Missing id/text columns give one Skipped (``root_name``) naming
    the columns there are; a damaged file ends the table with one Skipped naming the file and the first row not
    read.
    """
    import pyarrow as pa

    row = 0
    cols: list[str] | None = None
    for f in files:
        try:
            with pa.memory_map(str(f)) as source:
                schema, batches = _arrow_batches(source)
                if cols is None:
                    cols = _table_columns(schema.names, fields)
                    if cols is None:
                        yield Skipped(root_name, _columns_reason(what, schema.names, fields), root_name)
                        return
                for batch in batches:
                    batch = batch.select(cols)
                    for start in range(0, batch.num_rows, ARROW_BATCH_ROWS):
                        data, bad = _batch_pydict(batch.slice(start, ARROW_BATCH_ROWS))
                        for item in _table_records(data, bad, cols[0], fields, root_name, row):
                            yield item
                            row += 1
        except Exception as err:  # noqa: BLE001  (pyarrow raises several types for a damaged file)
            where = f"{root_name}:{row}"
            yield Skipped(where, f"{what} rows from {row} on unreadable ({f.name}: {type(err).__name__}: {err})",
                          where)
            return
    if row == 0:  # the columns are there (or no shard at all), the rows not: one item, never nothing
        yield Skipped(root_name, f"empty {what}: no rows", root_name)


def _dataset_splits(d: Path, root_name: str) -> Iterator[tuple[str, list[Path], str]]:
    """The tables of a ``save_to_disk`` folder: ``(root name, Arrow files in order, reason)`` per split, with
    ``reason`` ``""`` or why the split cannot be read (its files are then ``[]``)."""
    if hf_dataset_kind(d) == "dataset_dict":
        try:
            splits = json.loads((d / "dataset_dict.json").read_text(encoding="utf-8"))["splits"]
            if not isinstance(splits, list) or not all(isinstance(s, str) and s and Path(s).name == s for s in splits):
                raise ValueError(f"'splits' must be a list of folder names, got {splits!r}")
        except (OSError, ValueError, KeyError, TypeError) as err:
            yield root_name, [], f"unreadable Hugging Face DatasetDict folder: dataset_dict.json: {err}"
            return
        if not splits:  # one item, never nothing
            yield root_name, [], "Hugging Face DatasetDict folder lists no splits (dataset_dict.json)"
            return
        parts = [(f"{root_name}/{s}", d / s) for s in splits]
    else:
        parts = [(root_name, d)]
    for name, folder in parts:
        try:
            listed = json.loads((folder / "state.json").read_text(encoding="utf-8"))["_data_files"]
            files = [e["filename"] for e in listed]
            if not all(isinstance(f, str) and f and Path(f).name == f for f in files):
                raise ValueError(f"'_data_files' must name files inside the folder, got {files!r}")
        except (OSError, ValueError, KeyError, TypeError) as err:
            yield name, [], f"unreadable Hugging Face dataset folder: state.json: {type(err).__name__}: {err}"
            continue
        missing = [f for f in files if not (folder / f).is_file()]
        if missing:
            yield name, [], f"Hugging Face dataset folder lacks data file(s) listed in state.json: {', '.join(missing)}"
            continue
        yield name, [folder / f for f in files], ""


def _iter_hf_dataset(d: Path, root_name: str, fields: RecordFields = DEFAULT_FIELDS) -> Iterator[Document | Skipped]:
    """Rows of every split of a Hugging Face ``save_to_disk`` folder (see the module doc), split by split."""
    for name, files, reason in _dataset_splits(d, root_name):
        if reason:
            yield Skipped(name, reason, name)
        else:
            yield from _iter_arrow_rows(files, name, "Hugging Face dataset", fields)


def _count_arrow(files: Sequence[Path], fields: RecordFields = DEFAULT_FIELDS) -> tuple[int, int]:
    """``(items, text bytes)`` that :func:`_iter_arrow_rows` yields from these files, from the record batches'
    lengths and the ``text`` column's offsets (memory-mapped: no text is read). A table without the needed
    columns or a damaged file counts one item (its Skipped)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = nbytes = 0
    try:
        for i, f in enumerate(files):
            with pa.memory_map(str(f)) as source:
                schema, batches = _arrow_batches(source)
                if i == 0 and _table_columns(schema.names, fields) is None:
                    return 1, 0
                for batch in batches:
                    rows += batch.num_rows
                    nbytes += pc.sum(pc.binary_length(batch.column(fields.text))).as_py() or 0
    except Exception:  # noqa: BLE001  (iter_inputs reports it as one skipped item)
        return rows + 1, nbytes
    return rows or 1, nbytes  # no rows: one Skipped ("empty ...: no rows")


def _count_table_input(f: Path, rel: str, fields: RecordFields = DEFAULT_FIELDS) -> tuple[int, int]:
    """``(items, text bytes)`` of a Hugging Face dataset folder or an ``.arrow`` file (for :func:`count_inputs`
    and :func:`count_input_bytes`)."""
    if not f.is_dir():
        return _count_arrow([f], fields)
    n = nbytes = 0
    for _name, files, reason in _dataset_splits(f, rel):
        rows, size = _count_arrow(files, fields) if not reason else (1, 0)
        n, nbytes = n + rows, nbytes + size
    return n, nbytes


def is_output_folder(d: Path) -> bool:
    """Whether ``d`` is a folder written by ``latechunk embed``.

    Args:
        d: A folder.

    Returns:
        True when it holds latechunk's run.json (its ``format`` is ``latechunk-run/N``, or it has latechunk's
        ``created`` and ``settings`` keys: any other project's run.json, an ML experiment's, is not one), or an
        index.faiss beside a manifest.json.

    Raises:
        OSError: when ``d``'s entries cannot be checked (a path too long for the file system, ...).
    """
    run = d / "run.json"
    if run.is_file():
        try:
            with open(run, "rb") as f:
                head = f.read(1 << 16)
            run_json = json.loads(head)
            if str(run_json.get("format", "")).startswith("latechunk-run/") or (
                    "format" not in run_json and isinstance(run_json.get("settings"), dict) and "created" in run_json):
                return True  # (the second: a run.json of a version before the format key, if any)
        except (ValueError, AttributeError, OSError):  # not JSON, not an object, too big: not latechunk's
            pass
    return (d / "index.faiss").is_file() and (d / "manifest.json").is_file()


def is_not_read(reason: str) -> bool:
    """Whether a Skipped reason is one of an entry that was never opened (:data:`NOT_READ_REASONS`): its
    appearing in a corpus after a run changes nothing that run embedded.

    Args:
        reason: A :class:`Skipped` reason.

    Returns:
        True for an unsupported type, a symlinked folder, a symlink loop or broken symlink, a special file, a
        version-control, hidden or latechunk output folder.
    """
    return reason.startswith(NOT_READ_REASONS)


def unsupported_reason(path: Path) -> str:
    """Why a file is not read as documents, judged by its suffix alone (the one suffix policy for files named
    as inputs and files found in folders).

    Args:
        path: A file path.

    Returns:
        ``""`` for a suffix in :data:`SUPPORTED_SUFFIXES` (any case), else the reason, e.g.
        ``"unsupported type .docx (read: .md, .markdown, .txt, .py, ..., .html, .htm, .jsonl, .parquet, .arrow)"``.
    """
    suffix = path.suffix.lower()
    if suffix in SUPPORTED_SUFFIXES:
        return ""
    kind = f"unsupported type {suffix}" if suffix else "unsupported type (no suffix)"
    return f"{kind} (read: {', '.join(SUPPORTED_SUFFIXES)})"


def _not_a_file_reason(path: Path) -> str:
    """Why ``path`` (not a folder) cannot be read as a file: a broken symlink, a symlink loop or a special file;
    ``""`` for a regular file (or a symlink to one)."""
    try:
        st = os.stat(path)
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "symlink loop (never followed)"
        if err.errno != errno.ENAMETOOLONG and path.is_symlink():
            return f"broken symlink (its target {os.readlink(path)!r} does not exist)"
        return f"unreadable: {err.strerror or err}"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (a FIFO, socket or device)"
    return ""


def _folder_reason(d: Path, name: str) -> str:
    """Why the folder ``d`` (named ``name``) found inside an input folder is not walked; ``""`` when it is."""
    try:
        if d.is_symlink():
            return "symlinked folder not followed (name it as an input to read it)"
        if name in VCS_FOLDERS:
            return "version-control folder (not read)"
        if name.startswith("."):  # .venv, .cache, .tox, .ipynb_checkpoints: tools' files, not the corpus
            return "hidden folder (not read; name it as an input to read it)"
        if is_output_folder(d):
            return "latechunk output folder (not read as documents)"
    except OSError as err:  # e.g. a path longer than the file system takes (folders nested a thousand deep)
        return f"unreadable folder: {err.strerror or err}"
    return ""


#: why a BEIR folder's ``queries.jsonl`` (beside its ``corpus.jsonl``) is not read as documents
BEIR_QUERIES_REASON = ("BEIR queries file beside corpus.jsonl (questions, not documents; name the file itself to "
                       "embed it)")


def _walk(root: Path) -> Iterator[tuple[Path, str, bool]]:
    """Everything below ``root`` as ``(path, reason, is_folder)``: a file to read has reason ``""``, and so has a
    Hugging Face dataset folder (:func:`hf_dataset_kind`: read as one table, never walked); a file or folder that
    is not read (unsupported type, symlinked or version-control folder, latechunk output folder, symlink loop,
    broken symlink, special file, unreadable folder) comes with its reason, a folder as one entry. ``is_folder``
    comes from the walk itself (a path too long for the file system cannot be asked again)."""
    unreadable: list[tuple[Path, str, bool]] = []

    def onerror(err: OSError) -> None:
        unreadable.append((Path(err.filename), f"unreadable folder: {err.strerror or err}", True))

    if is_output_folder(root):
        yield root, "latechunk output folder (not read as documents)", True
        return
    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror, followlinks=False):
        d = Path(dirpath)
        keep = []
        for name in dirnames:
            reason = _folder_reason(d / name, name)
            try:
                dataset = not reason and hf_dataset_kind(d / name)
            except OSError as err:  # a path too long for the file system, ...
                reason, dataset = f"unreadable folder: {err.strerror or err}", False
            if reason or dataset:
                yield d / name, reason, True  # a dataset folder: reason "", read whole (not walked)
            else:
                keep.append(name)
        dirnames[:] = keep
        beir = "corpus.jsonl" in filenames
        for name in filenames:
            f = d / name
            if beir and name == "queries.jsonl":  # a BEIR dataset folder: its questions are not documents
                yield f, BEIR_QUERIES_REASON, False
                continue
            yield f, (_not_a_file_reason(f) or unsupported_reason(f)), False
    yield from unreadable  # the root itself too (listed under its own name)


def _input_files(paths: Sequence[Path]) -> Iterator[tuple[Path, list[tuple[Path, str, str]]]]:
    """Per input path: ``(path, [(file, doc id root, reason), ...])`` in reading order (sorted by path).

    A folder gives every entry :func:`_walk` finds, with its path relative to the folder (a folder that is not
    read ends in ``/``; a Hugging Face dataset folder found inside it does not); a file or a Hugging Face dataset
    folder gives itself with its name. ``reason`` is ``""`` for a file or dataset folder to read, else why it is
    not read: the same suffix policy (:func:`unsupported_reason`) for both.
    """
    for p in paths:
        if p.is_dir() and hf_dataset_kind(p):
            yield p, [(p, p.name or p.resolve().name, "")]
        elif p.is_dir():
            entries = sorted(_walk(p), key=lambda e: e[0])
            yield p, [(f, (f.relative_to(p).as_posix() if f != p else p.name) + ("/" if reason and folder else ""),
                       reason) for f, reason, folder in entries]
        else:
            yield p, [(p, p.name, _not_a_file_reason(p) or unsupported_reason(p))]


def count_inputs(inputs: Sequence[str | os.PathLike], fields: RecordFields = DEFAULT_FIELDS) -> int:
    """About how many items :func:`iter_inputs` yields (for a progress bar's total), without parsing anything.

    Files and folders are listed as :func:`iter_inputs` lists them; a JSONL file counts its lines that are not
    blank, a parquet file the rows in its footer, an Arrow file or Hugging Face dataset folder the rows of its
    record batches (memory-mapped; a split without id/text columns counts 1); a table without rows counts 1 (its
    "empty" Skipped), and so does anything unreadable. Exact except for JSONL files in
    UTF-16/32 (counted by line breaks) and inputs that change while they are read.

    Args:
        inputs: Input paths as given to :func:`iter_inputs` (missing ones count 0).
        fields: The record fields (:class:`RecordFields`; a table without its id/text columns counts 1).

    Returns:
        The estimated number of input items (documents and skipped items).
    """
    n = 0
    for _root, items in _input_files([Path(x) for x in inputs if Path(x).exists()]):
        for f, rel, reason in items:
            suffix = f.suffix.lower()
            if reason:
                n += 1
                continue
            try:
                if f.is_dir() or suffix == ".arrow":
                    n += _count_table_input(f, rel, fields)[0]
                elif suffix == ".jsonl":
                    with open(f, "rb") as fh:
                        n += sum(1 for line in fh if line.strip()) or 1
                elif suffix == ".parquet":
                    import pyarrow.parquet as pq

                    n += pq.ParquetFile(f).metadata.num_rows or 1
                else:
                    n += 1
            except Exception:  # noqa: BLE001  (iter_inputs reports it as one skipped item)
                n += 1
    return n


def count_input_bytes(inputs: Sequence[str | os.PathLike], fields: RecordFields = DEFAULT_FIELDS) -> int:
    """About how many bytes of document text (UTF-8) :func:`iter_inputs` yields, for a progress bar's total,
    without reading any text.

    Files and folders are listed as :func:`iter_inputs` lists them. A text file counts its size (exact for
    UTF-8; its BOM and UTF-16/32 make it an estimate), a JSONL file its size (its ids and JSON syntax included:
    an overestimate), a parquet file the uncompressed size of its ``text`` column from the footer, an Arrow file
    or Hugging Face dataset folder the UTF-8 length of its ``text`` column (from the memory-mapped offsets);
    files that are not read count 0.

    Args:
        inputs: Input paths as given to :func:`iter_inputs` (missing ones count 0).
        fields: The record fields (:class:`RecordFields`): a table's text column is ``fields.text``.

    Returns:
        The estimated bytes of document text.
    """
    n = 0
    for _root, items in _input_files([Path(x) for x in inputs if Path(x).exists()]):
        for f, rel, reason in items:
            if reason:
                continue
            try:
                if f.is_dir() or f.suffix.lower() == ".arrow":
                    n += _count_table_input(f, rel, fields)[1]
                elif f.suffix.lower() == ".parquet":
                    import pyarrow.parquet as pq

                    meta = pq.ParquetFile(f).metadata
                    for g in range(meta.num_row_groups):
                        rg = meta.row_group(g)
                        n += sum(rg.column(c).total_uncompressed_size for c in range(rg.num_columns)
                                 if rg.column(c).path_in_schema == fields.text)
                else:
                    n += f.stat().st_size
            except Exception:  # noqa: BLE001, S112  (iter_inputs reports it as a skipped item)
                continue
    return n


def _utf8_name(rel: str) -> str:
    r"""``rel`` itself when it is valid UTF-8; else its bytes (os.fsdecode's surrogate escapes) with each byte that is
    not UTF-8 written as ``\xNN``, a valid string that names the file in the skipped list."""
    try:
        rel.encode("utf-8")
        return rel
    except UnicodeEncodeError:
        return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _duplicate_hint(paths: Sequence[Path], first: int, again: int, path_id: bool) -> str:
    """What to append to a duplicate id's reason when its two occurrences come from different inputs (indexes
    ``first`` and ``again`` of ``paths``): when one of them is a file's id (its path relative to its input, so
    the same name under two roots), how to keep both; when the two inputs are one folder or file named twice,
    that. ``""`` within one input, or for two records' ids (a field's value, not a path)."""
    if first == again:
        return ""
    try:
        same = paths[first].resolve() == paths[again].resolve()
    except OSError:
        same = False
    if same:
        return " (the same input is given twice)"
    if path_id:
        return (" (ids are paths relative to each input: give the folders' common parent as one input to keep "
                "both)")
    return ""


def iter_inputs(inputs: Sequence[str | os.PathLike], fields: RecordFields | None = None
                ) -> Iterator[Document | Skipped]:
    """Stream documents from files, folders, JSONL, parquet and Arrow files and Hugging Face dataset folders, in a
    stable order.

    ``doc_id`` of a file is its path relative to the input folder (a single file: its name); of a JSONL line or
    a parquet, Arrow or dataset row, its ``id``/``_id``/``doc_id`` (an integer id ``1`` and a string id ``"1"``
    are the same id, ``"1"``). Folders are walked recursively in sorted order, reading ``.md``, ``.markdown``,
    ``.txt``, source code (:data:`CODE_SUFFIXES`), ``.html``/``.htm`` (as markdown), ``.jsonl``, ``.parquet`` and
    ``.arrow`` (any case) and every ``save_to_disk`` folder (read as one
    table per split, not walked); every other entry is listed as a Skipped with its reason (see the module doc),
    so an index written inside the corpus folder is never read back as documents, and symlinked folders are not
    followed. A file named in ``inputs`` follows the same suffix policy. A file reached by two paths (a symlink or
    hard link to it, two inputs) is read once, by its real path whatever the input order, the other path listed
    as ``same file as ...`` (:func:`_mark_same_files`: every input's file list is walked before the first
    document is read; the paths only, not their text). The order depends only on the inputs, so a run can be
    resumed by skipping the items already consumed.

    Args:
        inputs: Files and folders, read in the order given.
        fields: The record fields (JSONL) or columns (tables) of the id, text and title (:class:`RecordFields`);
            None: the defaults.

    Yields:
        :class:`Document` (``metadata["source"]``: its file, line or row) or :class:`Skipped` (an unreadable,
        binary or empty file, a markdown file of nothing but front matter, a JSONL file without a JSON line, a
        table or dataset split without rows or without id/text columns, a bad JSONL line or table row, a repeated
        ``doc_id``, a file or folder that is not read), in input order.

    Raises:
        ValueError: if an input path does not exist (at the first ``next()``, before any document is read).
    """
    fields = fields or DEFAULT_FIELDS
    paths = [Path(p) for p in inputs]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise ValueError(missing_inputs_message(missing))
    seen: dict[str, tuple[str, int, bool]] = {}  # doc id -> (where, input index, id is a path) of its first
    listed = list(_input_files(paths))  # every input's files first: which of two same files is read needs both
    for k, ((p, _), items) in enumerate(zip(listed, _mark_same_files(listed, len(paths) > 1))):
        for f, rel, reason in items:
            suffix = f.suffix.lower()
            path_id = not reason and not f.is_dir() and suffix not in TABLE_SUFFIXES  # a file's id: its path
            shown = _utf8_name(rel)
            if shown != rel:  # bytes that are not UTF-8 in its path (os.fsdecode's surrogates): no id can hold it
                yield Skipped(shown, "its path is not valid UTF-8 (the bytes shown as \\x escapes): rename it to "
                              "embed it", shown)
                continue
            if reason:
                stream: Iterator[Document | Skipped] = iter([Skipped(rel, reason, rel)])
            elif f.is_dir():  # a Hugging Face dataset folder (only those come without a reason)
                stream = _iter_hf_dataset(f, rel, fields)
            elif suffix == ".arrow":
                stream = _iter_arrow_rows([f], rel, "arrow file", fields)
            elif suffix == ".jsonl":
                stream = _iter_jsonl(f, rel, fields)
            elif suffix == ".parquet":
                stream = _iter_parquet(f, rel, fields)
            else:
                text, reason = read_text_file(f, html=suffix in HTML_SUFFIXES, encoding_errors=fields.encoding_errors)
                stream = iter([_text_document(rel, text, suffix, fields, degraded=reason) if text is not None
                               else Skipped(rel, reason, rel)])
            for item in stream:
                if isinstance(item, Document):
                    src = str(item.metadata.get("source", rel))
                    where = f"{src} (input {str(p)!r})" if len(paths) > 1 else src
                    if item.doc_id in seen:
                        first, first_k, first_path_id = seen[item.doc_id]
                        yield Skipped(item.doc_id, f"duplicate doc_id: {where} repeats the id first seen in {first}"
                                      + _duplicate_hint(paths, first_k, k, first_path_id or path_id), src)
                        continue
                    seen[item.doc_id] = (where, k, path_id)
                yield item


def _mark_same_files(listed: list[tuple[Path, list[tuple[Path, str, str]]]], several: bool
                     ) -> list[list[tuple[Path, str, str]]]:
    """Each input's items (``listed``: :func:`_input_files`, all inputs) with every file that is the same file as
    another one read (a symlink or hard link to it, or one file reached through two inputs) given the reason
    ``same file as WHERE (read once, under that id)``, so it is embedded once.

    The one read is the real file, whatever the input order: a path that is not a symlink before one that is, a
    path without a symlinked folder in it before one through such a folder, a path whose name is valid UTF-8
    before one that is not read for its name; among equals the first in reading order. A later path to it under
    the same id is left to the duplicate-id check (which names an input given twice).

    Args:
        listed: ``[(input, [(file, doc id root, reason), ...]), ...]`` in reading order.
        several: Whether there are several inputs (the reason then names the input of the file read).

    Returns:
        The items of each input, in order, with those reasons set.
    """
    ident: dict[tuple[int, int], tuple[int, int]] = {}  # (input, item) -> (device, inode), in reading order
    for k, (_p, items) in enumerate(listed):
        for i, (f, _rel, reason) in enumerate(items):
            if not reason and f.suffix.lower() not in TABLE_SUFFIXES:  # a file read as one document
                with contextlib.suppress(OSError):
                    st = f.stat()
                    if stat.S_ISREG(st.st_mode):
                        ident[(k, i)] = (st.st_dev, st.st_ino)
    out = [list(items) for _p, items in listed]
    paths_of: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for pos, key in ident.items():
        paths_of.setdefault(key, []).append(pos)
    for positions in paths_of.values():
        if len(positions) < 2:
            continue
        keep = min(positions, key=lambda pos: (_path_rank(*listed[pos[0]][1][pos[1]][:2]), pos))
        kept_rel = listed[keep[0]][1][keep[1]][1]
        where = kept_rel + (f" (input {str(listed[keep[0]][0])!r})" if several else "")
        for pos in positions:
            f, rel, _ = listed[pos[0]][1][pos[1]]
            if pos == keep or (rel == kept_rel and pos > keep):  # the same id again: the duplicate-id check says it
                continue
            out[pos[0]][pos[1]] = (f, rel, f"same file as {where} (read once, under that id)")
    return out


def _path_rank(f: Path, rel: str) -> int:
    """How far ``f`` is from the real path of its file (0: none of it a symlink; 1: through a symlinked folder; 2: a
    symlink itself; 3: not read, its name not valid UTF-8): of two paths to one file the lower is read."""
    if _utf8_name(rel) != rel:
        return 3
    if os.path.islink(f):
        return 2
    return 0 if os.path.realpath(f) == os.path.abspath(f) else 1


def missing_inputs_message(missing: Sequence[str]) -> str:
    """``input path(s) not found: ...``, with a hint for the README's ``../shared/data/...`` paths given from a
    checkout that does not sit beside ``shared/`` (:func:`_data_hint`)."""
    def shown(m) -> str:
        if not os.path.islink(m):
            return str(m)
        try:  # a symlink that exists but leads nowhere: say so, as a folder's walk does
            Path(m).resolve(strict=True)
        except RuntimeError:
            return f"{m} (a symlink loop)"
        except OSError:
            return f"{m} (a broken symlink to {os.readlink(m)})"
        return str(m)

    return f"input path(s) not found: {', '.join(map(shown, missing))}{_data_hint(missing)}"


def _data_hint(missing: Sequence[str]) -> str:
    """Where ``$LATECHUNK_DATA`` points, the same path under it (else a placeholder)."""
    marker = "shared/data/"
    for m in missing:
        m = m.replace(os.sep, "/")
        if marker in m:
            tail = m.split(marker, 1)[1]
            env = os.environ.get("LATECHUNK_DATA")
            where = f"{env.rstrip('/')}/{tail}" if env else f"DATA/{tail}, DATA being the project's data folder"
            return (f" (the README's ../shared/data paths hold from a checkout beside shared/; from elsewhere give "
                    f"the data folder's path: {where})")
    return ""


def require_documents(inputs: Sequence[str | os.PathLike], show: int = 3, fields: RecordFields | None = None
                      ) -> None:
    """Check that every folder input yields at least one document, and the inputs together at least one, reading
    each only up to its first document.

    A file named as an input that yields nothing (an empty ``.md`` among ``docs/*.md``) does not stop the run when
    another input has a document: it is listed as skipped with its reason, as it would be inside a folder (a
    trial's ``embed docs/*.md`` failed on one empty file). A folder that yields nothing (an empty folder, a folder
    of PDFs) is most likely the wrong folder, and fails. A folder of supported files costs its listing and one
    file; an input that yields nothing is read whole (its items are all skipped, so it was cheap to read).
    Duplicates across inputs are not considered (each input is read alone).

    Args:
        inputs: Input paths as given to :func:`iter_inputs`.
        show: Skipped items quoted per input in the message.
        fields: The record fields (:class:`RecordFields`); None: the defaults.

    Raises:
        ValueError: naming every input that yields no document, with why (an empty folder, or its first
            ``show`` skipped items with their reasons and how many there are), when one of them is a folder or
            no input yields a document; or a missing input path.
    """
    problems, folders, any_document = [], 0, False
    for p in inputs:
        skipped: list[Skipped] = []
        n = 0
        for n, item in enumerate(iter_inputs([p], fields), 1):  # n: items read, used after the loop
            if isinstance(item, Document):
                any_document = True
                break
            if len(skipped) < show:
                skipped.append(item)
        else:
            folders += Path(p).is_dir()
            if n == 0:
                why = ("no rows" if hf_dataset_kind(Path(p)) else "an empty folder") if Path(p).is_dir() else "nothing in it"
            else:
                why = f"{n} item(s), all skipped: " + "; ".join(f"{s.doc_id}: {s.reason}" for s in skipped)
                why += "; ..." if n > len(skipped) else ""
            problems.append(f"{_utf8_name(os.fspath(p))} ({why})")
    if problems and (folders or not any_document):
        raise ValueError(f"input{'s' if len(problems) > 1 else ''} yielding no document: "
                         + "; ".join(problems))


@contextlib.contextmanager
def quiet_c_stdout() -> Iterator[None]:
    """Send file descriptor 1 to /dev/null for the duration.

    faiss ``printf``s to the C stdout when it builds or opens on-disk inverted lists ("resizing ...", the
    ``.ivfdata`` it looks up), which would mix into a command's output (``search --json``). Used by
    :mod:`latechunk.index` (building) and :mod:`latechunk.output` (reading). Without a file descriptor 1 (a
    daemon) there is nothing to silence.
    """
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
