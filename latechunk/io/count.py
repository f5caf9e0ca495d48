"""Counting the inputs ahead, for a progress bar's total: items (:func:`count_inputs`) and bytes of document text
(:func:`count_input_bytes`), from listings, sizes and table footers, without parsing anything."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from latechunk.io.arrow import _count_table_input
from latechunk.io.records import DEFAULT_FIELDS
from latechunk.io.walk import _input_files
from latechunk.types import RecordFields


def count_inputs(inputs: Sequence[str | os.PathLike], fields: RecordFields = DEFAULT_FIELDS) -> int:
    """About how many items :func:`iter_inputs` yields (for a progress bar's total), without parsing anything.

    Files and folders are listed as :func:`iter_inputs` lists them; a JSONL file counts its lines that are not
    blank, a parquet file the rows in its footer, an Arrow file or Hugging Face dataset folder the rows of its
    record batches (memory-mapped; a split without id/text columns counts 1); a table without rows counts 1 (its
    "empty" Skipped), and so does anything unreadable. Exact except for JSONL files in
    UTF-16/32 (counted by line breaks) and inputs that change while they are read.

    Args:
        inputs: Input paths as given to :func:`iter_inputs` (missing ones count 0).
        fields: The record fields (:class:`RecordFields`; a table without its id/text columns counts 1).

    Returns:
        The estimated number of input items (documents and skipped items).
    """
    n = 0
    for _root, items in _input_files([Path(x) for x in inputs if Path(x).exists()]):
        for f, rel, reason in items:
            suffix = f.suffix.lower()
            if reason:
                n += 1
                continue
            try:
                if f.is_dir() or suffix == ".arrow":
                    n += _count_table_input(f, rel, fields)[0]
                elif suffix == ".jsonl":
                    with open(f, "rb") as fh:
                        n += sum(1 for line in fh if line.strip()) or 1
                elif suffix == ".parquet":
                    import pyarrow.parquet as pq

                    n += pq.ParquetFile(f).metadata.num_rows or 1
                else:
                    n += 1
            except Exception:  # noqa: BLE001  (iter_inputs reports it as one skipped item)
                n += 1
    return n


def count_input_bytes(inputs: Sequence[str | os.PathLike], fields: RecordFields = DEFAULT_FIELDS) -> int:
    """About how many bytes of document text (UTF-8) :func:`iter_inputs` yields, for a progress bar's total,
    without reading any text.

    Files and folders are listed as :func:`iter_inputs` lists them. A text file counts its size (exact for
    UTF-8; its BOM and UTF-16/32 make it an estimate), a JSONL file its size (its ids and JSON syntax included:
    an overestimate), a parquet file the uncompressed size of its ``text`` column from the footer, an Arrow file
    or Hugging Face dataset folder the UTF-8 length of its ``text`` column (from the memory-mapped offsets);
    files that are not read count 0.

    Args:
        inputs: Input paths as given to :func:`iter_inputs` (missing ones count 0).
        fields: The record fields (:class:`RecordFields`): a table's text column is ``fields.text``.

    Returns:
        The estimated bytes of document text.
    """
    n = 0
    for _root, items in _input_files([Path(x) for x in inputs if Path(x).exists()]):
        for f, rel, reason in items:
            if reason:
                continue
            try:
                if f.is_dir() or f.suffix.lower() == ".arrow":
                    n += _count_table_input(f, rel, fields)[1]
                elif f.suffix.lower() == ".parquet":
                    import pyarrow.parquet as pq

                    meta = pq.ParquetFile(f).metadata
                    for g in range(meta.num_row_groups):
                        rg = meta.row_group(g)
                        n += sum(rg.column(c).total_uncompressed_size for c in range(rg.num_columns)
                                 if rg.column(c).path_in_schema == fields.text)
                else:
                    n += f.stat().st_size
            except Exception:  # noqa: BLE001, S112  (iter_inputs reports it as a skipped item)
                continue
    return n
