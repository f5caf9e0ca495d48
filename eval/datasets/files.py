"""Reading a dataset file as ``embed`` reads one (UTF-8, or the encoding its byte-order mark names, the mark not part
of the text, no newline translation), checking an annotated answer against its slice of the text, and the
:attr:`~latechunk.eval.datasets.EvalDataset.notes` that count what a loader left out.
"""

from __future__ import annotations

from pathlib import Path

from latechunk.io import invalid_bytes, legacy_hint, offsets_text, sniff_bom


def _check_slice(
    dataset: str, where: str, query_id: str, query: str, doc: str, text: str, start: int, end: int, expected: str
) -> None:
    if text[start:end] != expected:
        raise ValueError(
            f"{dataset}: {where}: query {query_id!r} ({query[:80]!r}) has span [{start}, {end}) in document {doc!r} "
            f"whose text is {text[start:end][:80]!r}, but the annotation says {expected[:80]!r}. The offsets "
            "must be character (code point) offsets into the file's text (after a byte-order mark, if any)."
        )


def _line_of(data: bytes, byte: int) -> int:
    """The 1-based line of ``data`` that holds byte offset ``byte`` (lines end with a newline byte)."""
    return data.count(b"\n", 0, byte) + 1


def _read_text(path: Path, loader: str) -> str:
    """The text of a dataset file, read as ``embed`` reads one (see the module doc).

    UTF-8, or the encoding its byte-order mark names (:func:`latechunk.io.sniff_bom`); the mark is removed; no
    newline translation, so offsets index the text exactly as stored.

    Raises:
        ValueError: naming the file, the byte offset (and, for UTF-8, the line) where it does not decode, or the
            first NUL byte of a UTF-8 file (UTF-16/UTF-32 text without a byte-order mark, or a binary file).
    """
    data = path.read_bytes()
    bom, codec, label = sniff_bom(data)
    if codec == "utf-8" and b"\x00" in data:
        at = data.index(b"\x00")
        raise ValueError(f"{loader}: {path}:{_line_of(data, at)}: NUL byte at byte {at}: not UTF-8 text (UTF-16 or "
                         "UTF-32 text needs a byte-order mark; or save it as UTF-8)")
    try:
        text = data[len(bom):].decode(codec)
    except UnicodeDecodeError as err:
        at = err.start + len(bom)
        where = f"{path}:{_line_of(data, at)}" if codec == "utf-8" else str(path)
        hint = ""
        if codec == "utf-8":
            # as embed tells them apart: a few bad bytes in UTF-8 text are named (converting the file from
            # Windows-1252 would garble its correct characters); only a legacy 8-bit file gets the iconv advice
            offsets, extra = invalid_bytes(data[len(bom):])
            legacy = "" if extra else legacy_hint(data[len(bom):])
            hint = legacy or (f"; {offsets_text(offsets, len(bom))}"
                              + (" in otherwise valid UTF-8 text: mend those bytes (the answer spans index the "
                                 "exact text, so it is not read with replacement characters)" if extra else ""))
        raise ValueError(f"{loader}: {where}: invalid {label} at byte {at} ({err.reason}){hint}") from None
    return text


def _examples(where: list[str], n: int = 3) -> str:
    return ", ".join(where[:n]) + (", ..." if len(where) > n else "")


def _left_out_notes(total: int, what: str, left_out: dict[str, list[str]]) -> tuple[str, ...]:
    """One note per reason: ``"<n> of <total> <what> left out: <reason> (<where>, ...)"``."""
    return tuple(f"{len(where)} of {total} {what} left out: {reason} ({_examples(where)})"
                 for reason, where in left_out.items() if where)
