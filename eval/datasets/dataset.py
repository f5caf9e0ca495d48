"""The dataset types every loader returns: :class:`EvalDataset` (a corpus, its queries, optional document qrels)
and :class:`Query` (a query and its answer spans, :data:`SpanRef`: half-open character offsets into a document's
text). Both check their fields when made.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from latechunk.types import Document

SpanRef = tuple[str, int, int]
"""``(doc_id, char_start, char_end)``: a half-open character range of one document."""


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
