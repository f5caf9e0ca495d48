"""Parquet files (``id``/``text`` columns, optional ``title``), read in row batches of the needed columns."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from latechunk.io.records import DEFAULT_FIELDS
from latechunk.io.tables import _batch_pydict, _columns_reason, _table_columns, _table_records
from latechunk.types import Document, RecordFields, Skipped

PARQUET_BATCH_ROWS = 256


def _iter_parquet(path: Path, root_name: str, fields: RecordFields = DEFAULT_FIELDS) -> Iterator[Document | Skipped]:
    """Rows of a parquet file with ``id`` (or ``_id``/``doc_id``) and ``text`` columns, ``title`` optional.

    Read in batches of :data:`PARQUET_BATCH_ROWS` rows of the needed columns only (row group by row group), so a
    large file is never held in memory whole.
    """
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as err:  # noqa: BLE001  (pyarrow raises several types for a damaged file)
        yield Skipped(root_name, f"unreadable parquet: {type(err).__name__}: {err}", root_name)
        return
    names = set(pf.schema_arrow.names)
    cols = _table_columns(list(names), fields)
    if cols is None:
        yield Skipped(root_name, _columns_reason("parquet", list(names), fields), root_name)
        return
    id_col = cols[0]
    row = 0
    batches = pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=cols)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            if row == 0:  # the columns are there, the rows not: one item, never nothing
                yield Skipped(root_name, "empty parquet file: no rows", root_name)
            return
        except Exception as err:  # noqa: BLE001  (a damaged row group ends the file, listed)
            where = f"{root_name}:{row}"
            yield Skipped(where, f"parquet rows from {row} on unreadable: {type(err).__name__}: {err}", where)
            return
        yield from _table_records(*_batch_pydict(batch), id_col, fields, root_name, row)
        row += batch.num_rows
