"""verify's row reader (latechunk.verify._RowReader): rows taken at any place, in any order, equal the table's
slice, and a jump back re-reads from the row group (one per shard) that holds the row, not from row 0."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq

from latechunk.output import OutputFolder
from latechunk.verify import _RowReader


def _folder(tmp_path, groups=(5, 3, 7, 1, 4)):
    schema = pa.schema([("doc_id", pa.string()), ("chunk_index", pa.int32())])
    folder = OutputFolder(tmp_path)
    rows = 0
    with pq.ParquetWriter(folder.chunks_path, schema) as writer:
        for n in groups:  # one row group per table written, as write_chunk_table writes one per shard
            writer.write_table(pa.table({"doc_id": [f"d{rows + i}" for i in range(n)],
                                         "chunk_index": list(range(rows, rows + n))}, schema=schema))
            rows += n
    return folder, rows


def test_row_group_starts(tmp_path):
    folder, _ = _folder(tmp_path)
    assert folder.row_group_starts() == [0, 5, 8, 15, 16]


def test_take_at_any_order_equals_the_slice(tmp_path):
    folder, total = _folder(tmp_path)
    rng = random.Random(0)
    reader = _RowReader(folder, ["doc_id", "chunk_index"])
    for _ in range(200):
        start = rng.randrange(total)
        n = rng.randrange(1, total - start + 1)
        got = reader.take_at(start, n)
        assert got.column("chunk_index").to_pylist() == list(range(start, start + n))
    assert reader.restarts > 0


def test_a_jump_back_reads_from_the_row_group_holding_the_row(tmp_path, monkeypatch):
    folder, total = _folder(tmp_path)
    asked = []
    real = OutputFolder.iter_chunk_batches

    def spy(self, *args, **kwargs):
        asked.append(kwargs.get("row_groups"))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(OutputFolder, "iter_chunk_batches", spy)
    reader = _RowReader(folder, ["doc_id", "chunk_index"])
    assert reader.take_at(16, 4).column("chunk_index").to_pylist() == [16, 17, 18, 19]
    assert reader.take_at(9, 2).column("chunk_index").to_pylist() == [9, 10]  # back into group 2 (rows 8-14)
    assert list(asked[-1]) == [2, 3, 4]
    assert reader.take_at(0, 1).column("chunk_index").to_pylist() == [0]
    assert list(asked[-1]) == [0, 1, 2, 3, 4]
    assert reader.take(total).num_rows == total - 1  # the rest from row 1 on
