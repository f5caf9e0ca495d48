"""BEIR (Thakur et al., "BEIR", NeurIPS 2021 Datasets and Benchmarks): ``corpus.jsonl``, ``queries.jsonl``,
``qrels/<split>.tsv``; document-level relevance only, no spans. :func:`load_beir`.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

from latechunk.types import Document

from .dataset import EvalDataset, Query, _is_int
from .files import _left_out_notes, _read_text


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
    documents = _beir_documents(corpus_path)
    qrels = _beir_qrels(qrels_path)
    texts, query_lines, why = _beir_query_texts(queries_path)
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


def _beir_documents(corpus_path: Path) -> list[Document]:
    r"""The documents of ``corpus.jsonl``: ``title + "\n\n" + text`` (``text`` alone without a title)."""
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
    return documents


def _beir_qrels(qrels_path: Path) -> dict[str, dict[str, int]]:
    """``{query_id: {doc_id: score}}`` of a qrels TSV (header ``query-id corpus-id score``), scores 0 kept."""
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
    return qrels


def _beir_query_texts(queries_path: Path) -> tuple[dict[str, str | None], dict[str, int], dict[str, str]]:
    """The queries of ``queries.jsonl``: ``(texts, lines, why)``: each query's text (None where it has no usable
    text), its line, and why a text is unusable."""
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
    return texts, query_lines, why
