"""The output folder of ``latechunk embed``: its one owner (file names, chunk table schema, manifest and shard keys).

Layout of an output folder ``DIR`` (DESIGN.md)::

    index.faiss             FAISS index over inner products (a binary one, Hamming, for --precision ubinary);
                            vector id i is row i of chunks.parquet
    index.ivfdata           an IVF index only: its inverted lists, merged on disk (:data:`IVFDATA_FILE`)
    chunks.parquet          one row per chunk, columns :data:`CHUNK_COLUMNS` (schema :data:`CHUNK_SCHEMA`)
    manifest.json           format :data:`MANIFEST_FORMAT`: settings, model, counts, documents, skipped, shards
    run.json                format :data:`RUN_FORMAT`: the run's settings, written first (``--resume`` compares them)
    progress.json           shards complete, input items consumed, wall seconds so far (over resumed runs; the
                            shard records are the truth, ``seconds`` feeds a resumed run's ``seconds.total``)
    shards/NNNNN.parquet    chunk rows of one pipeline group (same schema as chunks.parquet)
    shards/NNNNN.npy        (rows, dim) float32 chunk vectors, ``np.save(..., allow_pickle=False)``
    shards/NNNNN.json       shard record, format :data:`SHARD_FORMAT`, keys :data:`SHARD_KEYS`
    ranks/                  several processes only (:mod:`latechunk.ingest.ranks`), removed when the run completes
    commit.json             only while an assembly commits (:data:`COMMIT_FILE`, :meth:`OutputFolder.finish_commit`):
                            the assembled files wait whole under their ``.tmp`` names and are renamed into place;
                            the next reader or writer finishes a commit that was killed halfway
    .latechunk.lock         the writer lock (:data:`LOCK_FILE`, :func:`latechunk.ingest.folder.writer_lock`): an
                            ``fcntl.flock`` held by the one process writing the folder (embed, --resume, --append,
                            ``Index.add``); holds that writer's pid. Never removed (removing a lock file races),
                            never counts as content (an empty folder with only it is empty), never read by readers

This module is the only code that knows these names, columns and keys, and the only code that reads or writes
the three assembled files; :mod:`latechunk.ingest` writes shards and commits files through the names and
schema given here. ``embed`` (through ingest), ``verify``, ``search``, ``chunk`` and the evaluator use it.

Tests: ``tests/test_output.py``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from latechunk.io import quiet_c_stdout
from latechunk.types import Boundaries, Document

__all__ = [
    "CHUNKS_FILE",
    "CHUNK_COLUMNS",
    "INDEX_FILE",
    "IVFDATA_FILE",
    "IVF_PARTS_DIR",
    "LEGACY_COLUMNS",
    "LOCK_FILE",
    "MANIFEST_FILE",
    "MANIFEST_FORMAT",
    "OUTPUT_FILES",
    "PROGRESS_FILE",
    "RANKS_DIR",
    "RANKS_FORMAT",
    "RECORD_COLUMNS",
    "RUN_FILE",
    "RUN_FORMAT",
    "SHARDS_DIR",
    "SHARD_FILE",
    "SHARD_FORMAT",
    "SHARD_KEYS",
    "SOURCE_COLUMNS",
    "SECTION_SEPARATOR",
    "OutputFolder",
    "build_manifest",
    "chunk_rows",
    "chunk_schema",
    "chunk_table",
    "fill_source_columns",
    "section_text",
    "source_metadata",
    "read_output",
    "search_records",
]

INDEX_FILE = "index.faiss"
#: the inverted lists of an IVF index, merged on disk at assembly (faiss ``OnDiskInvertedLists``); index.faiss
#: names it and is read with ``faiss.IO_FLAG_ONDISK_SAME_DIR``, so the folder can move
IVFDATA_FILE = "index.ivfdata"
#: a folder of per-shard IVF part files while assembly merges them (removed when it ends)
IVF_PARTS_DIR = "index.ivfparts.tmp"
CHUNKS_FILE = "chunks.parquet"
MANIFEST_FILE = "manifest.json"
RUN_FILE = "run.json"
PROGRESS_FILE = "progress.json"
SHARDS_DIR = "shards"
#: the names of the files a run writes in ``shards/``: ``NNNNN.json``, ``.parquet`` and ``.npy`` (each first under
#: its ``.tmp`` name, :func:`latechunk.ingest.files.tmp_path`); anything else there was not written by latechunk
SHARD_FILE = re.compile(r"\d+\.(?:json|parquet|npy)")
RANKS_DIR = "ranks"
#: the commit journal of an assembly: written once ``index.faiss``, ``index.ivfdata``, ``chunks.parquet`` and
#: ``manifest.json`` are whole under their ``.tmp`` names, removed once they are renamed into place; while it
#: exists the folder's new state is decided, and :meth:`OutputFolder.finish_commit` completes the renames
COMMIT_FILE = "commit.json"
#: the files a commit journal may rename into place or remove (in this order: the index last but run.json and the
#: manifest; run.json only when its settings change with the assembly: ``latechunk reindex``)
COMMIT_ORDER = (IVFDATA_FILE, CHUNKS_FILE, INDEX_FILE, RUN_FILE, MANIFEST_FILE)
#: the writer lock of an output folder (see the layout above); not in :data:`OUTPUT_FILES`: ``--force`` leaves it
LOCK_FILE = ".latechunk.lock"
#: the files assembled from the shards at the end of a run (manifest last)
ASSEMBLED_FILES = (INDEX_FILE, CHUNKS_FILE, MANIFEST_FILE)
#: files and folders of an output folder that ``--force`` removes (nothing else there is touched)
OUTPUT_FILES = (INDEX_FILE, IVFDATA_FILE, CHUNKS_FILE, MANIFEST_FILE, RUN_FILE, PROGRESS_FILE, SHARDS_DIR,
                RANKS_DIR, COMMIT_FILE)

RUN_FORMAT = "latechunk-run/1"
MANIFEST_FORMAT = "latechunk-index/1"
SHARD_FORMAT = "latechunk-shard/1"
RANKS_FORMAT = "latechunk-ranks/1"

#: the source metadata of each chunk, for citations (issue 12): ``title`` and ``title_from``
#: (:func:`latechunk.titles.document_title`), ``section`` (the heading path joined with " > "), ``header``
#: (:func:`latechunk.titles.contextual_header`), ``source`` (the document's path as read: a file relative to its
#: input root, or ``file.jsonl:LINE``), ``url`` (front matter or JSONL ``url``; null when none) and ``metadata``
#: (the record's fields kept by ``--metadata-fields``, as JSON text of an object; null when none). An output folder
#: written before them is read with them filled (:func:`fill_source_columns`).
SOURCE_COLUMNS = ("title", "title_from", "section", "header", "source", "url", "metadata")
#: the columns of chunks.parquet before :data:`SOURCE_COLUMNS` (output folders of latechunk <= issue 11)
LEGACY_COLUMNS = ("doc_id", "chunk_index", "char_start", "char_end", "token_start", "token_end", "text",
                  "heading_path", "strategy")
#: columns of chunks.parquet and of each shard's .parquet, in order; row i = vector id i
CHUNK_COLUMNS = (
    "doc_id",
    "chunk_index",
    "char_start",
    "char_end",
    "token_start",
    "token_end",
    "text",
    "heading_path",
    "strategy",
    *SOURCE_COLUMNS,
)
#: the columns of a chunk record as ``search`` prints it (after ``rank``, ``score`` and ``vector_id``)
RECORD_COLUMNS = ("doc_id", "chunk_index", "char_start", "char_end", "token_start", "token_end", "heading_path", "text",
                  "strategy", *SOURCE_COLUMNS)

#: keys of a shard record (``shards/NNNNN.json``):
#: ``format``; ``shard`` (its number k) and ``name`` (``NNNNN``); ``inputs``: input items ``[start, end)``;
#: ``inputs_digest``: running digest of the input items up to ``end``; ``rows``, ``dim``; ``files``:
#: ``{file name: {"bytes", "sha256"}}`` of its .parquet and .npy; ``documents``: ``[{"doc_id", "chunks",
#: "sha256", "source"[, "title"][, "converted_from", "converter"][, "front_matter_problem"]}]``; ``skipped``: ``[{"doc_id", "reason", "source"}]``; ``stats``: ``{"content_tokens",
#: "tokens_encoded", "forward_calls", "seconds": {stage: s}}``.
SHARD_KEYS = ("format", "shard", "name", "inputs", "inputs_digest", "rows", "dim", "files", "documents", "skipped",
              "stats")


SECTION_SEPARATOR = " > "


def chunk_schema():
    """The ``pyarrow.Schema`` of chunks.parquet (and of every shard's .parquet).

    Returns:
        ``doc_id`` string; ``chunk_index``, ``char_start``, ``char_end``, ``token_start``, ``token_end`` int32
        (characters, tokens; half-open spans); ``text`` string; ``heading_path`` list of strings; ``strategy``
        string (the canonical SPEC); then :data:`SOURCE_COLUMNS`, all strings: ``title`` (``""`` when the
        document has none), ``title_from`` (one of :data:`latechunk.titles.TITLE_ORIGINS`), ``section``
        (``""`` outside any heading), ``header`` (``""`` when there is neither title nor heading), ``source``,
        ``url`` (null when the document has none), ``metadata`` (JSON text of an object: the record fields kept by
        ``--metadata-fields``; null when none). In a folder written before these columns, rows read back
        have ``section`` and ``source`` filled and the others null (:func:`fill_source_columns`).
    """
    import pyarrow as pa

    return pa.schema(
        [
            ("doc_id", pa.string()),
            ("chunk_index", pa.int32()),
            ("char_start", pa.int32()),
            ("char_end", pa.int32()),
            ("token_start", pa.int32()),
            ("token_end", pa.int32()),
            ("text", pa.string()),
            ("heading_path", pa.list_(pa.string())),
            ("strategy", pa.string()),
            *((c, pa.string()) for c in SOURCE_COLUMNS),
        ]
    )


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


def parse_where(conditions: Iterable[str] | Mapping | None) -> dict:
    """Search conditions (``search --where lang=en``, ``--where doc_id=finance.md``, ``Index.search(where={"lang":
    "en"})``) as ``{field: wanted}`` (:func:`allowed_rows` says which fields are columns, which metadata).

    Args:
        conditions: ``"FIELD=VALUE"`` strings (both sides stripped; VALUE is text, compared as
            :func:`metadata_matches` says), or a mapping ``{field: value}`` whose values are JSON values (a str,
            number, bool, None, list or object), or None.

    Returns:
        ``{field: wanted}``, all conditions to hold at once (AND).

    Raises:
        ValueError: for a condition without ``=`` or with an empty field name, or a field given twice.
    """
    out: dict = {}
    if conditions is None:
        return out
    if isinstance(conditions, str):
        conditions = [conditions]
    if isinstance(conditions, Mapping):
        pairs = list(conditions.items())
    else:
        pairs = []
        for c in conditions:
            name, eq, value = str(c).partition("=")
            if not eq or not name.strip():
                raise ValueError(f"--where {c!r}: give FIELD=VALUE (e.g. lang=en), a field of the records' "
                                 "metadata (embed --metadata-fields)")
            pairs.append((name.strip(), value.strip()))
    for name, value in pairs:
        if name in out:
            raise ValueError(f"--where gives the field {name!r} twice (conditions all hold at once: one value each)")
        out[name] = value
    return out


def _number(text: str) -> int | float | None:
    """The number a ``--where`` text names (an int exactly, else a float), or None."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        f = float(text)
    except ValueError:
        return None
    return f if math.isfinite(f) else None


def _same_number(a, b) -> bool:
    """Two JSON numbers equal as numbers: integers exactly (9007199254740993 is not ...992), else as floats."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    try:
        return float(a) == float(b)
    except OverflowError:  # an integer beyond any float: equal to no float
        return False


def metadata_matches(value, wanted) -> bool:
    """Whether one metadata value meets a condition.

    ``wanted`` text (``--where FIELD=VALUE``) meets a string equal to it, a number equal to the number it names
    (``3`` meets 3 and 3.0; integers compare exactly), ``true``/``false``/``null`` the JSON values, and an object
    or list equal to the JSON it parses to; ``wanted`` given as a JSON value (``Index.search(where=...)``) meets
    an equal value (objects whatever their key order; a bool is never a number). Either way a list field also
    meets a condition that one of its items meets.

    Args:
        value: The field's value in a chunk's metadata (JSON: str, int, float, bool, None, list, dict).
        wanted: The condition's value: text, or a JSON value.

    Returns:
        True when the value meets the condition.
    """
    if isinstance(value, list) and not isinstance(wanted, list) and any(metadata_matches(v, wanted) for v in value):
        return True
    if isinstance(value, str) and isinstance(wanted, str) and len(wanted) > 1 and wanted[0] == wanted[-1] == '"':
        try:  # a JSON string (--where 'lang="de"'), as the README's "or as JSON" says (a trial)
            return value == wanted or value == json.loads(wanted)
        except ValueError:
            pass
    if isinstance(wanted, str) and not isinstance(value, str):
        if isinstance(value, bool) or value is None:
            return json.dumps(value) == wanted
        if isinstance(value, (int, float)):
            n = _number(wanted)
            return n is not None and _same_number(value, n)
        try:
            wanted = json.loads(wanted)  # an object or a list, as JSON text
        except ValueError:
            return False
    if isinstance(value, bool) or isinstance(wanted, bool) or value is None or wanted is None:
        return value is wanted or (value == wanted and type(value) is type(wanted))
    if isinstance(value, (int, float)) and isinstance(wanted, (int, float)):
        return _same_number(value, wanted)
    return value == wanted


def metadata_fields(table) -> list[str]:
    """The metadata field names a chunk table's rows hold (the union over its documents), sorted; ``[]`` when
    it keeps none."""
    import pyarrow.compute as pc

    if "metadata" not in table.column_names or table.column("metadata").null_count == table.num_rows:
        return []
    texts = pc.unique(table.column("metadata").drop_null()).to_pylist()
    return sorted({k for t in texts for k in json.loads(t)})


#: chunk-table columns a ``--where`` condition names directly (``--where doc_id=finance.md``); any other field,
#: or one written ``metadata.NAME``, is a field of the records' metadata (``embed --metadata-fields``)
WHERE_COLUMNS = ("doc_id", "source", "title", "url", "section", "header", "heading_path")


def _dictionary_mask(column, meets) -> np.ndarray:
    """(n,) bool: rows whose value ``meets(value)`` (called once per distinct value; a null never meets)."""
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(column).combine_chunks()
    ok = np.array([meets(v) for v in encoded.dictionary.to_pylist()], dtype=bool)
    idx = encoded.indices.to_numpy(zero_copy_only=False)
    valid = ~np.asarray(encoded.indices.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    hit = np.zeros(len(idx), dtype=bool)
    hit[valid] = ok[idx[valid].astype(np.int64)] if len(ok) else False
    return hit


def allowed_rows(table, where: Mapping) -> np.ndarray:
    """The rows (vector ids) of a chunk table that meet every condition of ``where``.

    A condition on one of :data:`WHERE_COLUMNS` is met by a row whose column value equals it (as
    :func:`metadata_matches` says; ``heading_path``: one of its headings); any other field, or one written
    ``metadata.NAME``, by a row whose ``metadata`` has the field with a value that :func:`metadata_matches` it.
    Each distinct value is compared once (chunks of one document share their metadata text and citation fields),
    so the cost is one pass over each named column plus one comparison per document.

    Args:
        table: The chunk table (``pyarrow.Table``; a folder written before the ``metadata`` column, or without
            ``--metadata-fields``, has no metadata set: no row meets a metadata condition).
        where: ``{field: wanted}`` (:func:`parse_where`).

    Returns:
        (m,) int64 row numbers, ascending.
    """
    hit = np.ones(table.num_rows, dtype=bool)
    meta_where = {}
    for field, wanted in where.items():
        if field in WHERE_COLUMNS:
            if field not in table.column_names:  # a folder written before the column
                return np.zeros(0, np.int64)
            if field == "heading_path":
                hit &= np.array([any(metadata_matches(h, wanted) for h in (p or ()))
                                 for p in table.column(field).to_pylist()], dtype=bool)
            else:
                hit &= _dictionary_mask(table.column(field), lambda v, w=wanted: metadata_matches(v, w))
        else:
            meta_where[field.removeprefix("metadata.") if field.startswith("metadata.") else field] = wanted
    if meta_where:
        column = table.column("metadata") if "metadata" in table.column_names else None
        if column is None or column.null_count == len(column):
            return np.zeros(0, np.int64)
        hit &= _dictionary_mask(column, lambda t: all(k in m and metadata_matches(m[k], v)
                                                      for m in (json.loads(t),) for k, v in meta_where.items()))
    return np.nonzero(hit)[0].astype(np.int64)


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


def fill_source_columns(table, sources: Mapping[str, str] | None = None):
    """A chunk table (or record batch) written before :data:`SOURCE_COLUMNS`, with them added: the decision for
    older output folders is to fill, not to refuse.

    What the old rows tell is filled exactly: ``section`` from ``heading_path``, and ``source`` from the
    document records (``sources``: the manifest's or the shard record's ``documents``); ``title``,
    ``title_from``, ``header`` and ``url`` need the document itself and are null (the run never computed them:
    null, not ``""``, so a reader can tell "not recorded" from "none"). A table that has the columns comes back
    as it is. Read paths (:meth:`OutputFolder.read_chunks`, :meth:`OutputFolder.read_shard_table`,
    :meth:`OutputFolder.iter_chunk_batches`) apply this, so ``search``, ``Index``, ``verify``, ``export`` and a
    ``--resume``/``--append`` assembly see one schema; the old shard files themselves are never rewritten.

    Args:
        table: A ``pyarrow.Table`` or ``RecordBatch`` with (at least the needed ones of) :data:`LEGACY_COLUMNS`.
        sources: ``{doc_id: source}``; None or a missing id: ``source`` null.

    Returns:
        The same kind of object with every column of :data:`CHUNK_COLUMNS` it had plus the filled ones, in
        :data:`CHUNK_COLUMNS` order (extra columns, if any, after them).
    """
    import pyarrow as pa

    names = list(table.schema.names)
    missing = [c for c in SOURCE_COLUMNS if c not in names]
    if not missing:
        return table
    n = table.num_rows
    fill: dict = {}
    for c in missing:
        if c == "section" and "heading_path" in names:
            fill[c] = pa.array([section_text(h) for h in table.column("heading_path").to_pylist()], pa.string())
        elif c == "source" and sources is not None and "doc_id" in names:
            fill[c] = pa.array([sources.get(d) for d in table.column("doc_id").to_pylist()], pa.string())
        else:
            fill[c] = pa.nulls(n, pa.string())
    order = [c for c in CHUNK_COLUMNS if c in names or c in fill] + [c for c in names if c not in CHUNK_COLUMNS]
    arrays = [fill[c] if c in fill else table.column(c) for c in order]
    fields = [pa.field(c, pa.string()) if c in fill else table.schema.field(c) for c in order]
    cls = pa.RecordBatch if isinstance(table, pa.RecordBatch) else pa.Table
    return cls.from_arrays(arrays, schema=pa.schema(fields))


def chunk_table(documents: Sequence[Document], boundaries: Sequence[Boundaries], strategy: str):
    """The chunk table of several documents, row i = vector id i (documents in order, chunks in order).

    Args:
        documents: The embedded documents, in order.
        boundaries: Their Boundaries, same order.
        strategy: The strategy's canonical SPEC, stored per row.

    Returns:
        A ``pyarrow.Table`` with :func:`chunk_schema`.

    Raises:
        ValueError: if a document is paired with the boundaries of another document.
    """
    import pyarrow as pa

    cols: dict[str, list] = {c: [] for c in CHUNK_COLUMNS}
    for doc, b in zip(documents, boundaries):
        for row in chunk_rows(doc, b, strategy):
            for c in CHUNK_COLUMNS:
                cols[c].append(row[c])
    return pa.table(cols, schema=chunk_schema())


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


def _identity(path: Path) -> list[int] | None:
    """A file's identity for the commit journal: ``[size, mtime_ns]`` (kept by a copy that keeps times, unlike
    the inode), None when it does not exist."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return [st.st_size, st.st_mtime_ns]


def fsync_dir(path: Path) -> None:
    """Flush a folder's entries to disk (best effort: some file systems refuse; errors are ignored).

    Args:
        path: The folder.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def flush(path: Path) -> None:
    """Flush a written file's data to disk (before it is renamed into place).

    Args:
        path: The file.

    Raises:
        OSError: if it cannot be opened or flushed.
    """
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def commit(tmp: Path, final: Path) -> None:
    """Flush ``tmp`` to disk and rename it to ``final`` (atomic on POSIX), then flush the folder.

    Args:
        tmp: The file as written (its temp name, :func:`latechunk.ingest.files.tmp_path`).
        final: Its name once committed (replaced if it exists).

    Raises:
        OSError: if ``tmp`` cannot be opened, flushed or renamed.
    """
    flush(tmp)
    os.replace(tmp, final)
    fsync_dir(final.parent)


def _json_bytes(obj, indent: int | None) -> bytes:
    return (json.dumps(obj, indent=indent, ensure_ascii=False) + "\n").encode("utf-8")


@dataclass(frozen=True)
class OutputFolder:
    """An output folder of ``latechunk embed``: the paths of its files and their readers.

    Attributes:
        path: The folder.
    """

    path: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    # ---------------------------------------------------------------- paths
    @property
    def index_path(self) -> Path:
        """``DIR/index.faiss``."""
        return self.path / INDEX_FILE

    @property
    def ivfdata_path(self) -> Path:
        """``DIR/index.ivfdata`` (an IVF index's inverted lists, :data:`IVFDATA_FILE`)."""
        return self.path / IVFDATA_FILE

    @property
    def ivf_parts_path(self) -> Path:
        """``DIR/index.ivfparts.tmp``: per-shard IVF part files while assembly merges them (:data:`IVF_PARTS_DIR`)."""
        return self.path / IVF_PARTS_DIR

    @property
    def chunks_path(self) -> Path:
        """``DIR/chunks.parquet``."""
        return self.path / CHUNKS_FILE

    @property
    def manifest_path(self) -> Path:
        """``DIR/manifest.json``."""
        return self.path / MANIFEST_FILE

    @property
    def run_path(self) -> Path:
        """``DIR/run.json``."""
        return self.path / RUN_FILE

    @property
    def commit_path(self) -> Path:
        """``DIR/commit.json`` (the commit journal of an assembly, :data:`COMMIT_FILE`)."""
        return self.path / COMMIT_FILE

    @property
    def progress_path(self) -> Path:
        """``DIR/progress.json``."""
        return self.path / PROGRESS_FILE

    @property
    def shards_dir(self) -> Path:
        """``DIR/shards``."""
        return self.path / SHARDS_DIR

    @property
    def ranks_dir(self) -> Path:
        """``DIR/ranks``."""
        return self.path / RANKS_DIR

    @staticmethod
    def shard_name(k: int) -> str:
        """The name of shard ``k``.

        Args:
            k: Shard number (>= 0).

        Returns:
            ``k`` as five or more digits, zero-padded (``7`` -> ``"00007"``).
        """
        return f"{k:05d}"

    @staticmethod
    def shard_number(file_name: str) -> int | None:
        """The shard number of a file name in ``shards/``.

        Args:
            file_name: A file name (no folder), e.g. ``"00007.npy"``.

        Returns:
            The number (``7``), or ``None`` if the part before the first ``.`` is not all digits.
        """
        stem = file_name.split(".", 1)[0]
        return int(stem) if stem.isdigit() else None

    def shard_path(self, k: int, ext: str) -> Path:
        """The path of one of shard ``k``'s files.

        Args:
            k: Shard number.
            ext: ``"json"``, ``"parquet"`` or ``"npy"`` (not checked).

        Returns:
            ``DIR/shards/NNNNN.<ext>``.
        """
        return self.shards_dir / f"{self.shard_name(k)}.{ext}"

    def temp_files(self) -> list[Path]:
        """Temp files of unfinished writes (``*.tmp``) at the top level and in ``shards/``.

        Returns:
            Their paths: the top level's sorted, then ``shards/``'s sorted.
        """
        return sorted(self.path.glob("*.tmp")) + sorted(self.shards_dir.glob("*.tmp"))

    # ---------------------------------------------------------------- the commit of an assembly
    def begin_commit(self, rename: Sequence[str], remove: Sequence[str] = (),
                     after_first: Callable[[], None] | None = None) -> None:
        """Decide an assembly's new state: write the commit journal, then :meth:`finish_commit`.

        Every file named in ``rename`` must be whole at its ``.tmp`` name (flushed). Until the journal is in
        place the folder serves its old state (the temp files are ignored by readers and overwritten by the next
        assembly); once it is, the new state is decided and whoever opens the folder next completes it, so a
        kill between the renames never leaves the index and the chunk table out of step.

        Args:
            rename: Names from :data:`COMMIT_ORDER` to rename from ``NAME.tmp`` to ``NAME``.
            remove: Names from :data:`COMMIT_ORDER` to remove (a file of the old state the new one lacks, such
                as ``index.ivfdata`` when the index type changed).
            after_first: Called after the first rename (a fault-injection point).

        Raises:
            ValueError: if a name is not one of :data:`COMMIT_ORDER`.
            OSError: if the journal cannot be written or a rename fails.
        """
        bad = [n for n in (*rename, *remove) if n not in COMMIT_ORDER]
        if bad:
            raise ValueError(f"commit of {bad}: only {COMMIT_ORDER} are committed together")
        # each file by its identity (size, mtime): a reader that finishes this journal late, after a
        # newer assembly has begun writing temp files of the same names, touches none of them
        journal = {"rename": {n: _identity(self.path / (n + ".tmp")) for n in rename},
                   "remove": {n: _identity(self.path / n) for n in remove if (self.path / n).exists()}}
        tmp = self.path / (COMMIT_FILE + ".tmp")
        tmp.write_bytes(_json_bytes(journal, 1))
        commit(tmp, self.commit_path)
        self.finish_commit(after_first)

    def finish_commit(self, after_first: Callable[[], None] | None = None, repair: bool = False) -> bool:
        """Complete an assembly's commit that was interrupted (a kill between :meth:`begin_commit`'s renames).

        Readers (:func:`read_output`, :meth:`read_manifest`, ``latechunk verify``, ``export``) call it first, and
        ``--append``/``Index.add`` with ``repair=True``; ``--resume`` and ``--force`` remove the journal with the
        files they rebuild. It costs one ``stat`` when there is nothing to finish. Two processes may
        finish the same commit at once: a rename already done is skipped, and a file is renamed or removed only
        while it is the one the journal names (size and mtime, which ``cp -a``, rsync and tar keep), so a reader
        that finishes a journal late never moves a newer assembly's temp files.

        Args:
            after_first: Called after the first rename (a fault-injection point of :meth:`begin_commit`).
            repair: A writer that rebuilds the assembled files anyway (``--append``): a journal whose files are not
                as it recorded them is dropped instead of refused.

        Returns:
            True when a commit was finished (or was found finished and its journal removed), False when there
            was none.

        Raises:
            ValueError: if the journal is unreadable, names files that are not as it recorded them (a copy made
                mid-commit that lost the file times; not with ``repair``), or the folder cannot be written (a
                read-only copy of a folder whose commit was interrupted: the message says to open it writable
                once).
        """
        try:
            journal_id = _identity(self.commit_path)
            journal = json.loads(self.commit_path.read_text(encoding="utf-8"))
            rename, remove = dict(journal["rename"]), dict(journal["remove"])
        except FileNotFoundError:  # none, or finished by another process meanwhile
            return False
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{self.commit_path} (the commit journal of an interrupted assembly) is unreadable "
                             f"({err}); run `latechunk verify {self.path}`") from err
        # each file is this journal's (at its temp name: to rename), already renamed (at its final name), or
        # neither: a copy made with its times lost, files touched since, or a newer assembly's temp files
        state = {}
        for name, want in rename.items():
            tmp, final = self.path / (name + ".tmp"), self.path / name
            state[name] = ("rename" if _identity(tmp) == list(want) else
                           "done" if _identity(final) == list(want) else "neither")
        stray = sorted(n for n, st in state.items() if st == "neither")
        if stray and not repair:
            raise ValueError(f"{self.path}: {COMMIT_FILE} (the journal of an assembly killed while committing its "
                             f"files) names {', '.join(stray)} as files that are not here as it recorded them (was the "
                             "folder copied mid-commit without its file times, or its files touched?), so the index "
                             "and the chunk table may disagree; run the same `latechunk embed ... --append` (or "
                             "Index.add) on it again: it rebuilds them from the shards")
        try:
            for name in COMMIT_ORDER:  # the order of begin_commit's renames; a file already renamed is skipped
                final = self.path / name
                if state.get(name) == "rename" and not stray:
                    os.replace(final.with_name(name + ".tmp"), final)
                    if after_first is not None:
                        after_first()
                        after_first = None
                elif name in remove and not stray and _identity(final) == list(remove[name]):
                    final.unlink()
            fsync_dir(self.path)
            if _identity(self.commit_path) == journal_id:  # not a newer assembly's journal of the same name
                with contextlib.suppress(FileNotFoundError):
                    self.commit_path.unlink()
            fsync_dir(self.path)
        except OSError as err:
            raise ValueError(f"{self.path}: an assembly was killed while committing its files ({COMMIT_FILE} is "
                             f"there) and they cannot be renamed into place here ({err}); open the folder once "
                             "where it is writable (any `latechunk search` or `verify` finishes the commit)") from err
        return True

    # ---------------------------------------------------------------- JSON files
    @staticmethod
    def read_json(path: Path) -> dict:
        """A JSON object file.

        Args:
            path: The file.

        Returns:
            The parsed JSON object.

        Raises:
            ValueError: if it is missing, unreadable, not JSON or not an object (the message names the file).
        """
        try:
            obj = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"{Path(path).name} is missing") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ValueError(f"{Path(path).name} is unreadable: {err}") from err
        if not isinstance(obj, dict):
            raise ValueError(f"{Path(path).name} is unreadable: not a JSON object")  # noqa: TRY004  (a damaged file)
        return obj

    @staticmethod
    def json_bytes(obj, indent: int | None = 1) -> bytes:
        """How every JSON file of the folder is written: UTF-8, ``ensure_ascii=False``, newline-terminated.

        Args:
            obj: A JSON-ready object.
            indent: Spaces per level; None: one line.

        Returns:
            The file's bytes.

        Raises:
            TypeError: if ``obj`` holds a value JSON cannot encode.
        """
        return _json_bytes(obj, indent)

    def read_manifest(self) -> dict:
        """``manifest.json`` as a dict.

        Returns:
            The manifest (keys: :func:`build_manifest`).

        Raises:
            ValueError: if it is missing (an unfinished run?) or unreadable, or an interrupted commit cannot be
                finished (:meth:`finish_commit`).
        """
        self.finish_commit()
        if not self.manifest_path.is_file():
            raise ValueError(f"{self.path}: {MANIFEST_FILE} is missing (not a latechunk output folder, or an "
                             "unfinished run? run `latechunk embed` first, or finish it with --resume)")
        return self.read_json(self.manifest_path)

    def read_run(self) -> dict:
        """``run.json`` as a dict.

        Returns:
            ``{"format", "created", "settings"}``; ``settings`` is ``EmbedConfig.to_dict()`` with the model's
            facts (:func:`latechunk.ingest.run_settings`).

        Raises:
            ValueError: if it is missing or unreadable.
        """
        return self.read_json(self.run_path)

    def recorded_settings(self, manifest: dict | None = None) -> dict:
        """The run's settings: the manifest's ``settings``, else run.json's (a folder whose manifest predates
        them), else ``{}`` (neither recorded, or run.json unreadable).

        Args:
            manifest: The manifest already read; None: read it when it exists.

        Returns:
            ``EmbedConfig.to_dict()`` with the model's facts, as recorded.
        """
        if manifest is None and self.manifest_path.is_file():
            manifest = self.read_manifest()
        settings = (manifest or {}).get("settings")
        if not settings and self.run_path.is_file():
            try:
                settings = self.read_run().get("settings")
            except ValueError:
                settings = None
        return dict(settings or {})

    # ---------------------------------------------------------------- index and chunks
    def read_index(self):
        """``index.faiss`` as a CPU ``faiss.Index``, or a ``faiss.IndexBinary`` where the run's ``--precision`` is
        ``ubinary`` (told apart by the file's four-byte faiss type code: binary ones begin with ``IB``).

        Returns:
            The index (inner-product metric, or Hamming for a binary one; vector id i = row i of
            chunks.parquet).

        Raises:
            ValueError: if it is missing, or unreadable (truncated or not a FAISS index).
        """
        import faiss

        if not self.index_path.is_file():
            raise ValueError(f"{self.path}: {INDEX_FILE} is missing (not a latechunk output folder? run "
                             "`latechunk embed` first)")
        try:
            with open(self.index_path, "rb") as f:
                binary = f.read(2) == b"IB"
            if binary:
                return faiss.read_index_binary(str(self.index_path))
            with quiet_c_stdout():  # an IVF index's index.ivfdata is looked up beside index.faiss (faiss prints that)
                # read-only: index.ivfdata is memory-mapped for reading, so a read-only folder (a shared mount,
                # a container's :ro volume) searches and verifies
                return faiss.read_index(str(self.index_path), faiss.IO_FLAG_ONDISK_SAME_DIR | faiss.IO_FLAG_READ_ONLY)
        except RuntimeError as err:
            if IVFDATA_FILE in str(err):  # the IVF index reads but its inverted lists do not
                raise ValueError(f"{self.ivfdata_path} (the inverted lists of this IVF index) is missing or "
                                 f"unreadable ({str(err).splitlines()[0]}); run `latechunk verify {self.path}`"
                                 ) from err
            raise ValueError(f"{self.index_path} is unreadable ({str(err).splitlines()[0] if str(err) else err}; "
                             f"truncated or not a FAISS index); run `latechunk verify {self.path}`") from err

    def write_index(self, index, tmp: Path) -> None:
        """Write ``index`` to ``tmp`` (the caller commits it to :attr:`index_path`).

        Args:
            index: A CPU ``faiss.Index`` or ``faiss.IndexBinary`` (``faiss.write_index_binary``).
            tmp: The temp file to write.

        Raises:
            RuntimeError: if FAISS cannot write the file.
        """
        import faiss

        if isinstance(index, faiss.IndexBinary):
            faiss.write_index_binary(index, str(tmp))
        else:
            faiss.write_index(index, str(tmp))

    def read_chunks(self, columns: Sequence[str] | None = None):
        """``chunks.parquet`` as a ``pyarrow.Table`` (all or some columns).

        Args:
            columns: Column names to read (of :data:`CHUNK_COLUMNS`); None: all.

        Returns:
            The table, row i = vector id i.

        Raises:
            ValueError: if it is missing or unreadable.
        """
        return read_chunk_table(self.chunks_path, columns, sources=lambda: self._sources(self.chunks_path))

    def _sources(self, path: Path) -> dict[str, str]:
        """``{doc_id: source}`` from the record that lists the documents of a chunk table file (a shard's own
        ``.json`` for a shard's .parquet, else the manifest); ``{}`` when that record is unreadable. Used only to
        fill an older table's ``source`` (:func:`fill_source_columns`)."""
        path = Path(path)
        record = path.with_suffix(".json") if path.parent == self.shards_dir else self.manifest_path
        try:
            docs = self.read_json(record).get("documents") or []
        except ValueError:
            return {}
        return {d["doc_id"]: d.get("source", "") for d in docs if isinstance(d, dict) and "doc_id" in d}

    def chunk_rows_count(self) -> int:
        """Rows of ``chunks.parquet`` from its footer (the file is not read).

        Returns:
            The row count (= chunks).

        Raises:
            ValueError: if it is missing or unreadable.
        """
        import pyarrow.parquet as pq

        if not self.chunks_path.is_file():
            raise ValueError(f"{CHUNKS_FILE} is missing")
        try:
            return int(pq.ParquetFile(self.chunks_path).metadata.num_rows)
        except Exception as err:
            raise ValueError(f"{CHUNKS_FILE} is unreadable: {type(err).__name__}: {err}") from err

    def iter_chunk_batches(self, path: Path | None = None, columns: Sequence[str] | None = None,
                           batch_size: int = 4096, row_groups: Sequence[int] | None = None) -> Iterator:
        """Record batches of a chunk table file (default ``chunks.parquet``), in row order.

        Args:
            path: The parquet file; None: ``chunks.parquet``.
            columns: Column names to read; None: all. A file written before :data:`SOURCE_COLUMNS` gives them
                filled (:func:`fill_source_columns`).
            batch_size: Rows per batch (the last one may be shorter).
            row_groups: Read only these parquet row groups (in this order); None: all. The file's row groups
                are :func:`write_chunk_table`'s tables, one per shard (:func:`row_group_starts` gives their
                first rows).

        Returns:
            An iterator of ``pyarrow.RecordBatch``.

        Raises:
            OSError: if the file is missing.
            pyarrow.ArrowInvalid: (a ValueError) if it is not a parquet file.
        """
        import pyarrow.parquet as pq

        path = Path(path or self.chunks_path)
        pf = pq.ParquetFile(path)
        have = set(pf.schema_arrow.names)
        want = list(columns) if columns is not None else None
        if all(c in have for c in (want if want is not None else SOURCE_COLUMNS)):
            return pf.iter_batches(batch_size=batch_size, columns=want, row_groups=row_groups)
        return self._filled_batches(pf, path, want, batch_size, row_groups)

    def row_group_starts(self, path: Path | None = None) -> list[int]:
        """The first row of each parquet row group of a chunk table file (default ``chunks.parquet``).

        Returns:
            ``[0, rows of group 0, rows of groups 0-1, ...]``: one entry per row group, ascending.

        Raises:
            OSError: if the file is missing.
            pyarrow.ArrowInvalid: (a ValueError) if it is not a parquet file.
        """
        import pyarrow.parquet as pq

        meta = pq.ParquetFile(Path(path or self.chunks_path)).metadata
        starts, at = [], 0
        for g in range(meta.num_row_groups):
            starts.append(at)
            at += meta.row_group(g).num_rows
        return starts

    def _filled_batches(self, pf, path: Path, want: list[str] | None, batch_size: int,
                        row_groups: Sequence[int] | None = None) -> Iterator:
        have = set(pf.schema_arrow.names)
        read = None if want is None else [c for c in want if c in have]
        if want is not None:  # what filling needs: heading_path (section), doc_id (source)
            read += [c for c in ("doc_id", "heading_path") if c in have and c not in read]
        sources = self._sources(path) if (want is None or "source" in want) else None
        for batch in pf.iter_batches(batch_size=batch_size, columns=read, row_groups=row_groups):
            batch = fill_source_columns(batch, sources)
            yield batch if want is None else batch.select(want)

    # ---------------------------------------------------------------- shards
    def read_shard_vectors(self, name: str) -> np.ndarray:
        """A shard's vectors, memory-mapped.

        Args:
            name: The shard's name (``NNNNN``).

        Returns:
            (rows, dim), float32, read-only memory map; row i = row i of the shard's table.

        Raises:
            OSError, ValueError: if the file is missing or not a ``.npy`` array.
        """
        return np.load(self.shards_dir / f"{name}.npy", mmap_mode="r", allow_pickle=False)

    def read_shard_table(self, name: str):
        """A shard's chunk rows as a ``pyarrow.Table`` (:func:`chunk_schema`).

        Args:
            name: The shard's name (``NNNNN``).

        Returns:
            The table.

        Raises:
            ValueError: if it is missing or unreadable.
        """
        path = self.shards_dir / f"{name}.parquet"
        return read_chunk_table(path, sources=lambda: self._sources(path))


def read_chunk_table(path: Path, columns: Sequence[str] | None = None, sources=None):
    """A chunk table file (chunks.parquet or a shard's .parquet) as a ``pyarrow.Table``.

    Args:
        path: The parquet file.
        columns: Column names to read; None: all.
        sources: For a file written before :data:`SOURCE_COLUMNS`: ``{doc_id: source}``, or a callable returning
            it (called only for such a file), to fill ``source`` (:func:`fill_source_columns`); None: null.

    Returns:
        The table (:func:`chunk_schema`, or those columns); an older file's table has :data:`SOURCE_COLUMNS`
        filled.

    Raises:
        ValueError: if it is missing or unreadable.
    """
    import pyarrow.parquet as pq

    if not Path(path).is_file():
        raise ValueError(f"{Path(path).name} is missing")
    try:
        have = set(pq.ParquetFile(path).schema_arrow.names)
        want = list(columns) if columns is not None else None
        if all(c in have for c in (want if want is not None else SOURCE_COLUMNS)):
            return pq.read_table(path, columns=want)
        read = None if want is None else [c for c in want if c in have] + \
            [c for c in ("doc_id", "heading_path") if c in have and c not in want]
        table = pq.read_table(path, columns=read)
    except Exception as err:
        raise ValueError(f"{Path(path).name} is unreadable: {type(err).__name__}: {err}") from err
    table = fill_source_columns(table, sources() if callable(sources) else sources)
    return table if want is None else table.select(want)


def write_chunk_table(tables: Iterable, path: Path) -> None:
    """Write chunk tables (each of :func:`chunk_schema`) one after another into one parquet file at ``path``.

    The caller writes to a temp name and commits it (:mod:`latechunk.ingest.files`). Memory: one table at a
    time.

    Args:
        tables: ``pyarrow.Table`` s of :func:`chunk_schema`, in row order (empty ones are skipped).
        path: The file to write.

    Raises:
        OSError: if the file cannot be written.
        ValueError: if a table's schema is not :func:`chunk_schema`.
    """
    import pyarrow.parquet as pq

    with pq.ParquetWriter(path, chunk_schema()) as writer:
        for table in tables:
            if table.num_rows:
                writer.write_table(table)


def write_shard_table(table, path: Path) -> None:
    """Write one shard's chunk table to ``path`` (a temp name the caller commits).

    Args:
        table: The shard's ``pyarrow.Table`` (:func:`chunk_table`).
        path: The file to write.

    Raises:
        OSError: if the file cannot be written.
    """
    import pyarrow.parquet as pq

    pq.write_table(table, path)



def read_output(out: str | os.PathLike):
    """Read an output folder for searching.

    Args:
        out: The folder written by ``latechunk embed``.

    Returns:
        ``(index, table, manifest)``: the CPU ``faiss.Index``, the chunk table (``pyarrow.Table``, row i =
        vector id i) and the manifest dict.

    Raises:
        ValueError: if ``out`` does not exist or is not a folder, a file is missing (an unfinished run, one with a
            run.json: the message says to finish it with ``--resume``) or unreadable, or the index and table
            disagree on the row count.
    """
    folder = OutputFolder(Path(out))
    if not folder.path.exists():
        raise ValueError(f"{folder.path} does not exist (give an output folder of `latechunk embed`)")
    if not folder.path.is_dir():
        raise ValueError(f"{folder.path} is not a folder (give an output folder of `latechunk embed`)")
    folder.finish_commit()
    for name in ASSEMBLED_FILES:
        if not (folder.path / name).is_file():
            if folder.run_path.is_file():  # run.json is written first, the manifest last: a run that never ended
                raise ValueError(f"{folder.path}: {name} is missing: the folder holds an unfinished `latechunk "
                                 f"embed` run (killed or still running?, or its index could not be trained); finish "
                                 f"it with `latechunk embed INPUTS --out {folder.path} --resume` (options left out "
                                 "are the run's, from its run.json; add --index Flat if its index failed to train)")
            raise ValueError(f"{folder.path}: {name} is missing (not a latechunk output folder? run "
                             "`latechunk embed` first)")
    index = folder.read_index()
    table = folder.read_chunks()
    manifest = folder.read_manifest()
    if index.ntotal != table.num_rows:
        raise ValueError(f"{folder.path}: index has {index.ntotal} vectors but chunks.parquet has {table.num_rows} rows")
    return index, table, manifest


def build_manifest(*, created: str, finished: str, header: Mapping, settings: Mapping, dim: int, index: Mapping,
                   world_size: int, counts: Mapping, documents: list[dict], skipped: list[dict], shards: list[dict],
                   seconds: Mapping) -> dict:
    """The manifest of an output folder (``manifest.json``, format :data:`MANIFEST_FORMAT`).

    Keys, in order: ``format``, ``created``, ``finished``; the ``header`` fields (``model``: the encoder's
    description, ``strategy``, ``inputs`` as given, ``versions``); the settings that readers use at the top level
    (``mode``, ``normalize``, ``include_special``, ``long_documents``, ``macro_window``, ``macro_window_overlap``,
    ``inputs_from_out``, ``group_tokens``) and all of them under ``settings`` (= run.json's); ``dim``;
    ``index`` (the index settings plus ``ntotal`` and ``file``); ``world_size``; ``counts`` (``documents_in``,
    ``documents_embedded``, ``documents_skipped``, ``chunks``, ``content_tokens``, ``tokens_encoded``,
    ``forward_calls``); ``documents`` (``doc_id``, ``chunks``, ``sha256``, ``source``, and ``title`` when it has one, ``converted_from`` and ``converter`` for an HTML page read as markdown, per embedded document,
    in row order); ``skipped`` (``doc_id``, ``reason``, ``source``); ``degraded`` (``doc_id``, ``reason``, ``source``:
    the embedded documents read with U+FFFD for bytes that are not UTF-8, ``--encoding-errors replace``); ``shards`` (``name``, ``inputs``, ``rows``,
    ``sha256`` of its record); ``seconds`` per stage (summed over the shards, whichever run wrote them) and
    ``total`` (wall seconds of the whole run: an interrupted run's up to its last shard plus its ``--resume``).

    Args:
        created: When the run started (``run.json``'s ``created``, ``%Y-%m-%dT%H:%M:%S%z``).
        finished: When assembly finished (same format).
        header: Extra fields, written as given (``model``, ``strategy``, ``inputs``, ``versions``).
        settings: The run's settings (run.json's).
        dim: Vector dimension.
        index: The index settings (:meth:`IndexConfig.to_dict <latechunk.config.IndexConfig.to_dict>`) and
            ``ntotal``.
        world_size: Processes that wrote the shards.
        counts: The run's counts (documents, chunks, tokens, forward calls).
        documents: One dict per embedded document, in row order.
        skipped: One dict per skipped input item, in input order.
        shards: One dict per shard, in order.
        seconds: Wall seconds per stage and ``total``.

    Returns:
        The manifest dict (JSON-ready).
    """
    top = ("mode", "normalize", "include_special", "long_documents", "macro_window", "macro_window_overlap",
           "inputs_from_out", "group_tokens")
    return {
        "format": MANIFEST_FORMAT,
        "created": created,
        "finished": finished,
        **header,
        **{k: settings.get(k) for k in top},
        "settings": dict(settings),
        "dim": dim,
        "index": {**index, "file": INDEX_FILE},
        "world_size": world_size,
        "counts": dict(counts),
        "documents": documents,
        "skipped": skipped,
        # read with U+FFFD for bytes that are not UTF-8 (--encoding-errors replace): embedded, but not as written
        "degraded": [{"doc_id": d["doc_id"], "reason": d["degraded"], "source": d.get("source", "")}
                     for d in documents if d.get("degraded")],
        "shards": shards,
        "seconds": dict(seconds),
    }

