"""JSONL files (``id``/``text``, optional ``title``; BEIR ``corpus.jsonl``): one record per line that is not blank,
UTF-8 lines split on bytes (a bad line is skipped, the others read), UTF-16/32 after a byte-order mark."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from io import TextIOWrapper
from pathlib import Path
from typing import NamedTuple

from latechunk.io.encoding import (
    _REPLACE_ADVICE,
    LEGACY_UNDER_REPLACE,
    _holds_utf8_multibyte,
    invalid_bytes,
    legacy_hint,
    offsets_text,
    sniff_bom,
)
from latechunk.io.records import _NO_FIELD, DEFAULT_FIELDS, _degraded, _record
from latechunk.types import Document, RecordFields, Skipped


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
