"""LanceDB (``lancedb.connect(PATH)``): a table with a ``vector`` column and the exported fields as columns, its
record in the schema metadata (no ``--sync``: lancedb cannot change a table's schema metadata in place).
"""

from __future__ import annotations

from pathlib import Path

from latechunk.export.common import _client_module
from latechunk.export.source import _Batch, _Source
from latechunk.export.store import _refuse, _Writer
from latechunk.output import CHUNK_COLUMNS


def _lancedb_schema(source: _Source):
    import pyarrow as pa

    from latechunk.output import chunk_schema

    return pa.schema([pa.field("chunk_id", pa.string()), pa.field("vector_id", pa.int64()),
                      pa.field("vector", pa.list_(pa.float32(), source.out_dim)), *chunk_schema(),
                      pa.field("fields_sha256", pa.string()), pa.field("manifest_sha256", pa.string())],
                     metadata=source.metadata())


def _lancedb(source: _Source, path: Path, client, collection: str, overwrite: bool, hnsw: dict) -> _Writer:
    import pyarrow as pa

    lancedb = _client_module("lancedb")
    db = client if client is not None else lancedb.connect(str(path))
    if collection in db.list_tables().tables:
        existing = db.open_table(collection)
        n = existing.count_rows()
        if n and not overwrite:
            raise _refuse("lancedb", collection, path, n, "rows", existing.schema.metadata, source.manifest_sha256)
        db.drop_table(collection)
    schema = _lancedb_schema(source)
    table = db.create_table(collection, schema=schema)

    def write(b: _Batch) -> None:
        n = len(b.chunk_ids)
        cols = {"chunk_id": pa.array(b.chunk_ids, pa.string()), "vector_id": pa.array(b.vector_ids),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(b.x.ravel()), source.out_dim),
                **{c: b.rb.column(c) for c in CHUNK_COLUMNS},
                "fields_sha256": pa.array(b.fields, pa.string()),
                "manifest_sha256": pa.array([source.manifest_sha256] * n, pa.string())}
        table.add(pa.Table.from_pydict(cols, schema=schema))

    return _Writer(write, lambda: db.drop_table(collection, ignore_missing=True))
