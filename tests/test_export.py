"""FAISS export: dtype/layout handling without mutation (BR-015), empty export (BR-004), HNSW, files."""

from __future__ import annotations

import numpy as np
import pytest

from latechunk.export import IndexSpec, build_index, chunk_table, load_output, search_index, write_output
from latechunk.types import Boundaries, Document


def _one_hot_inputs():
    w = np.zeros((3, 16), np.float32)
    for i in range(3):
        w[i, 2 * i] = 1
    return {
        "float16": np.eye(3, 8, dtype=np.float16),
        "noncontiguous": w[:, ::2],
        "float64": np.eye(3, 8, dtype=np.float64),
    }


@pytest.mark.parametrize("case", ["float16", "noncontiguous", "float64"])
def test_br015_faiss_dtype_contiguity(case, tmp_path):
    xb = _one_hot_inputs()[case]
    before = xb.copy()
    index = build_index(xb, IndexSpec(metric="cosine"))
    assert index.ntotal == 3 and index.d == 8
    D, I = search_index(index, xb[1:2], k=3)
    assert I[0, 0] == 1 and abs(D[0, 0] - 1.0) <= 1e-3
    np.testing.assert_array_equal(xb, before)  # the caller's buffer is untouched
    assert xb.dtype == before.dtype
    # the id map: vector id i is row i of the chunk table
    docs = [Document("a.md", "alpha beta gamma"), Document("b.md", "delta")]
    b0 = Boundaries("a.md", [[1, 2], [2, 4]], [[0, 5], [6, 16]])
    b1 = Boundaries("b.md", [[1, 2]], [[0, 5]])
    table = chunk_table(docs, [b0, b1], "fixed:size=2")
    write_output(tmp_path, index, table, {"ok": True})
    _, table2, _ = load_output(tmp_path)
    row = table2.slice(int(I[0, 0]), 1).to_pylist()[0]
    assert (row["doc_id"], row["chunk_index"]) == ("a.md", 1)
    assert row["text"] == "beta gamma"


def test_br004_export_of_zero_vectors_gives_empty_index(tmp_path):
    index = build_index(np.zeros((0, 384), np.float32), IndexSpec())
    assert index.ntotal == 0 and index.d == 384
    D, I = search_index(index, np.ones((1, 384), np.float32), k=5)
    assert D.shape == (1, 0) and I.shape == (1, 0)
    write_output(tmp_path, index, chunk_table([], [], "fixed"), {})
    assert load_output(tmp_path)[0].ntotal == 0


def test_hnsw_records_parameters_and_finds_neighbours():
    rng = np.random.default_rng(0)
    xb = rng.standard_normal((500, 16)).astype(np.float32)
    spec = IndexSpec(kind="hnsw", hnsw_m=16, ef_construction=64, ef_search=64)
    index = build_index(xb, spec)
    assert spec.to_dict() == {"kind": "hnsw", "metric": "cosine", "hnsw_m": 16, "ef_construction": 64, "ef_search": 64}
    _, I = search_index(index, xb[:20], k=1)
    assert (I[:, 0] == np.arange(20)).mean() >= 0.95


def test_index_spec_rejects_bad_values():
    with pytest.raises(ValueError, match="flat"):
        IndexSpec(kind="ivf")
    with pytest.raises(ValueError, match=">= 1"):
        IndexSpec(kind="hnsw", hnsw_m=0)


def test_load_output_detects_row_count_mismatch(tmp_path):
    index = build_index(np.eye(2, 4, dtype=np.float32))
    docs = [Document("a", "alpha beta")]
    table = chunk_table(docs, [Boundaries("a", [[1, 2]], [[0, 5]])], "fixed")
    with pytest.raises(ValueError, match="2 vectors but the chunk table has 1 rows"):
        write_output(tmp_path, index, table, {})
