"""Chroma's chunking-evaluation format (Smith & Troynikov, "Evaluating Chunking Strategies for Retrieval", Chroma
2024, https://research.trychroma.com/evaluating-chunking): ``corpora/*.md`` (one document per file) and
``questions_df.csv`` with a JSON ``references`` column of answer spans. :func:`load_chroma`.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

from latechunk.types import Document

from .dataset import EvalDataset, Query, SpanRef
from .files import _check_slice, _left_out_notes, _read_text

#: The files of a Chroma-format ``corpora/`` folder that are read: markdown (parsed as markdown, as ``embed`` reads
#: a ``.md`` file) and plain text (cut as written).
CHROMA_CORPUS_SUFFIXES = (".md", ".markdown", ".txt")

_CHROMA_REFERENCE_KEYS = ("content", "start_index", "end_index")


def load_chroma(root: str | os.PathLike, *, name: str | None = None, id_prefix: str | None = None) -> EvalDataset:
    """Load Chroma's general chunking-evaluation set, or any folder in its format.

    ``root/corpora/<corpus_id>.md`` (or ``.markdown``, or ``.txt`` for plain text, :data:`CHROMA_CORPUS_SUFFIXES`)
    is one document each (``doc_id`` = file stem, ``source`` its file name, which tells the strategies whether it
    is markdown), read as ``embed`` reads it (UTF-8 or the encoding of its byte-order mark, the mark not part of
    the text, no newline translation, so no offset moves; see the module doc). ``root/questions_df.csv`` (the same
    encodings) has columns ``question``, ``references`` (a JSON list of ``{content, start_index, end_index}``, end
    exclusive) and ``corpus_id``. ``query_id`` is the 0-based data row number as a string, prefixed with
    ``id_prefix``: by default the dataset's name and a colon (``"mydocs:0"``), so a folder's ids never collide
    with the real set's; :func:`load_dataset` loads the bundled set (``"chroma"``) with ``id_prefix=""``, the ids
    ``"0"`` ... ``"471"`` Chroma's code gives its question collection.

    Left out, and counted in :attr:`EvalDataset.notes` with their CSV lines: a row whose question is blank, a row
    whose ``references`` is an empty list (no answer to score), and a row that repeats an earlier row's question,
    corpus and references (it would be scored twice).

    Args:
        root: The dataset folder (``chroma_chunking_eval/``, or any folder in the format).
        name: Dataset name; defaults to the folder's name.
        id_prefix: Prefix of every ``query_id``; default ``f"{name}:"``.

    Returns:
        The :class:`EvalDataset` named ``name``, without document qrels (derived from the spans).

    Raises:
        FileNotFoundError: if ``corpora/`` or ``questions_df.csv`` is missing.
        ValueError: naming ``questions_df.csv:<line>``, if a row names an unknown corpus (the message lists the
            files not read), has a malformed ``references`` cell (not JSON, not a list, a reference without
            ``content``, ``start_index`` or ``end_index``) or ``text[start_index:end_index] != content``; if two
            corpus files share a stem; if a file does not decode.
    """
    root = Path(root)
    name = name or root.resolve().name
    prefix = f"{name}:" if id_prefix is None else id_prefix
    corpora_dir = root / "corpora"
    questions_csv = root / "questions_df.csv"
    if not corpora_dir.is_dir() or not questions_csv.is_file():
        raise FileNotFoundError(f"load_chroma: expected {corpora_dir}/ and {questions_csv} under {root}")
    documents, ignored = _chroma_documents(corpora_dir)
    texts = {d.doc_id: d.text for d in documents}
    queries = []
    reader = csv.reader(io.StringIO(_read_text(questions_csv, "load_chroma"), newline=""))
    header, col = _chroma_header(reader, questions_csv)
    left_out: dict[str, list[str]] = {"blank question": [], "no references (an empty list: nothing to score)": [],
                                      "repeats an earlier row's question, corpus and references": []}
    seen: dict[tuple, int] = {}
    row_number = -1
    while True:
        line = reader.line_num + 1  # the row's first line (a quoted cell may span several)
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as err:
            raise ValueError(f"load_chroma: {questions_csv}:{line}: {err}") from err
        if not fields:  # a blank line, as csv.DictReader skips it
            continue
        row_number += 1
        query_id = f"{prefix}{row_number}"
        loc, short = f"{questions_csv}:{line}", f"line {line}"
        if len(fields) != len(header):
            raise ValueError(f"load_chroma: {loc}: query {query_id!r} has {len(fields)} fields, the header "
                             f"{len(header)} (an unquoted comma or quote?)")
        question, cell, corpus_id = (fields[col[c]] for c in ("question", "references", "corpus_id"))
        if not question.strip():
            left_out["blank question"].append(short)
            continue
        if corpus_id not in texts:
            raise ValueError(
                f"load_chroma: {loc}: query {query_id!r} names corpus {corpus_id!r}, but {corpora_dir} has only "
                f"{sorted(texts)} (corpora are read from {', '.join(CHROMA_CORPUS_SUFFIXES)} files"
                + (f"; not read: {', '.join(ignored[:5])}" if ignored else "") + ")"
            )
        references = _chroma_references(cell, loc, query_id)
        if not references:
            left_out["no references (an empty list: nothing to score)"].append(short)
            continue
        spans = _chroma_spans(references, loc, query_id, question, corpus_id, texts[corpus_id])
        key = (question, corpus_id, tuple(spans))
        if key in seen:
            left_out["repeats an earlier row's question, corpus and references"].append(f"line {line} = line {seen[key]}")
            continue
        seen[key] = line
        queries.append(Query(query_id, question, tuple(spans)))
    notes = _left_out_notes(row_number + 1, "questions", left_out)
    return EvalDataset(name, tuple(documents), tuple(queries), None, notes)


def _chroma_documents(corpora_dir: Path) -> tuple[list[Document], list[str]]:
    """The corpus documents of ``corpora/`` (one a file of :data:`CHROMA_CORPUS_SUFFIXES`, in sorted order) and
    the names of the entries not read."""
    documents, ignored = [], []
    for path in sorted(corpora_dir.iterdir()):
        if not path.is_file() or path.suffix.lower() not in CHROMA_CORPUS_SUFFIXES:
            ignored.append(path.name)
            continue
        if any(d.doc_id == path.stem for d in documents):
            raise ValueError(f"load_chroma: {corpora_dir} has two files named {path.stem!r} (a corpus id is the file "
                             "name without its suffix); rename one")
        documents.append(Document(path.stem, _read_text(path, "load_chroma"), {"source": path.name}))
    return documents, ignored


def _chroma_header(reader, questions_csv: Path) -> tuple[list[str], dict[str, int]]:
    """The header row of ``questions_df.csv`` and the column of each field that is read."""
    try:
        header = next(reader, None) or []
    except csv.Error as err:
        raise ValueError(f"load_chroma: {questions_csv}:1: {err}") from err
    missing = {"question", "references", "corpus_id"} - set(header)
    if missing:
        raise ValueError(f"load_chroma: {questions_csv}:1 lacks columns {sorted(missing)} (its header: {header!r}; "
                         "the file must be comma-separated)")
    col = {h: header.index(h) for h in ("question", "references", "corpus_id")}
    return header, col


def _chroma_references(cell: str, loc: str, query_id: str) -> list:
    """A row's ``references`` cell: a JSON list (possibly empty) of ``{content, start_index, end_index}``."""
    try:
        references = json.loads(cell)
    except json.JSONDecodeError as err:
        raise ValueError(f"load_chroma: {loc}: query {query_id!r} has references that are not JSON ({err.msg} "
                         f"at column {err.pos + 1} of the cell)") from err
    if not isinstance(references, list):
        raise ValueError(f"load_chroma: {loc}: query {query_id!r}: references must be a JSON list of "  # noqa: TRY004
                         f"{{content, start_index, end_index}} objects, got {type(references).__name__}")
    return references


def _chroma_spans(references: list, loc: str, query_id: str, question: str, corpus_id: str,
                  text: str) -> list[SpanRef]:
    """The answer spans of a row's references, each checked against its slice of the corpus ``text``."""
    spans = []
    for n, ref in enumerate(references):
        absent = [k for k in _CHROMA_REFERENCE_KEYS if k not in ref] if isinstance(ref, dict) else None
        if absent is None or absent:
            raise ValueError(
                f"load_chroma: {loc}: query {query_id!r}: reference {n} "
                + (f"lacks {', '.join(absent)}" if absent else f"is a {type(ref).__name__}")
                + " (each reference is an object {content, start_index, end_index}, end exclusive)")
        try:
            start, end = int(ref["start_index"]), int(ref["end_index"])
        except (TypeError, ValueError) as err:
            raise ValueError(f"load_chroma: {loc}: query {query_id!r}: reference {n} has start_index "
                             f"{ref['start_index']!r}, end_index {ref['end_index']!r}: integers expected") from err
        if not 0 <= start < end:
            raise ValueError(f"load_chroma: {loc}: query {query_id!r}: reference {n} needs 0 <= start_index < "
                             f"end_index, got [{start}, {end})")
        _check_slice("load_chroma", loc, query_id, question, corpus_id, text, start, end, ref["content"])
        spans.append((corpus_id, start, end))
    return spans
