"""latechunk/index.py: faiss index_factory strings, the flat/hnsw aliases, training, dtype/layout handling (BR-015),
empty export (BR-004). IDs are compared exactly, scores with a stated tolerance (faiss ``test_contrib.py``)."""

from __future__ import annotations

import faiss
import numpy as np
import pytest

from latechunk.config import IndexConfig
from latechunk.index import add_batches, as_float32_rows, build_index, new_index, search_index


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
def test_br015_faiss_dtype_contiguity(case):
    xb = _one_hot_inputs()[case]
    before = xb.copy()
    index = build_index(xb)
    assert index.ntotal == 3 and index.d == 8
    D, I = search_index(index, xb[1:2], k=3)
    assert I[0, 0] == 1 and abs(D[0, 0] - 1.0) <= 1e-3
    np.testing.assert_array_equal(xb, before)  # the caller's buffer is untouched
    assert xb.dtype == before.dtype


def test_br004_export_of_zero_vectors_gives_empty_index():
    index = build_index(np.zeros((0, 384), np.float32))
    assert index.ntotal == 0 and index.d == 384
    D, I = search_index(index, np.ones((1, 384), np.float32), k=5)
    assert D.shape == (1, 0) and I.shape == (1, 0)


def test_flat_is_an_inner_product_flat_index_holding_the_vectors_as_given():
    """``Flat`` (and the ``flat`` alias) is the same index as ``faiss.IndexFlatIP``: same bytes, same vectors; the
    index code never normalises (the pipeline does, once)."""
    rng = np.random.default_rng(0)
    xb = (rng.standard_normal((50, 12)) * 3).astype(np.float32)  # not unit-norm on purpose
    assert IndexConfig.from_option("flat").factory == "Flat"
    index_new = build_index(xb, IndexConfig.from_option("flat"))
    index_ref = faiss.IndexFlatIP(12)
    index_ref.add(xb)
    assert index_new.metric_type == faiss.METRIC_INNER_PRODUCT
    np.testing.assert_array_equal(index_new.reconstruct_n(0, 50), xb)
    assert bytes(faiss.serialize_index(index_new)) == bytes(faiss.serialize_index(index_ref))
    D, I = search_index(index_new, xb[:1], k=1)
    ip = xb @ xb[0]
    assert I[0, 0] == int(ip.argmax()) and D[0, 0] == pytest.approx(float(ip.max()), rel=1e-5)  # raw inner products


def test_hnsw_alias_sets_m_and_beam_widths_and_finds_neighbours():
    rng = np.random.default_rng(0)
    xb = rng.standard_normal((500, 16)).astype(np.float32)
    xb /= np.linalg.norm(xb, axis=1, keepdims=True)
    config = IndexConfig.from_option("hnsw", hnsw_m=16, ef_construction=64, ef_search=64)
    assert config.factory == "HNSW16"
    assert config.to_dict() == {"factory": "HNSW16", "metric": "ip", "ef_construction": 64, "ef_search": 64}
    index = build_index(xb, config)
    assert isinstance(index, faiss.IndexHNSWFlat) and index.metric_type == faiss.METRIC_INNER_PRODUCT
    assert (index.hnsw.efConstruction, index.hnsw.efSearch) == (64, 64)
    assert index.hnsw.nb_neighbors(1) == 16  # M
    _, I = search_index(index, xb[:20], k=1)
    assert (I[:, 0] == np.arange(20)).mean() >= 0.95
    # the default beam widths are today's: efConstruction 200, efSearch 128
    h = new_index(IndexConfig.from_option("hnsw"), 8)
    assert (h.hnsw.efConstruction, h.hnsw.efSearch) == (200, 128) and h.hnsw.nb_neighbors(1) == 32


def test_a_factory_string_that_needs_training_is_trained_before_adding():
    rng = np.random.default_rng(0)
    xb = rng.standard_normal((400, 8)).astype(np.float32)
    config = IndexConfig(factory="IVF4,Flat")
    index = build_index(xb, config)
    assert isinstance(index, faiss.IndexIVFFlat) and index.is_trained and index.ntotal == 400
    index.nprobe = 4  # every list: exact
    _, I = search_index(index, xb[:10], k=1)
    ref = xb[:10] @ xb.T
    np.testing.assert_array_equal(I[:, 0], ref.argmax(axis=1))


def test_add_batches_equals_build_index_and_trains_on_the_first_rows_only():
    rng = np.random.default_rng(1)
    parts = [rng.standard_normal((n, 8)).astype(np.float32) for n in (30, 0, 50, 20)]
    xb = np.concatenate(parts)
    flat = add_batches(IndexConfig(), 8, lambda: iter(parts))
    np.testing.assert_array_equal(flat.reconstruct_n(0, flat.ntotal), xb)
    seen = []

    def batches():
        seen.append(1)
        return iter(parts)

    ivf = add_batches(IndexConfig(factory="IVF2,Flat"), 8, batches, train_max_rows=40)
    assert ivf.ntotal == 100 and len(seen) == 2  # one pass to train, one to add
    ivf_ref = faiss.index_factory(8, "IVF2,Flat", faiss.METRIC_INNER_PRODUCT)
    ivf_ref.train(xb[:40])
    ivf_ref.add(xb)
    ivf.nprobe = ivf_ref.nprobe = 2
    np.testing.assert_array_equal(search_index(ivf, xb[:5], 3)[1], ivf_ref.search(xb[:5], 3)[1])


def test_bad_factory_strings_and_untrainable_indexes_fail_clearly():
    with pytest.raises(ValueError, match="index_factory string"):
        build_index(np.eye(4, dtype=np.float32), IndexConfig(factory="NoSuchIndex"))
    with pytest.raises(ValueError, match="cannot train index 'IVF64,Flat' on 3 vectors"):
        build_index(np.eye(3, 4, dtype=np.float32), IndexConfig(factory="IVF64,Flat"))
    with pytest.raises(ValueError, match="dimension unknown"):
        build_index(np.zeros((0,), np.float32))
    with pytest.raises(ValueError, match="k must be >= 1"):
        search_index(build_index(np.eye(2, dtype=np.float32)), np.eye(2, dtype=np.float32), k=0)


def test_as_float32_rows_rejects_bad_shapes_and_values():
    with pytest.raises(ValueError, match="2-D"):
        as_float32_rows(np.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        as_float32_rows(np.array([[np.nan, 1.0]]))
