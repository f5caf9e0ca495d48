"""Arrow IPC files (``.arrow``, stream or file format) and Hugging Face ``datasets`` folders written by
``save_to_disk`` (:func:`hf_dataset_kind`; their ``.arrow`` shards memory-mapped and read in record batches, without
importing ``datasets``), and their rows counted without reading any text."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from latechunk.io.records import DEFAULT_FIELDS
from latechunk.io.tables import _batch_pydict, _columns_reason, _table_columns, _table_records
from latechunk.types import Document, RecordFields, Skipped

#: rows turned into Python objects at a time from an Arrow record batch (the batch itself is memory-mapped)
ARROW_BATCH_ROWS = 256


def hf_dataset_kind(d: Path) -> str:
    """Whether ``d`` is a folder written by Hugging Face ``datasets``' ``save_to_disk`` (no ``datasets`` import).

    Args:
        d: A folder.

    Returns:
        ``"dataset_dict"`` for a ``DatasetDict`` folder (a ``dataset_dict.json`` file, one sub-folder per split),
        ``"dataset"`` for a ``Dataset`` folder (``state.json`` beside ``dataset_info.json``), else ``""``.
    """
    if (d / "dataset_dict.json").is_file():
        return "dataset_dict"
    if (d / "state.json").is_file() and (d / "dataset_info.json").is_file():
        return "dataset"
    return ""


def _arrow_batches(source) -> tuple:
    """``(schema, record batches)`` of an Arrow IPC file or stream (``source``: an open, memory-mapped file)."""
    import pyarrow as pa

    magic = source.read(6)
    source.seek(0)
    if magic == b"ARROW1":  # the IPC file format (Feather v2); datasets writes the stream format
        reader = pa.ipc.open_file(source)
        return reader.schema, (reader.get_batch(i) for i in range(reader.num_record_batches))
    reader = pa.ipc.open_stream(source)
    return reader.schema, iter(reader)


def _iter_arrow_rows(files: Sequence[Path], root_name: str, what: str,
                     fields: RecordFields = DEFAULT_FIELDS) -> Iterator[Document | Skipped]:
    """Rows of one table stored as Arrow files read in order (the shards of a dataset split, or one ``.arrow``
    file), as Documents with sources ``root_name:row`` (``row`` 0-based over all the files).

    Each record batch is memory-mapped and turned into Python objects :data:`ARROW_BATCH_ROWS` rows at a time, so
    a large table is never held in memory whole. Missing id/text columns give one Skipped (``root_name``) naming
    the columns there are; a damaged file ends the table with one Skipped naming the file and the first row not
    read.
    """
    import pyarrow as pa

    row = 0
    cols: list[str] | None = None
    for f in files:
        try:
            with pa.memory_map(str(f)) as source:
                schema, batches = _arrow_batches(source)
                if cols is None:
                    cols = _table_columns(schema.names, fields)
                    if cols is None:
                        yield Skipped(root_name, _columns_reason(what, schema.names, fields), root_name)
                        return
                for batch in batches:
                    batch = batch.select(cols)
                    for start in range(0, batch.num_rows, ARROW_BATCH_ROWS):
                        data, bad = _batch_pydict(batch.slice(start, ARROW_BATCH_ROWS))
                        for item in _table_records(data, bad, cols[0], fields, root_name, row):
                            yield item
                            row += 1
        except Exception as err:  # noqa: BLE001  (pyarrow raises several types for a damaged file)
            where = f"{root_name}:{row}"
            yield Skipped(where, f"{what} rows from {row} on unreadable ({f.name}: {type(err).__name__}: {err})",
                          where)
            return
    if row == 0:  # the columns are there (or no shard at all), the rows not: one item, never nothing
        yield Skipped(root_name, f"empty {what}: no rows", root_name)


def _dataset_splits(d: Path, root_name: str) -> Iterator[tuple[str, list[Path], str]]:
    """The tables of a ``save_to_disk`` folder: ``(root name, Arrow files in order, reason)`` per split, with
    ``reason`` ``""`` or why the split cannot be read (its files are then ``[]``)."""
    if hf_dataset_kind(d) == "dataset_dict":
        try:
            splits = json.loads((d / "dataset_dict.json").read_text(encoding="utf-8"))["splits"]
            if not isinstance(splits, list) or not all(isinstance(s, str) and s and Path(s).name == s for s in splits):
                raise ValueError(f"'splits' must be a list of folder names, got {splits!r}")
        except (OSError, ValueError, KeyError, TypeError) as err:
            yield root_name, [], f"unreadable Hugging Face DatasetDict folder: dataset_dict.json: {err}"
            return
        if not splits:  # one item, never nothing
            yield root_name, [], "Hugging Face DatasetDict folder lists no splits (dataset_dict.json)"
            return
        parts = [(f"{root_name}/{s}", d / s) for s in splits]
    else:
        parts = [(root_name, d)]
    for name, folder in parts:
        try:
            listed = json.loads((folder / "state.json").read_text(encoding="utf-8"))["_data_files"]
            files = [e["filename"] for e in listed]
            if not all(isinstance(f, str) and f and Path(f).name == f for f in files):
                raise ValueError(f"'_data_files' must name files inside the folder, got {files!r}")
        except (OSError, ValueError, KeyError, TypeError) as err:
            yield name, [], f"unreadable Hugging Face dataset folder: state.json: {type(err).__name__}: {err}"
            continue
        missing = [f for f in files if not (folder / f).is_file()]
        if missing:
            yield name, [], f"Hugging Face dataset folder lacks data file(s) listed in state.json: {', '.join(missing)}"
            continue
        yield name, [folder / f for f in files], ""


def _iter_hf_dataset(d: Path, root_name: str, fields: RecordFields = DEFAULT_FIELDS) -> Iterator[Document | Skipped]:
    """Rows of every split of a Hugging Face ``save_to_disk`` folder (see the module doc), split by split."""
    for name, files, reason in _dataset_splits(d, root_name):
        if reason:
            yield Skipped(name, reason, name)
        else:
            yield from _iter_arrow_rows(files, name, "Hugging Face dataset", fields)


def _count_arrow(files: Sequence[Path], fields: RecordFields = DEFAULT_FIELDS) -> tuple[int, int]:
    """``(items, text bytes)`` that :func:`_iter_arrow_rows` yields from these files, from the record batches'
    lengths and the ``text`` column's offsets (memory-mapped: no text is read). A table without the needed
    columns or a damaged file counts one item (its Skipped)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = nbytes = 0
    try:
        for i, f in enumerate(files):
            with pa.memory_map(str(f)) as source:
                schema, batches = _arrow_batches(source)
                if i == 0 and _table_columns(schema.names, fields) is None:
                    return 1, 0
                for batch in batches:
                    rows += batch.num_rows
                    nbytes += pc.sum(pc.binary_length(batch.column(fields.text))).as_py() or 0
    except Exception:  # noqa: BLE001  (iter_inputs reports it as one skipped item)
        return rows + 1, nbytes
    return rows or 1, nbytes  # no rows: one Skipped ("empty ...: no rows")


def _count_table_input(f: Path, rel: str, fields: RecordFields = DEFAULT_FIELDS) -> tuple[int, int]:
    """``(items, text bytes)`` of a Hugging Face dataset folder or an ``.arrow`` file (for :func:`count_inputs`
    and :func:`count_input_bytes`)."""
    if not f.is_dir():
        return _count_arrow([f], fields)
    n = nbytes = 0
    for _name, files, reason in _dataset_splits(f, rel):
        rows, size = _count_arrow(files, fields) if not reason else (1, 0)
        n, nbytes = n + rows, nbytes + size
    return n, nbytes
