"""Chunk records: the chunk table's rows (:func:`chunk_rows`), ``search``'s records (:func:`search_records`).

One place makes a chunk record, with its citation fields (:data:`~latechunk.output.layout.SOURCE_COLUMNS`:
:func:`source_metadata`, :func:`section_text`, :func:`metadata_text`).

Tests: ``tests/output/test_output.py``, ``tests/test_contexts.py``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np

from latechunk.output.layout import RECORD_COLUMNS
from latechunk.types import Boundaries, Document

SECTION_SEPARATOR = " > "


def section_text(heading_path: Sequence[str] | None) -> str:
    """A heading path as one line of text: the ``section`` column.

    Args:
        heading_path: Heading titles, outermost first (None or empty: no heading above the chunk).

    Returns:
        The titles joined with :data:`SECTION_SEPARATOR` (``("Setup", "Linux")`` -> ``"Setup > Linux"``), ``""``
        for none.
    """
    return SECTION_SEPARATOR.join(heading_path or ())


def source_metadata(doc: Document) -> dict:
    """The per-document part of :data:`SOURCE_COLUMNS`: what a citation of the document names.

    Args:
        doc: The document; ``doc.metadata`` may hold ``source`` (set by :func:`latechunk.io.iter_inputs`),
            ``url`` (front matter or a JSONL ``url`` field), and ``title``/``title_from``.

    Returns:
        ``{"title", "title_from", "source", "url", "metadata"}``: the title and its origin from
        :func:`latechunk.titles.document_title` (the one title rule: front matter > first heading > record title >
        file name), ``source`` (``""`` when unknown), ``url`` (None when the document has none) and ``metadata``
        (:func:`metadata_text` of ``doc.metadata["metadata"]``, the kept record fields; None when none).
    """
    from latechunk.titles import document_title

    meta = doc.metadata or {}
    title, origin = document_title(doc)
    source = meta.get("source")
    url = meta.get("url")
    return {"title": title, "title_from": origin, "source": source if isinstance(source, str) else "",
            "url": url.strip() if isinstance(url, str) and url.strip() else None,
            "metadata": metadata_text(meta.get("metadata"))}


def metadata_text(values) -> str | None:
    """The ``metadata`` column's value for a document's kept record fields.

    Args:
        values: ``{field: JSON-ready value}`` (:func:`latechunk.io.metadata_json`), or None.

    Returns:
        Compact JSON text of the object, non-ASCII kept, fields in the record's order; None for none (no field
        kept, or an empty mapping).

    Raises:
        TypeError: if ``values`` is not a mapping, or holds a value JSON cannot hold.
    """
    if not values:
        return None
    if not isinstance(values, Mapping):
        raise TypeError(f"Document.metadata['metadata'] must be a mapping of field names to values, got "
                        f"{type(values).__name__}")
    return json.dumps(dict(values), ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def metadata_value(text: str | None) -> dict | None:
    """The ``metadata`` column read back: the object its JSON text holds (None for null)."""
    return None if text is None else json.loads(text)


def chunk_rows(doc: Document, boundaries: Boundaries, strategy: str) -> list[dict]:
    """The chunk records of one document: one dict per chunk with the keys :data:`CHUNK_COLUMNS`, in order.

    This is the one place a chunk record is made: the rows of chunks.parquet, the lines of ``latechunk chunk``
    and (through the table) the results of ``latechunk search``.

    Args:
        doc: The document.
        boundaries: Its Boundaries (token and char spans, heading paths).
        strategy: The strategy's canonical SPEC, stored per row.

    Returns:
        ``len(boundaries)`` dicts; ``text`` is ``doc.text[char_start:char_end]``, ``heading_path`` a list of str,
        ``section`` :func:`section_text` of it, ``header`` :func:`latechunk.titles.contextual_header` of the
        title and heading path, and the document's :func:`source_metadata` (the title rule runs once per
        document).

    Raises:
        ValueError: if ``boundaries`` belong to another document.
    """
    from latechunk.titles import contextual_header

    if doc.doc_id != boundaries.doc_id:
        raise ValueError(f"document {doc.doc_id!r} paired with boundaries of {boundaries.doc_id!r}")
    rows = []
    if not len(boundaries):
        return rows
    meta = source_metadata(doc)
    texts = boundaries.texts(doc.text)
    for i, ((cs, ce), (ts, te), hp, text) in enumerate(zip(boundaries.char_spans.tolist(),
                                                            boundaries.token_spans.tolist(),
                                                            boundaries.heading_paths, texts)):
        hp = list(hp)
        rows.append({"doc_id": doc.doc_id, "chunk_index": i, "char_start": cs, "char_end": ce, "token_start": ts,
                     "token_end": te, "text": text, "heading_path": hp, "strategy": strategy,
                     "title": meta["title"], "title_from": meta["title_from"], "section": section_text(hp),
                     "header": contextual_header(meta["title"], hp), "source": meta["source"], "url": meta["url"],
                     "metadata": meta["metadata"]})
    return rows


def search_records(table, D: np.ndarray, I: np.ndarray) -> list[dict]:
    """Search results of one query as chunk records, best first.

    Args:
        table: The chunk table (``pyarrow.Table`` of :func:`chunk_schema`); only the hit rows are read.
        D: (k,) float32 scores (inner products), best first.
        I: (k,) int64 vector ids = table rows; ``-1`` (no result) is dropped.

    Returns:
        One dict per hit: ``rank`` (1-based), ``score`` (float), ``vector_id`` (int: the row), then
        :data:`RECORD_COLUMNS` (a table without :data:`SOURCE_COLUMNS`, from an older folder, gives them as
        None), ``metadata`` read back into its object (:func:`metadata_value`); an empty list when there is no
        hit (an index with 0 vectors).

    Raises:
        ValueError: if an id is not a row of ``table`` (index files and chunk table of different assemblies).
    """
    import pyarrow as pa

    hits = [(score, int(i)) for score, i in zip(np.asarray(D).tolist(), np.asarray(I).tolist()) if i >= 0]
    beyond = [i for _, i in hits if i >= table.num_rows]
    if beyond:  # an index whose lists hold ids the table lacks (an IVF index.ivfdata of another assembly)
        raise ValueError(f"the index returned vector id {beyond[0]}, but chunks.parquet has {table.num_rows} rows: "
                         "the index files and the chunk table are of different assemblies; run `latechunk verify` "
                         "on the folder (an append run again rebuilds them)")
    # typed: an untyped empty list is a null array, which take() has no kernel for (an index with 0 vectors)
    rows = table.take(pa.array([i for _, i in hits], type=pa.int64())).to_pylist()
    return [{"rank": rank, "score": float(score), "vector_id": i, **{c: row.get(c) for c in RECORD_COLUMNS},
             "metadata": metadata_value(row.get("metadata"))}
            for rank, ((score, i), row) in enumerate(zip(hits, rows), 1)]
