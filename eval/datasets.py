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
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

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
    dataset: str, query_id: str, query: str, doc: str, text: str, start: int, end: int, expected: str
) -> None:
    if text[start:end] != expected:
        raise ValueError(
            f"{dataset}: query {query_id!r} ({query[:80]!r}) has span [{start}, {end}) in document {doc!r} "
            f"whose text is {text[start:end][:80]!r}, but the annotation says {expected[:80]!r}. The offsets "
            "must be character (code point) offsets into the unmodified file."
        )


#: The files of a Chroma-format ``corpora/`` folder that are read: markdown (parsed as markdown, as ``embed`` reads
#: a ``.md`` file) and plain text (cut as written).
CHROMA_CORPUS_SUFFIXES = (".md", ".markdown", ".txt")


def load_chroma(root: str | os.PathLike, *, name: str | None = None) -> EvalDataset:
    """Load Chroma's general chunking-evaluation set, or any folder in its format.

    ``root/corpora/<corpus_id>.md`` (or ``.markdown``, or ``.txt`` for plain text, :data:`CHROMA_CORPUS_SUFFIXES`)
    is one document each (``doc_id`` = file stem, ``source`` its file name, which tells the strategies whether it
    is markdown), read as UTF-8 with ``newline=""`` so no newline translation moves an offset. ``root/questions_df.csv`` has columns
    ``question``, ``references`` (a JSON list of ``{content, start_index, end_index}``, end exclusive) and
    ``corpus_id``. ``query_id`` is the 0-based data row number as a string (``"0"`` ... ``"471"``), the same
    ids Chroma's code gives its question collection, for the dataset named ``"chroma"``; any other dataset's
    ids are namespaced by its name (``"mydocs:0"``), so they never collide with the real set's.

    Args:
        root: The dataset folder (``chroma_chunking_eval/``, or any folder in the format).
        name: Dataset name; defaults to the folder's name.

    Returns:
        The :class:`EvalDataset` named ``name``, without document qrels (derived from the spans).

    Raises:
        FileNotFoundError: if ``corpora/`` or ``questions_df.csv`` is missing.
        ValueError: if a row names an unknown corpus (the message lists the files not read), two files share a
            stem, or ``text[start_index:end_index] != content``.
    """
    root = Path(root)
    name = name or root.resolve().name
    prefix = "" if name == "chroma" else f"{name}:"
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
        with open(path, encoding="utf-8", newline="") as f:
            documents.append(Document(path.stem, f.read(), {"source": path.name}))
    texts = {d.doc_id: d.text for d in documents}
    queries = []
    with open(questions_csv, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        missing = {"question", "references", "corpus_id"} - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"load_chroma: {questions_csv} lacks columns {sorted(missing)}")
        for row_number, row in enumerate(reader):
            query_id = f"{prefix}{row_number}"
            corpus_id = row["corpus_id"]
            if corpus_id not in texts:
                raise ValueError(
                    f"load_chroma: query {query_id!r} names corpus {corpus_id!r}, but {corpora_dir} has only "
                    f"{sorted(texts)} (corpora are read from {', '.join(CHROMA_CORPUS_SUFFIXES)} files"
                    + (f"; not read: {', '.join(ignored[:5])}" if ignored else "") + ")"
                )
            try:
                references = json.loads(row["references"])
            except json.JSONDecodeError as err:
                raise ValueError(f"load_chroma: query {query_id!r} has references that are not JSON") from err
            spans = []
            for ref in references:
                start, end = int(ref["start_index"]), int(ref["end_index"])
                _check_slice(
                    "load_chroma",
                    query_id,
                    row["question"],
                    corpus_id,
                    texts[corpus_id],
                    start,
                    end,
                    ref["content"],
                )
                spans.append((corpus_id, start, end))
            queries.append(Query(query_id, row["question"], tuple(spans)))
    return EvalDataset(name, tuple(documents), tuple(queries), None)


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
    shift + answer_start + len(text))``. ``query_id`` is the question ``id``.

    Args:
        path: The JSON file.
        answers: ``"first"`` keeps the first listed answer (XQuAD and SQuAD train have exactly one);
            ``"all"`` keeps every distinct answer span (SQuAD dev lists up to three annotators' answers, which
            are alternatives, so span metrics that need every span would be stricter than the task).
        skip_unanswerable: SQuAD v2.0 questions without answers raise unless this is True, in which case they
            are left out and counted in the dataset's ``notes`` (:func:`load_dataset`, and so ``compare`` and
            ``train``, leave them out: a span metric needs an answer).
        name: Dataset name; defaults to the file stem.

    Returns:
        The :class:`EvalDataset`, without document qrels (derived from the spans).

    Raises:
        ValueError: on a file that is not SQuAD JSON, a duplicate title, a question without answers (unless
            skipped) or an answer whose slice does not match its text.
    """
    if answers not in ("first", "all"):
        raise ValueError(f"load_squad: answers must be 'first' or 'all', got {answers!r}")
    path = Path(path)
    with open(path, encoding="utf-8") as f:
        payload = json.load(f)
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
        # a malformed file, not a wrong argument type: ValueError, like every other format error here
        raise ValueError(f"load_squad: {path} is not SQuAD JSON (expected an object with a 'data' list)")  # noqa: TRY004
    documents = []
    queries = []
    unanswerable = 0
    for article in payload["data"]:
        title = article["title"]
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
                answer_list = [] if qa.get("is_impossible") else qa.get("answers", [])
                if not answer_list:
                    if skip_unanswerable:
                        unanswerable += 1
                        continue
                    raise ValueError(
                        f"load_squad: question {qa['id']!r} ({qa['question'][:80]!r}) has no answer; pass "
                        "skip_unanswerable=True to leave such questions out"
                    )
                if answers == "first":
                    answer_list = answer_list[:1]
                spans = []
                for answer in answer_list:
                    start = int(answer["answer_start"])
                    end = start + len(answer["text"])
                    _check_slice(
                        "load_squad", qa["id"], qa["question"], title, context, start, end, answer["text"]
                    )
                    span = (title, shift + start, shift + end)
                    shifted.append((qa["id"], qa["question"], shift + start, shift + end, answer["text"]))
                    if span not in spans:
                        spans.append(span)
                queries.append(Query(qa["id"], qa["question"], tuple(spans)))
            shift += len(context) + 2
        text = "\n\n".join(parts)
        for query_id, question, start, end, expected in shifted:  # guards the shift arithmetic
            _check_slice("load_squad", query_id, question, title, text, start, end, expected)
        documents.append(Document(title, text, {"title": title, "paragraph_char_spans": paragraph_spans}))
    notes = ((f"{unanswerable} of {unanswerable + len(queries)} questions left out: no answer (SQuAD v2.0 "
             "unanswerable; a span metric needs one)"),) if unanswerable else ()
    return EvalDataset(name or path.stem, tuple(documents), tuple(queries), None, notes)


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for line_number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{line_number}: not a JSON line") from err
    return rows


def load_beir(root: str | os.PathLike, split: str = "test", *, name: str | None = None) -> EvalDataset:
    r"""Load a BEIR-format dataset (Thakur et al., "BEIR", NeurIPS 2021 Datasets and Benchmarks).

    - ``corpus.jsonl``: ``{"_id", "title", "text"}``. Document text is ``title + "\n\n" + text`` when the
      title is non-empty, else ``text``. This follows BEIR's own dense models, which encode title and body
      together (``title + " " + text``); a paragraph break is used instead of a space so that heading and
      paragraph chunkers see the title as its own block. The title is also kept in ``metadata["title"]``.
    - ``queries.jsonl``: ``{"_id", "text"}``. Only queries that appear in the chosen qrels file are kept, as
      BEIR's ``GenericDataLoader`` does.
    - ``qrels/<split>.tsv`` (or, if that file is absent, the first ``qrels/*.tsv`` in sorted order): a header
      row then ``query-id<TAB>corpus-id<TAB>score``. Rows with score 0 are kept (judged non-relevant).

    Queries have no spans; relevance is document-level (:attr:`EvalDataset.qrels`).

    Args:
        root: The dataset folder.
        split: The qrels file to read, ``qrels/<split>.tsv``.
        name: Dataset name; defaults to the folder name.

    Returns:
        The :class:`EvalDataset` with ``qrels``.

    Raises:
        FileNotFoundError: if a file is missing.
        ValueError: on a malformed qrels row, or qrels none of whose queries is in ``queries.jsonl`` (queries
            missing from it are otherwise left out, and counted in :attr:`EvalDataset.notes`).
    """
    root = Path(root)
    qrels_path = root / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        candidates = sorted((root / "qrels").glob("*.tsv"))
        if not candidates:
            raise FileNotFoundError(f"load_beir: no qrels/{split}.tsv nor any qrels/*.tsv under {root}")
        qrels_path = candidates[0]
    for needed in (root / "corpus.jsonl", root / "queries.jsonl"):
        if not needed.is_file():
            raise FileNotFoundError(f"load_beir: missing {needed}")
    documents = []
    for row in _read_jsonl(root / "corpus.jsonl"):
        title = row.get("title") or ""
        body = row.get("text") or ""
        text = f"{title}\n\n{body}" if title else body
        documents.append(Document(str(row["_id"]), text, {"title": title}))
    qrels: dict[str, dict[str, int]] = {}
    with open(qrels_path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t")
        header = next(reader, None)
        if header is None or [h.strip() for h in header[:3]] != ["query-id", "corpus-id", "score"]:
            raise ValueError(
                f"load_beir: {qrels_path} must start with the header 'query-id corpus-id score', "
                f"got {header!r}"
            )
        for line_number, fields in enumerate(reader, start=2):
            if not fields:
                continue
            if len(fields) < 3:
                raise ValueError(f"load_beir: {qrels_path}:{line_number}: expected 3 columns, got {fields!r}")
            try:
                score = int(fields[2])
            except ValueError as err:
                raise ValueError(
                    f"load_beir: {qrels_path}:{line_number}: score {fields[2]!r} is not an integer"
                ) from err
            qrels.setdefault(fields[0], {})[fields[1]] = score
    texts = {str(row["_id"]): row.get("text", "") for row in _read_jsonl(root / "queries.jsonl")}
    missing = [qid for qid in qrels if qid not in texts]
    notes: tuple[str, ...] = ()
    if missing and len(missing) == len(qrels):
        raise ValueError(f"load_beir: none of the {len(qrels)} queries of {qrels_path.name} is in queries.jsonl "
                         f"(e.g. {missing[:3]}): is it the qrels of another dataset?")
    if missing:  # a queries.jsonl given in part (as a corpus may be): evaluate the others, and say so
        notes += ((f"{len(missing)} of the {len(qrels)} queries in {qrels_path.name} are not in queries.jsonl (e.g. "
                   f"{', '.join(map(repr, missing[:3]))}) and are left out"),)
        qrels = {qid: rels for qid, rels in qrels.items() if qid in texts}
    queries = tuple(Query(qid, texts[qid]) for qid in qrels)
    known = {d.doc_id for d in documents}
    unknown = sorted({d for rels in qrels.values() for d, r in rels.items() if r > 0 and d not in known})
    if unknown:  # a corpus given in part: those documents can never be retrieved, so recall cannot reach 1
        n_q = sum(1 for rels in qrels.values() if any(r > 0 and d not in known for d, r in rels.items()))
        notes += ((f"{len(unknown)} relevant document(s) in the qrels are not in corpus.jsonl (e.g. "
                  f"{', '.join(map(repr, unknown[:3]))}), for {n_q} of {len(qrels)} queries: no system can retrieve "
                  "them, so recall stays below 1"),)
    return EvalDataset(name or root.name, tuple(documents), queries, qrels, notes)


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
        return load_chroma(path, name=text) if kind == "chroma" else load_squad(path, name=text,
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
