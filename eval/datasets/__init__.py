"""Evaluation datasets: one corpus, one query set, answer spans in characters, optional document qrels.

Every loader returns an :class:`EvalDataset`. Units: a span is ``(doc_id, char_start, char_end)``, half-open
character offsets (Python ``str`` indices, Unicode code points) into ``Document.text``; every loader checks
``text[char_start:char_end]`` against the annotated answer text and raises ``ValueError`` on a mismatch.

Formats read (tests: ``tests/test_eval_datasets.py``):

- **Chroma** (Smith & Troynikov, "Evaluating Chunking Strategies for Retrieval", Chroma 2024,
  https://research.trychroma.com/evaluating-chunking): ``corpora/*.md`` (one document per file) and
  ``questions_df.csv`` with a JSON ``references`` column. :func:`load_chroma`.
- **SQuAD / XQuAD** JSON (Rajpurkar et al. 2016; Artetxe et al. 2019): one document per
  article. :func:`load_squad`.
- **BEIR** (Thakur et al. 2021): ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``; document-level
  relevance only, no spans. :func:`load_beir`.

Encodings, as ``embed`` reads a file (:func:`latechunk.io.read_text_file`): every file is UTF-8 unless it starts
with a byte-order mark (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE), which selects that encoding and is not part of the
text; there is no newline translation. A corpus document's offsets therefore count from the character after its
BOM, as the offsets of ``embed``'s chunks do. A file that does not decode is a ``ValueError`` naming the file and
the byte (and, for UTF-8, the line).

Nothing is dropped silently: a record a loader cannot use (a blank question, a question without an answer, a
query without a relevant document, a repeated row) is left out and counted in :attr:`EvalDataset.notes`, one line
per reason with where the first ones are (``file:line``); a malformed record (a missing field, a duplicate id) is
a ``ValueError`` naming ``file:line``.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from latechunk.io import invalid_bytes, legacy_hint, offsets_text, sniff_bom
from latechunk.types import Document

__all__ = [
    "DATA_ENV_VAR",
    "EvalDataset",
    "Query",
    "SpanRef",
    "data_root",
    "dataset_path",
    "load_beir",
    "load_chroma",
    "load_dataset",
    "load_squad",
]

SpanRef = tuple[str, int, int]
"""``(doc_id, char_start, char_end)``: a half-open character range of one document."""

DATA_ENV_VAR = "LATECHUNK_DATA"
"""Environment variable naming the folder that holds ``chroma_chunking_eval/`` and ``xquad_en/``."""

_NAMED = {
    "chroma": ("chroma_chunking_eval", "chroma"),
    "xquad": ("xquad_en/xquad.en.json", "squad"),
}


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Query:
    """One query and its answer spans.

    Attributes:
        query_id: Stable identifier (ir_measures' ``query_id``).
        text: The query text.
        spans: Answer spans ``(doc_id, char_start, char_end)``, half-open, in characters of the source
            document. Empty for document-level datasets (BEIR).

    Raises:
        TypeError: if ``query_id`` or ``text`` is not a ``str``.
        ValueError: if ``query_id`` is empty or a span is not ``(str, int, int)`` with ``0 <= start < end``.
    """

    query_id: str
    text: str
    spans: tuple[SpanRef, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.query_id, str) or not isinstance(self.text, str):
            raise TypeError(
                f"Query: query_id and text must be str, got {type(self.query_id).__name__} and "
                f"{type(self.text).__name__}"
            )
        if not self.query_id:
            raise ValueError("Query.query_id must be a non-empty string")
        spans = []
        for span in self.spans:
            if len(span) != 3:
                raise ValueError(
                    f"Query {self.query_id!r}: a span must be (doc_id, char_start, char_end), got {span!r}"
                )
            doc_id, start, end = span
            if not isinstance(doc_id, str) or not _is_int(start) or not _is_int(end):
                raise TypeError(f"Query {self.query_id!r}: a span must be (str, int, int), got {span!r}")
            start_i, end_i = int(start), int(end)
            if not 0 <= start_i < end_i:
                raise ValueError(
                    f"Query {self.query_id!r}: span needs integer 0 <= char_start < char_end, got {span!r}"
                )
            spans.append((doc_id, start_i, end_i))
        object.__setattr__(self, "spans", tuple(spans))


@dataclass(frozen=True, eq=False)
class EvalDataset:
    """A corpus, its queries, and (for BEIR-style data) document qrels.

    Attributes:
        name: Dataset name (``"chroma"``, ``"xquad"``, or the folder/file stem).
        documents: The corpus, in a stable order; ``doc_id`` values are unique.
        queries: The queries, in a stable order; ``query_id`` values are unique.
        qrels: ``{query_id: {doc_id: relevance}}`` (ir_measures/ranx dict-of-dict), or ``None`` where
            relevance is given by answer spans only. :meth:`doc_qrels` derives document qrels from spans.
        notes: What the loader left out of the file and why, one line each (``compare`` prints them and its
            report.md lists them), e.g. SQuAD v2.0's unanswerable questions, or a BEIR qrels' relevant documents
            missing from its corpus; ``()`` when nothing was.

    Raises:
        ValueError: on duplicate ids, a span naming an unknown document or exceeding its text, or qrels naming
            an unknown query.
    """

    name: str
    documents: tuple[Document, ...]
    queries: tuple[Query, ...]
    qrels: dict[str, dict[str, int]] | None = None
    notes: tuple[str, ...] = ()
    _doc_index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        docs = tuple(self.documents)
        queries = tuple(self.queries)
        index: dict[str, int] = {}
        for i, doc in enumerate(docs):
            if not isinstance(doc, Document):
                raise TypeError(
                    f"EvalDataset {self.name!r}: documents must be Document, got {type(doc).__name__}"
                )
            if doc.doc_id in index:
                raise ValueError(f"EvalDataset {self.name!r}: duplicate doc_id {doc.doc_id!r}")
            index[doc.doc_id] = i
        seen: set[str] = set()
        for q in queries:
            if not isinstance(q, Query):
                raise TypeError(f"EvalDataset {self.name!r}: queries must be Query, got {type(q).__name__}")
            if q.query_id in seen:
                raise ValueError(f"EvalDataset {self.name!r}: duplicate query_id {q.query_id!r}")
            seen.add(q.query_id)
            for doc_id, start, end in q.spans:
                if doc_id not in index:
                    raise ValueError(
                        f"EvalDataset {self.name!r}: query {q.query_id!r} has a span in unknown document "
                        f"{doc_id!r}"
                    )
                n = len(docs[index[doc_id]].text)
                if end > n:
                    raise ValueError(
                        f"EvalDataset {self.name!r}: query {q.query_id!r} span [{start}, {end}) exceeds "
                        f"document {doc_id!r} of {n} chars"
                    )
        qrels = None
        if self.qrels is not None:
            qrels = {str(qid): {str(d): int(r) for d, r in rels.items()} for qid, rels in self.qrels.items()}
            unknown = sorted(set(qrels) - seen)
            if unknown:
                raise ValueError(
                    f"EvalDataset {self.name!r}: qrels name {len(unknown)} unknown queries, "
                    f"e.g. {unknown[:3]}"
                )
        object.__setattr__(self, "documents", docs)
        object.__setattr__(self, "queries", queries)
        object.__setattr__(self, "qrels", qrels)
        object.__setattr__(self, "notes", tuple(str(n) for n in self.notes))
        object.__setattr__(self, "_doc_index", index)

    def document(self, doc_id: str) -> Document:
        """The document with this id.

        Args:
            doc_id: A document id of this dataset.

        Returns:
            The :class:`~latechunk.types.Document`.

        Raises:
            KeyError: if there is none.
        """
        return self.documents[self._doc_index[doc_id]]

    def span_text(self, span: SpanRef) -> str:
        """``text[char_start:char_end]`` of the span's document.

        Args:
            span: ``(doc_id, char_start, char_end)``, half-open character offsets.

        Returns:
            The span's text.

        Raises:
            KeyError: if the span names an unknown document.
        """
        doc_id, start, end = span
        return self.document(doc_id).text[start:end]

    def spans_by_query(self) -> dict[str, tuple[SpanRef, ...]]:
        """The answer spans of every query.

        Returns:
            ``{query_id: spans}`` in query order (a new dict on each call); spans are ``(doc_id, char_start,
            char_end)`` tuples, possibly empty.
        """
        return {q.query_id: q.spans for q in self.queries}

    def doc_qrels(self) -> dict[str, dict[str, int]]:
        """Document-level qrels: :attr:`qrels` when given, else derived from spans.

        Derived rule: a document is relevant (relevance 1) to a query when it holds at least one of the
        query's answer spans; queries without spans get no entry.

        Returns:
            ``{query_id: {doc_id: relevance}}``, a new dict (:attr:`qrels` is never shared).
        """
        if self.qrels is not None:
            return {qid: dict(rels) for qid, rels in self.qrels.items()}
        return {q.query_id: {doc_id: 1 for doc_id, _, _ in q.spans} for q in self.queries if q.spans}


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
    documents, ignored = [], []
    for path in sorted(corpora_dir.iterdir()):
        if not path.is_file() or path.suffix.lower() not in CHROMA_CORPUS_SUFFIXES:
            ignored.append(path.name)
            continue
        if any(d.doc_id == path.stem for d in documents):
            raise ValueError(f"load_chroma: {corpora_dir} has two files named {path.stem!r} (a corpus id is the file "
                             "name without its suffix); rename one")
        documents.append(Document(path.stem, _read_text(path, "load_chroma"), {"source": path.name}))
    texts = {d.doc_id: d.text for d in documents}
    queries = []
    reader = csv.reader(io.StringIO(_read_text(questions_csv, "load_chroma"), newline=""))
    try:
        header = next(reader, None) or []
    except csv.Error as err:
        raise ValueError(f"load_chroma: {questions_csv}:1: {err}") from err
    missing = {"question", "references", "corpus_id"} - set(header)
    if missing:
        raise ValueError(f"load_chroma: {questions_csv}:1 lacks columns {sorted(missing)} (its header: {header!r}; "
                         "the file must be comma-separated)")
    col = {h: header.index(h) for h in ("question", "references", "corpus_id")}
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
        try:
            references = json.loads(cell)
        except json.JSONDecodeError as err:
            raise ValueError(f"load_chroma: {loc}: query {query_id!r} has references that are not JSON ({err.msg} "
                             f"at column {err.pos + 1} of the cell)") from err
        if not isinstance(references, list):
            raise ValueError(f"load_chroma: {loc}: query {query_id!r}: references must be a JSON list of "  # noqa: TRY004
                             f"{{content, start_index, end_index}} objects, got {type(references).__name__}")
        if not references:
            left_out["no references (an empty list: nothing to score)"].append(short)
            continue
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
            _check_slice("load_chroma", loc, query_id, question, corpus_id, texts[corpus_id], start, end,
                         ref["content"])
            spans.append((corpus_id, start, end))
        key = (question, corpus_id, tuple(spans))
        if key in seen:
            left_out["repeats an earlier row's question, corpus and references"].append(f"line {line} = line {seen[key]}")
            continue
        seen[key] = line
        queries.append(Query(query_id, question, tuple(spans)))
    notes = _left_out_notes(row_number + 1, "questions", left_out)
    return EvalDataset(name, tuple(documents), tuple(queries), None, notes)


def load_squad(
    path: str | os.PathLike,
    *,
    answers: Literal["first", "all"] = "first",
    skip_unanswerable: bool = False,
    name: str | None = None,
) -> EvalDataset:
    r"""Load SQuAD v1.1/v2.0 or XQuAD JSON with one document per article.

    An article's document is its paragraphs' ``context`` strings joined in file order with ``"\n\n"``;
    ``doc_id`` is the article ``title``. An answer ``answer_start`` (a char offset into its paragraph) is
    shifted by ``sum(len(previous contexts) + 2)``, so span = ``(title, shift + answer_start,
    shift + answer_start + len(text))``. ``query_id`` is the question ``id``. The file is read as ``embed`` reads
    one (UTF-8 or the encoding of its byte-order mark, see the module doc). A question whose text is blank is left
    out and counted in the dataset's ``notes``.

    Args:
        path: The JSON file.
        answers: ``"first"`` keeps the first listed answer (XQuAD and SQuAD train have exactly one; SQuAD dev
            lists up to three annotators' answers, and the others are not used); ``"all"`` keeps every distinct
            answer span (they are alternatives, so span metrics that need every span would be stricter than the
            task).
        skip_unanswerable: SQuAD v2.0 questions without answers raise unless this is True, in which case they
            are left out and counted in the dataset's ``notes`` (:func:`load_dataset`, and so ``compare`` and
            ``train``, leave them out: a span metric needs an answer).
        name: Dataset name; defaults to the file stem.

    Returns:
        The :class:`EvalDataset`, without document qrels (derived from the spans).

    Raises:
        ValueError: on a file that does not decode or is not SQuAD JSON (a missing field is named with its
            article and question), a duplicate title or question id, a question without answers (unless
            skipped) or an answer whose slice does not match its text.
    """
    if answers not in ("first", "all"):
        raise ValueError(f"load_squad: answers must be 'first' or 'all', got {answers!r}")
    path = Path(path)
    try:
        payload = json.loads(_read_text(path, "load_squad"))
    except json.JSONDecodeError as err:
        raise ValueError(f"load_squad: {path}:{err.lineno}:{err.colno}: not JSON ({err.msg})") from err
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
        # a malformed file, not a wrong argument type: ValueError, like every other format error here
        raise ValueError(f"load_squad: {path} is not SQuAD JSON (expected an object with a 'data' list)")  # noqa: TRY004
    documents = []
    queries = []
    unanswerable = 0
    blank: list[str] = []
    seen_ids: set[str] = set()
    for n_article, article in enumerate(payload["data"]):
        where = f"article {n_article}"
        try:
            title = article["title"]
            where = f"article {n_article} ({title!r})"
            if any(d.doc_id == title for d in documents):
                raise ValueError(
                    f"load_squad: duplicate article title {title!r} in {path}; titles are the doc_ids"
                )
            parts = []
            paragraph_spans = []
            shifted = []  # (query_id, question, char_start, char_end, answer text) in article coordinates
            shift = 0
            for paragraph in article["paragraphs"]:
                context = paragraph["context"]
                parts.append(context)
                paragraph_spans.append([shift, shift + len(context)])
                for qa in paragraph["qas"]:
                    qid = qa["id"]
                    where = f"article {n_article} ({title!r}), question {qid!r}"
                    if qid in seen_ids:
                        raise ValueError(f"load_squad: {path}: {where}: duplicate query_id {qid!r}")
                    seen_ids.add(qid)
                    question = qa["question"]
                    if not isinstance(question, str) or not question.strip():
                        blank.append(repr(qid))
                        continue
                    answer_list = [] if qa.get("is_impossible") else qa.get("answers", [])
                    if not answer_list:
                        if skip_unanswerable:
                            unanswerable += 1
                            continue
                        raise ValueError(
                            f"load_squad: question {qid!r} ({question[:80]!r}) has no answer; pass "
                            "skip_unanswerable=True to leave such questions out"
                        )
                    if answers == "first":
                        answer_list = answer_list[:1]
                    spans = []
                    for answer in answer_list:
                        start = int(answer["answer_start"])
                        end = start + len(answer["text"])
                        _check_slice("load_squad", str(path), qid, question, title, context, start, end,
                                     answer["text"])
                        span = (title, shift + start, shift + end)
                        shifted.append((qid, question, shift + start, shift + end, answer["text"]))
                        if span not in spans:
                            spans.append(span)
                    queries.append(Query(qid, question, tuple(spans)))
                shift += len(context) + 2
        except (KeyError, TypeError) as err:
            raise ValueError(f"load_squad: {path}: {where}: not SQuAD JSON ({type(err).__name__}: {err}; an "
                             "article has title and paragraphs, a paragraph context and qas, a question id, "
                             "question and answers)") from err
        text = "\n\n".join(parts)
        for query_id, question, start, end, expected in shifted:  # guards the shift arithmetic
            _check_slice("load_squad", str(path), query_id, question, title, text, start, end, expected)
        documents.append(Document(title, text, {"title": title, "paragraph_char_spans": paragraph_spans}))
    total = unanswerable + len(queries) + len(blank)
    notes = ((f"{unanswerable} of {total} questions left out: no answer (SQuAD v2.0 "
             "unanswerable; a span metric needs one)"),) if unanswerable else ()
    notes += _left_out_notes(total, "questions", {"blank question": blank})
    return EvalDataset(name or path.stem, tuple(documents), tuple(queries), None, notes)


def _read_jsonl(path: Path, loader: str = "load_beir") -> list[tuple[int, dict]]:
    """The JSON objects of a JSONL file with their 1-based line numbers (blank lines skipped)."""
    rows = []
    for line_number, line in enumerate(_read_text(path, loader).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{loader}: {path}:{line_number}: not a JSON line ({err.msg} at column "
                             f"{err.pos + 1})") from err
        if not isinstance(obj, dict):
            raise ValueError(f"{loader}: {path}:{line_number}: not a JSON object (a {type(obj).__name__})")  # noqa: TRY004
        rows.append((line_number, obj))
    return rows


#: The id fields of a BEIR record, the first present wins: BEIR's ``_id``, then the ``id`` / ``doc_id`` that
#: ``embed`` also reads.
BEIR_ID_FIELDS = ("_id", "id", "doc_id")


def _beir_id(path: Path, line: int, row: dict) -> str:
    key = next((k for k in BEIR_ID_FIELDS if k in row), None)
    if key is None:
        raise ValueError(f"load_beir: {path}:{line}: no id field ({' / '.join(BEIR_ID_FIELDS)}); its keys: "
                         f"{', '.join(map(repr, row)) or 'none'}")
    value = row[key]
    if not (isinstance(value, str) and value.strip()) and not _is_int(value):
        raise ValueError(f"load_beir: {path}:{line}: {key} must be a non-blank string or an integer, got {value!r}")
    return str(value)


def _first_time(seen: dict[str, int], key: str, path: Path, line: int, what: str) -> None:
    """Record that ``key`` (a BEIR document or query id) is at ``path:line``; a second time is an error naming
    both lines (a later duplicate silently replaced the first)."""
    if key in seen:
        raise ValueError(f"load_beir: {path}:{line}: duplicate {what} id {key!r} (first at line {seen[key]})")
    seen[key] = line


def load_beir(root: str | os.PathLike, split: str = "test", *, name: str | None = None) -> EvalDataset:
    r"""Load a BEIR-format dataset (Thakur et al., "BEIR", NeurIPS 2021 Datasets and Benchmarks).

    - ``corpus.jsonl``: ``{"_id", "title", "text"}`` (the id may also be ``id`` or ``doc_id``,
      :data:`BEIR_ID_FIELDS`). Document text is ``title + "\n\n" + text`` when the title is non-empty, else
      ``text``. This follows BEIR's own dense models, which encode title and body together
      (``title + " " + text``); a paragraph break is used instead of a space so that heading and paragraph
      chunkers see the title as its own block. The title is also kept in ``metadata["title"]``.
    - ``queries.jsonl``: ``{"_id", "text"}``. Only queries that appear in the chosen qrels file are kept, as
      BEIR's ``GenericDataLoader`` does.
    - ``qrels/<split>.tsv`` (or, if that file is absent, the first ``qrels/*.tsv`` in sorted order): a header
      row then ``query-id<TAB>corpus-id<TAB>score``, tab-separated. Rows with score 0 are kept (judged
      non-relevant).

    Files are read as ``embed`` reads them (UTF-8 or the encoding of a byte-order mark, see the module doc).
    Left out, and counted in :attr:`EvalDataset.notes`: a query of the qrels missing from ``queries.jsonl``,
    one whose line there has no ``text`` or a blank one, and one whose judgments are all score <= 0: no
    document is relevant, so every system scores 0 on it and it only scales the means down (MTEB drops such
    queries too, embeddings-benchmark/mteb#3058).

    Queries have no spans; relevance is document-level (:attr:`EvalDataset.qrels`).

    Args:
        root: The dataset folder.
        split: The qrels file to read, ``qrels/<split>.tsv``.
        name: Dataset name; defaults to the folder name.

    Returns:
        The :class:`EvalDataset` with ``qrels``.

    Raises:
        FileNotFoundError: if a file is missing.
        ValueError: naming ``file:line``: a line that is not a JSON object, a record without an id, a duplicate
            document or query id, a malformed qrels row (or one judging a pair again with another score);
            also qrels none of whose queries is in ``queries.jsonl``, or no query left to evaluate.
    """
    root = Path(root)
    qrels_path = root / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        candidates = sorted((root / "qrels").glob("*.tsv"))
        if not candidates:
            raise FileNotFoundError(f"load_beir: no qrels/{split}.tsv nor any qrels/*.tsv under {root}")
        qrels_path = candidates[0]
    corpus_path, queries_path = root / "corpus.jsonl", root / "queries.jsonl"
    for needed in (corpus_path, queries_path):
        if not needed.is_file():
            raise FileNotFoundError(f"load_beir: missing {needed}")
    documents = []
    doc_lines: dict[str, int] = {}
    for line, row in _read_jsonl(corpus_path):
        doc_id = _beir_id(corpus_path, line, row)
        _first_time(doc_lines, doc_id, corpus_path, line, "document")
        title = row.get("title") or ""
        body = row.get("text") or ""
        if not isinstance(title, str) or not isinstance(body, str):
            raise ValueError(f"load_beir: {corpus_path}:{line}: title and text must be strings")  # noqa: TRY004
        text = f"{title}\n\n{body}" if title else body
        documents.append(Document(doc_id, text, {"title": title}))
    qrels: dict[str, dict[str, int]] = {}
    qrel_lines: dict[tuple[str, str], int] = {}
    reader = csv.reader(io.StringIO(_read_text(qrels_path, "load_beir"), newline=""), delimiter="\t")
    tab = "; the file must be tab-separated (query-id<TAB>corpus-id<TAB>score)"
    header = next(reader, None)
    if header is None or [h.strip() for h in header[:3]] != ["query-id", "corpus-id", "score"]:
        raise ValueError(
            f"load_beir: {qrels_path}:1 must start with the header 'query-id corpus-id score', "
            f"got {header!r}" + (tab if header and len(header) < 3 else "")
        )
    for line_number, fields in enumerate(reader, start=2):
        if not fields:
            continue
        if len(fields) < 3:
            raise ValueError(f"load_beir: {qrels_path}:{line_number}: expected 3 columns, got {fields!r}" + tab)
        try:
            score = int(fields[2])
        except ValueError as err:
            raise ValueError(
                f"load_beir: {qrels_path}:{line_number}: score {fields[2]!r} is not an integer"
            ) from err
        rels = qrels.setdefault(fields[0], {})
        pair = (fields[0], fields[1])
        if pair in qrel_lines and rels[fields[1]] != score:
            raise ValueError(f"load_beir: {qrels_path}:{line_number}: query {fields[0]!r} and document "
                             f"{fields[1]!r} are judged {score} here and {rels[fields[1]]} at line "
                             f"{qrel_lines[pair]}: which is meant is unknown")
        qrel_lines.setdefault(pair, line_number)
        rels[fields[1]] = score
    texts: dict[str, str | None] = {}  # None: no usable text (left out below, if the qrels name it)
    query_lines: dict[str, int] = {}
    why: dict[str, str] = {}
    for line, row in _read_jsonl(queries_path):
        qid = _beir_id(queries_path, line, row)
        _first_time(query_lines, qid, queries_path, line, "query")
        text = row.get("text")
        texts[qid] = text if isinstance(text, str) and text.strip() else None
        if texts[qid] is None:
            why[qid] = ("no 'text' field" if "text" not in row else
                        "a blank 'text'" if isinstance(text, str) else f"a 'text' that is a {type(text).__name__}")
    missing = [qid for qid in qrels if qid not in texts]
    notes: tuple[str, ...] = ()
    if missing and len(missing) == len(qrels):
        raise ValueError(f"load_beir: none of the {len(qrels)} queries of {qrels_path.name} is in queries.jsonl "
                         f"(e.g. {missing[:3]}): is it the qrels of another dataset?")
    n_qrels = len(qrels)
    if missing:  # a queries.jsonl given in part (as a corpus may be): evaluate the others, and say so
        notes += ((f"{len(missing)} of the {n_qrels} queries in {qrels_path.name} are not in queries.jsonl (e.g. "
                   f"{', '.join(map(repr, missing[:3]))}) and are left out"),)
    left_out: dict[str, list[str]] = {}
    for qid in qrels:
        if qid in texts and texts[qid] is None:
            left_out.setdefault(f"{why[qid]} in queries.jsonl", []).append(
                f"{qid!r} at queries.jsonl:{query_lines[qid]}")
    left_out["no relevant document (every judgment in the qrels has score 0)"] = [
        repr(qid) for qid, rels in qrels.items() if texts.get(qid) and not any(r > 0 for r in rels.values())]
    notes += _left_out_notes(n_qrels, f"queries of {qrels_path.name}", left_out)
    qrels = {qid: rels for qid, rels in qrels.items() if texts.get(qid) and any(r > 0 for r in rels.values())}
    if not qrels:
        raise ValueError(f"load_beir: no query of {qrels_path} is left to evaluate: " + "; ".join(notes))
    queries = tuple(Query(qid, texts[qid]) for qid in qrels)
    known = {d.doc_id for d in documents}
    unknown = sorted({d for rels in qrels.values() for d, r in rels.items() if r > 0 and d not in known})
    if unknown:  # a corpus given in part: those documents can never be retrieved, so recall cannot reach 1
        n_q = sum(1 for rels in qrels.values() if any(r > 0 and d not in known for d, r in rels.items()))
        notes += ((f"{len(unknown)} relevant document(s) in the qrels are not in corpus.jsonl (e.g. "
                  f"{', '.join(map(repr, unknown[:3]))}), for {n_q} of {len(qrels)} queries: no system can retrieve "
                  "them, so recall stays below 1"),)
    return EvalDataset(name or root.resolve().name, tuple(documents), queries, qrels, notes)


def data_root() -> Path:
    """The shared data folder: ``$LATECHUNK_DATA`` if set, else ``<repo root>/../shared/data``.

    The repo root is the parent of this file's ``eval/`` folder, so the default does not depend on the
    working directory.

    Returns:
        The folder (not checked to exist).
    """
    env = os.environ.get(DATA_ENV_VAR)
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


def dataset_path(spec: str | os.PathLike) -> Path:
    """The file or folder a dataset spec names: a known name under :func:`data_root`, else the path as given.

    Args:
        spec: ``"chroma"``, ``"xquad"`` or a path.

    Returns:
        The path (not checked to exist).
    """
    text = os.fspath(spec)
    return data_root() / _NAMED[text][0] if text in _NAMED else Path(text)


def load_dataset(spec: str | os.PathLike) -> EvalDataset:
    """Load a dataset by name (``"chroma"``, ``"xquad"``) or by path.

    Names resolve under :func:`data_root`. A path dispatches on what it holds: a folder with
    ``questions_df.csv`` is Chroma's format (named after the folder), a folder with ``corpus.jsonl`` is BEIR, a
    ``.json`` file is SQuAD/XQuAD (named after the file), and so is a folder holding exactly one ``.json`` file
    (named after the folder). SQuAD v2.0's unanswerable questions are left out (a span metric needs an answer)
    and counted in the dataset's ``notes``.

    Args:
        spec: ``"chroma"``, ``"xquad"`` or a path.

    Returns:
        The :class:`EvalDataset`.

    Raises:
        ValueError: if ``spec`` is neither a known name nor a recognisable path, or as the loader it picks.
        FileNotFoundError: if a known name resolves to a missing path (see :data:`DATA_ENV_VAR`).
    """
    text = os.fspath(spec)
    if text in _NAMED:
        kind = _NAMED[text][1]
        path = dataset_path(text)
        if not path.exists():
            raise FileNotFoundError(
                f"load_dataset: {text!r} resolves to {path}, which does not exist; set {DATA_ENV_VAR} to the "
                "folder holding chroma_chunking_eval/ and xquad_en/"
            )
        return load_chroma(path, name=text, id_prefix="") if kind == "chroma" else load_squad(path, name=text,
                                                                                skip_unanswerable=True)
    path = Path(text)
    if path.is_dir() and (path / "questions_df.csv").is_file():
        return load_chroma(path)
    if path.is_dir() and (path / "corpus.jsonl").is_file():
        return load_beir(path)
    if path.is_file() and path.suffix.lower() == ".json":
        return load_squad(path, skip_unanswerable=True)
    if path.is_dir():
        jsons = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() == ".json")
        if len(jsons) == 1:  # a folder holding one SQuAD file: named after the folder
            return load_squad(jsons[0], name=path.resolve().name, skip_unanswerable=True)
        if len(jsons) > 1:
            raise ValueError(
                f"load_dataset: {text!r} holds {len(jsons)} .json files ({', '.join(p.name for p in jsons[:5])}"
                f"{', ...' if len(jsons) > 5 else ''}); name the SQuAD file itself"
            )
    raise ValueError(
        f"load_dataset: {text!r} is not a known name ({sorted(_NAMED)}) nor a Chroma folder "
        "(questions_df.csv), a BEIR folder (corpus.jsonl), a SQuAD .json file or a folder holding one"
    )
