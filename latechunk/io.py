"""Reading input documents: ``.md``/``.txt`` files, folders of them, ``.jsonl`` (``id``/``text``, optional
``title``) and BEIR ``corpus.jsonl`` (``_id``/``title``/``text``). Streams documents one at a time.

Nothing is lost: every input either becomes a :class:`Document` or a :class:`Skipped` record with its reason
(empty, invalid UTF-8, binary, unreadable, bad JSON line, duplicate id). Duplicate ids policy: the first
occurrence wins; later ones are skipped with a reason naming both sources.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from latechunk.pipeline import Skipped
from latechunk.types import Document

__all__ = ["iter_inputs", "TEXT_SUFFIXES", "read_text_file"]

TEXT_SUFFIXES = (".md", ".markdown", ".txt")


def read_text_file(path: Path) -> tuple[str | None, str]:
    """Read a file as UTF-8 text (no newline translation: offsets index the file as stored).

    Returns:
        ``(text, "")`` or ``(None, reason)`` for an unreadable, binary, non-UTF-8 or empty file.
    """
    try:
        data = path.read_bytes()
    except OSError as err:
        return None, f"unreadable: {err.strerror or err}"
    if b"\x00" in data[:8192]:
        return None, "binary file (NUL bytes)"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        return None, f"invalid UTF-8 at byte {err.start}"
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        return None, "empty or whitespace-only"
    return text, ""


def _iter_jsonl(path: Path, root_name: str) -> Iterator[Document | Skipped]:
    try:
        fh = open(path, "rb")
    except OSError as err:
        yield Skipped(root_name, f"unreadable: {err.strerror or err}", str(path))
        return
    with fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            where = f"{path.name}:{lineno}"
            try:
                obj = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as err:
                yield Skipped(where, f"bad JSON line: {err}", where)
                continue
            if not isinstance(obj, dict):
                yield Skipped(where, "JSON line is not an object", where)
                continue
            doc_id = obj.get("id", obj.get("_id", obj.get("doc_id")))
            text = obj.get("text")
            if doc_id is None or not isinstance(text, str):
                yield Skipped(where, "needs an 'id' (or '_id') and a string 'text'", where)
                continue
            title = obj.get("title") or ""
            full = f"{title}\n\n{text}" if title and isinstance(title, str) else text
            if not full.strip():
                yield Skipped(str(doc_id), "empty or whitespace-only", where)
                continue
            meta = {"source": where}
            if title:
                meta["title"] = title
            yield Document(str(doc_id), full, meta)


def iter_inputs(inputs: Sequence[str | os.PathLike]) -> Iterator[Document | Skipped]:
    """Stream documents from files, folders and JSONL files, in a stable order.

    ``doc_id`` of a file is its path relative to the input folder (a single file: its name); of a JSONL line,
    its ``id``/``_id``. Folders are walked recursively in sorted order, reading ``.md``, ``.markdown``, ``.txt``.

    Yields:
        :class:`Document` or :class:`Skipped`.

    Raises:
        ValueError: if an input path does not exist (checked before any document is read).
    """
    paths = [Path(p) for p in inputs]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise ValueError(f"input path(s) not found: {', '.join(missing)}")
    seen: dict[str, str] = {}
    for p in paths:
        if p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in TEXT_SUFFIXES + (".jsonl",))
            items = [(f, f.relative_to(p).as_posix()) for f in files]
        else:
            items = [(p, p.name)]
        for f, rel in items:
            if f.suffix.lower() == ".jsonl":
                stream: Iterator[Document | Skipped] = _iter_jsonl(f, rel)
            else:
                text, reason = read_text_file(f)
                stream = iter([Document(rel, text, {"source": str(f)}) if text is not None else Skipped(rel, reason, str(f))])
            for item in stream:
                if isinstance(item, Document):
                    src = str(item.metadata.get("source", f))
                    if item.doc_id in seen:
                        yield Skipped(item.doc_id, f"duplicate doc_id: first seen in {seen[item.doc_id]}", src)
                        continue
                    seen[item.doc_id] = src
                yield item
