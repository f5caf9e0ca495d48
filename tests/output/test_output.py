"""latechunk/output.py: the output folder's contract (chunk table schema, chunk records, reading with clear errors)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from latechunk.index import build_index
from latechunk.output import (
    CHUNK_COLUMNS,
    RECORD_COLUMNS,
    OutputFolder,
    chunk_rows,
    chunk_schema,
    chunk_table,
    read_output,
    search_records,
)
from latechunk.types import Boundaries, Document

DOCS = [Document("a.md", "alpha beta gamma"), Document("b.md", "delta")]
BOUNDS = [Boundaries("a.md", [[1, 2], [2, 4]], [[0, 5], [6, 16]], heading_paths=[("A",), ("A", "B")]),
          Boundaries("b.md", [[1, 2]], [[0, 5]])]


def _write_folder(path, index, table, manifest) -> None:
    """A minimal output folder (what ingest's assembly writes, without shards)."""
    import faiss

    folder = OutputFolder(path)
    path.mkdir(parents=True, exist_ok=True)
    faiss.write_index(index, str(folder.index_path))
    pq.write_table(table, folder.chunks_path)
    folder.manifest_path.write_bytes(OutputFolder.json_bytes(manifest, indent=2))


def test_chunk_table_schema_is_todays():
    """The columns and types of chunks.parquet are part of the contract (the file must stay byte-identical)."""
    schema = chunk_schema()
    assert tuple(schema.names) == CHUNK_COLUMNS == ("doc_id", "chunk_index", "char_start", "char_end", "token_start",
                                                    "token_end", "text", "heading_path", "strategy", "title",
                                                    "title_from", "section", "header", "source", "url",
                                                    "metadata")
    assert [str(t) for t in schema.types] == ["string", "int32", "int32", "int32", "int32", "int32", "string",
                                              "list<item: string>", "string"] + ["string"] * 7
    table = chunk_table(DOCS, BOUNDS, "fixed:size=2")
    assert table.schema.equals(schema)
    assert table.to_pylist()[1] == {"doc_id": "a.md", "chunk_index": 1, "char_start": 6, "char_end": 16,
                                    "token_start": 2, "token_end": 4, "text": "beta gamma",
                                    "heading_path": ["A", "B"], "strategy": "fixed:size=2", "title": "",
                                    "title_from": "none", "section": "A > B", "header": "[A > B]", "source": "",
                                    "url": None, "metadata": None}
    assert chunk_table([], [], "fixed").num_rows == 0


def test_chunk_rows_are_the_rows_of_the_table_and_exact_slices():
    rows = [r for d, b in zip(DOCS, BOUNDS) for r in chunk_rows(d, b, "s")]
    assert rows == chunk_table(DOCS, BOUNDS, "s").to_pylist()
    assert all(r["text"] == d.text[r["char_start"]:r["char_end"]] for r in rows for d in DOCS if d.doc_id == r["doc_id"])
    with pytest.raises(ValueError, match="paired with boundaries"):
        chunk_rows(DOCS[1], BOUNDS[0], "s")


def test_read_output_and_search_records_map_vector_ids_to_rows(tmp_path):
    xb = np.eye(3, 8, dtype=np.float32)
    index = build_index(xb)
    _write_folder(tmp_path, index, chunk_table(DOCS, BOUNDS, "fixed:size=2"), {"normalize": True})
    index2, table, manifest = read_output(tmp_path)
    assert index2.ntotal == 3 and manifest == {"normalize": True}
    D, I = index2.search(xb[1:2], 2)
    records = search_records(table, D[0], I[0])
    assert [r["rank"] for r in records] == [1, 2]
    assert (records[0]["doc_id"], records[0]["chunk_index"], records[0]["text"]) == ("a.md", 1, "beta gamma")
    assert list(records[0]) == ["rank", "score", "vector_id", *RECORD_COLUMNS]
    assert records[0]["score"] == pytest.approx(1.0, abs=1e-6)
    # -1 ids (fewer hits than asked) are dropped
    assert len(search_records(table, np.array([0.5, 0.0]), np.array([2, -1]))) == 1
    # an id beyond the table (an index.ivfdata of another assembly: trial 2's copied folder crashed with an
    # ArrowIndexError traceback) is a clear error
    with pytest.raises(ValueError, match="returned vector id 4409461242399232619, but chunks.parquet has 3 rows"):
        search_records(table, np.array([0.5, 0.4]), np.array([0, 4409461242399232619]))


def test_read_output_errors_name_the_file(tmp_path):
    with pytest.raises(ValueError, match="index.faiss is missing"):
        read_output(tmp_path)
    index = build_index(np.eye(2, 4, dtype=np.float32))
    table = chunk_table(DOCS[:1], [Boundaries("a.md", [[1, 2]], [[0, 5]])], "fixed")
    _write_folder(tmp_path, index, table, {})
    with pytest.raises(ValueError, match="2 vectors but chunks.parquet has 1 rows"):
        read_output(tmp_path)
    data = OutputFolder(tmp_path).index_path.read_bytes()
    OutputFolder(tmp_path).index_path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="unreadable"):
        read_output(tmp_path)
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(ValueError, match="manifest.json is unreadable"):
        OutputFolder(tmp_path).read_manifest()


def test_shard_names_and_json_format():
    folder = OutputFolder("x")
    assert folder.shard_path(7, "npy").as_posix() == "x/shards/00007.npy"
    assert OutputFolder.shard_number("00012.parquet") == 12 and OutputFolder.shard_number("notes.txt") is None
    assert OutputFolder.json_bytes({"a": "é"}) == json.dumps({"a": "é"}, indent=1, ensure_ascii=False).encode() + b"\n"
    assert pa.types.is_list(chunk_schema().field("heading_path").type)


def test_search_records_of_an_index_with_0_vectors_are_empty():
    """Issue 10: `table.take([])` raised ArrowNotImplementedError (an untyped empty list is a null array)."""
    empty = chunk_table([], [], "fixed:size=8,overlap=0")
    assert empty.num_rows == 0
    assert search_records(empty, np.zeros(0, np.float32), np.zeros(0, np.int64)) == []
    assert search_records(empty, np.full(3, -1.0, np.float32), np.full(3, -1, np.int64)) == []
