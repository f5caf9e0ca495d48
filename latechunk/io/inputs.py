"""Reading the inputs as one stream (:func:`iter_inputs`): every input's files listed, each read by its format,
duplicate ids skipped; a missing input (:func:`missing_inputs_message`) and an input yielding no document
(:func:`require_documents`) refused."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from latechunk.io.arrow import _iter_arrow_rows, _iter_hf_dataset, hf_dataset_kind
from latechunk.io.jsonl import _iter_jsonl
from latechunk.io.parquet import _iter_parquet
from latechunk.io.records import DEFAULT_FIELDS
from latechunk.io.same_file import _mark_same_files
from latechunk.io.suffixes import HTML_SUFFIXES, TABLE_SUFFIXES
from latechunk.io.text import _text_document, read_text_file
from latechunk.io.walk import _input_files, _utf8_name
from latechunk.types import Document, RecordFields, Skipped


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
