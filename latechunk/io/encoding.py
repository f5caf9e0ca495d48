"""Encodings of input bytes: byte-order marks (:func:`sniff_bom`), the offsets of bytes that are not UTF-8
(:func:`invalid_bytes`, :func:`offsets_text`), and why such bytes are not read: UTF-8 text with a few bad bytes told
from a legacy 8-bit file (:func:`utf8_problem`, :func:`legacy_hint`, :data:`LEGACY_UNDER_REPLACE`)."""

from __future__ import annotations

import codecs
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

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
_REPLACE_ADVICE = "--encoding-errors replace reads it with U+FFFD for each invalid byte"
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
