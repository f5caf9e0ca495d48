"""The chunk table: its schema, made from records, read and written as parquet files, older files filled.

Tests: ``tests/output/test_output.py`` (patch :func:`read_chunk_table` here: :class:`~latechunk.output.OutputFolder`
reads through this module).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from latechunk.output.layout import CHUNK_COLUMNS, SOURCE_COLUMNS
from latechunk.output.records import chunk_rows, section_text
from latechunk.types import Boundaries, Document


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
