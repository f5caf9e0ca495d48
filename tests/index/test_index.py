"""latechunk/index/: faiss index_factory strings, the flat/hnsw aliases, training, dtype/layout handling (BR-015),
empty export (BR-004); compact vectors (issue 11: --precision, --truncate-dim, and search on them from the CLI).
IDs are compared exactly, scores with a stated tolerance (faiss ``test_contrib.py``)."""

from __future__ import annotations

import faiss
import numpy as np
import pytest

from latechunk.config import PRECISIONS, IndexConfig
from latechunk.index import (
    add_batches,
    add_vectors,
    as_float32_rows,
    build_index,
    check_rows,
    index_bytes,
    is_binary_index,
    new_index,
    query_transform,
    search_index,
)
from latechunk.output import OutputFolder


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


def test_hnsw_search_with_k_past_its_beam_returns_k_results():
    """Trial: `search -k 5000` over an HNSW index of 2,417 vectors printed 942 hits, silently (faiss returns
    fewer than k when efSearch < k). The beam is widened to k for that search; the index keeps its own."""
    rng = np.random.default_rng(0)
    xb = rng.standard_normal((600, 16)).astype(np.float32)
    xb /= np.linalg.norm(xb, axis=1, keepdims=True)
    index = build_index(xb, IndexConfig.from_option("hnsw", hnsw_m=8, ef_construction=32, ef_search=16))
    _, I0 = index.search(xb[:3], 600)  # faiss's own search at efSearch 16
    assert (I0 < 0).any()
    _, I = search_index(index, xb[:3], k=600)
    assert (I >= 0).all() and [sorted(r) for r in I.tolist()] == [list(range(600))] * 3
    assert index.hnsw.efSearch == 16
    exact = np.argsort(-(xb[:3] @ xb.T), axis=1)[:, :50]
    assert (I[:, :50] == exact).mean() > 0.95


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


# --------------------------------------------------------------------------- compact vectors (issue 11)
# --precision float32|float16|int8|ubinary and --truncate-dim N: sentence-transformers' quantize_embeddings
# semantics, a faiss scalar quantizer or a binary flat index with float rescoring; the shards keep float32.


def _unit_rows(n: int, d: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_each_precision_builds_writes_reads_back_and_searches(tmp_path, precision):
    xb = _unit_rows(300, 64)
    config = IndexConfig(precision=precision)
    index = build_index(xb, config)
    assert index.ntotal == 300 and index.d == 64 and is_binary_index(index) == (precision == "ubinary")
    expected = {"float32": faiss.IndexFlat, "float16": faiss.IndexScalarQuantizer,
                "int8": faiss.IndexScalarQuantizer, "ubinary": faiss.IndexBinaryFlat}[precision]
    assert isinstance(index, expected)
    folder = OutputFolder(tmp_path)
    folder.write_index(index, folder.index_path)  # write_index_binary for a binary index
    back = folder.read_index()
    assert isinstance(back, expected) and back.ntotal == 300
    D, I = search_index(index, xb[:20], k=5)
    D2, I2 = search_index(back, xb[:20], k=5)
    np.testing.assert_array_equal(I, I2)
    np.testing.assert_allclose(D, D2, rtol=0, atol=1e-6)
    assert D.shape == I.shape == (20, 5) and D.dtype == np.float32 and I.dtype == np.int64
    assert (I[:, 0] == np.arange(20)).all()  # each vector finds itself first, at every precision
    assert check_rows(back, config, xb, 0) is None  # the index holds the vectors as the precision stores them
    sizes = {p: index_bytes(build_index(xb, IndexConfig(precision=p))) for p in PRECISIONS}
    assert sizes["ubinary"] < sizes["int8"] < sizes["float16"] < sizes["float32"]
    assert sizes["ubinary"] < 300 * 64 / 8 + 200  # one bit per dimension (plus a small header)


def test_int8_codes_are_quantize_embeddings_with_ranges_calibrated_on_the_corpus():
    """faiss SQ8 trained on the corpus = sentence-transformers' uint8 (int8 + 128) codes with
    calibration_embeddings=corpus: per-dimension min/max, 255 buckets, floor; a code may differ by one where a
    value lies on a bucket edge (float rounding)."""
    from sentence_transformers.util.quantization import quantize_embeddings

    xb = _unit_rows(500, 32, seed=3)
    index = build_index(xb, IndexConfig(precision="int8"))
    codes = faiss.vector_to_array(faiss.downcast_index(index).codes).reshape(500, 32).astype(int)
    st = quantize_embeddings(xb, "uint8", calibration_embeddings=xb).astype(int)
    assert (codes == st).mean() >= 0.999 and np.abs(codes - st).max() <= 1
    st_int8 = quantize_embeddings(xb, "int8", calibration_embeddings=xb).astype(int)
    np.testing.assert_array_equal(st_int8 + 128, st)  # int8 is the same codes, shifted


def test_ubinary_rescoring_ranks_the_exact_top1_first_and_matches_semantic_search_faiss():
    from sentence_transformers.util.quantization import quantize_embeddings, semantic_search_faiss

    xb = _unit_rows(1000, 128, seed=1)
    noise = _unit_rows(50, 128, seed=2)
    xq = xb[:50] + 0.3 * noise  # each query near one corpus vector: its exact float32 top-1
    xq /= np.linalg.norm(xq, axis=1, keepdims=True)
    exact = (xq @ xb.T).argmax(axis=1)
    assert (exact == np.arange(50)).all()
    index = build_index(xb, IndexConfig(precision="ubinary"))
    D, I = search_index(index, xq, k=5)
    assert (I[:, 0] == exact).all()
    assert (np.diff(D, axis=1) <= 1e-6).all()  # best first
    signs = np.where(xb[I[0]] > 0, 1.0, -1.0)  # score: cosine of the float query and the +-1 code
    np.testing.assert_allclose(D[0], signs @ xq[0] / np.sqrt(128), rtol=1e-5)
    # the same ranking as sentence-transformers' binary search with rescoring (its score is affine in ours)
    hits, _ = semantic_search_faiss(xq, corpus_embeddings=quantize_embeddings(xb, "ubinary"),
                                    corpus_precision="ubinary", top_k=5, rescore=True, rescore_multiplier=4)
    np.testing.assert_array_equal(I, [[h["corpus_id"] for h in row] for row in hits])
    # without rescoring (multiplier 1: Hamming order only) the top-1 is wrong more often or equally
    _, I1 = search_index(index, xq, k=1, rescore_multiplier=1)
    assert (I1[:, 0] == exact).mean() <= (I[:, 0] == exact).mean()


def test_ubinary_with_fewer_vectors_than_candidates_and_appended_rows():
    xb = _unit_rows(6, 16)
    config = IndexConfig(precision="ubinary")
    index = build_index(xb[:4], config)
    _, I = search_index(index, xb[:1], k=10)  # 4 results, no -1 padding
    assert I.shape == (1, 4) and sorted(I[0].tolist()) == [0, 1, 2, 3] and I[0, 0] == 0
    add_vectors(index, xb[4:], config)  # appended rows are stored as built ones
    assert index.ntotal == 6 and check_rows(index, config, xb, 0) is None
    assert search_index(index, xb[5:6], k=1)[1][0, 0] == 5
    assert search_index(build_index(np.zeros((0, 16), np.float32), config), xb[:1], k=3)[1].shape == (1, 0)


def test_truncate_dim_keeps_the_first_dimensions_and_renormalises():
    xb = _unit_rows(100, 48)
    config = IndexConfig(truncate_dim=16)
    t = query_transform(xb, config)
    assert t.shape == (100, 16) and t.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(t, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(t * np.linalg.norm(xb[:, :16], axis=1, keepdims=True), xb[:, :16], atol=1e-6)
    assert query_transform(xb, IndexConfig(truncate_dim=16, renormalize=False)).tolist() == xb[:, :16].tolist()
    np.testing.assert_array_equal(query_transform(xb, IndexConfig()), xb)  # no truncate_dim: unchanged
    index = build_index(xb, config)  # the index holds the transformed vectors; the caller's are untouched
    assert index.d == 16 and xb.shape == (100, 48)
    np.testing.assert_allclose(index.reconstruct_n(0, 100), t, atol=1e-7)
    assert search_index(index, query_transform(xb[:5], config), k=1)[1][:, 0].tolist() == list(range(5))
    with pytest.raises(ValueError, match="do not fit an index of dimension 16"):
        search_index(index, xb[:5], k=1)  # a query without query_transform
    with pytest.raises(ValueError, match="--truncate-dim 64 exceeds the model's vector dimension 48"):
        build_index(xb, IndexConfig(truncate_dim=64))
    for bad, msg in ((0, "--truncate-dim must be an integer >= 1"), (-3, ">= 1"), (2.5, ">= 1")):
        with pytest.raises(ValueError, match=msg):
            IndexConfig(truncate_dim=bad)
    with pytest.raises(ValueError, match="multiple of 8"):
        IndexConfig(precision="ubinary", truncate_dim=12)
    # one normalised dimension is +1 or -1: every score the same (a trial searched such an index); unnormalised ok
    with pytest.raises(ValueError, match="--truncate-dim 1 with normalised vectors"):
        IndexConfig(truncate_dim=1)
    assert IndexConfig(truncate_dim=1, renormalize=False).truncate_dim == 1


def test_precision_with_other_factories_and_the_manifest_record():
    assert IndexConfig(precision="int8").faiss_factory == "SQ8"
    assert IndexConfig.from_option("hnsw", precision="float16").faiss_factory == "HNSW32,SQfp16"
    assert IndexConfig(factory="IVF4,Flat", precision="int8").faiss_factory == "IVF4,SQ8"
    with pytest.raises(ValueError, match="cannot be combined with --index 'HNSW32'"):
        IndexConfig.from_option("hnsw", precision="ubinary")
    with pytest.raises(ValueError, match="sets its own encoding"):
        IndexConfig(factory="PQ8", precision="int8")
    with pytest.raises(ValueError, match="--precision must be one of float32, float16, int8, ubinary"):
        IndexConfig(precision="int4")
    xb = _unit_rows(400, 16)
    hnsw = build_index(xb, IndexConfig.from_option("hnsw", hnsw_m=8, precision="int8"))
    assert isinstance(hnsw, faiss.IndexHNSWSQ) and (search_index(hnsw, xb[:20], 1)[1][:, 0] == np.arange(20)).mean() >= 0.9
    # the manifest record: defaults left out (older folders resume), read back equal
    assert IndexConfig().to_dict() == {"factory": "Flat", "metric": "ip"}
    for c in (IndexConfig(precision="ubinary", truncate_dim=128), IndexConfig(precision="int8"),
              IndexConfig.from_option("hnsw", precision="float16", truncate_dim=64, renormalize=False)):
        assert IndexConfig.from_dict({**c.to_dict(), "ntotal": 5, "file": "index.faiss"}) == c
    assert IndexConfig(precision="ubinary").to_dict() == {"factory": "Flat", "metric": "hamming",
                                                          "precision": "ubinary", "rescore_multiplier": 4}


def test_check_rows_finds_a_row_that_differs():
    xb = _unit_rows(50, 32)
    for precision in PRECISIONS:
        config = IndexConfig(precision=precision)
        index = build_index(xb, config)
        other = xb.copy()
        other[7] = -other[7]
        assert "row 7" in check_rows(index, config, other, 0)
        assert check_rows(index, config, xb[10:], 10) is None


@pytest.mark.parametrize("config", [IndexConfig.from_option("hnsw", hnsw_m=8, precision="float16"),
                                    IndexConfig.from_option("hnsw", hnsw_m=8, precision="int8"),
                                    IndexConfig(factory="SQ8"), IndexConfig(factory="SQ4"),
                                    IndexConfig(factory="SQfp16"), IndexConfig(factory="HNSW8,SQ8"),
                                    IndexConfig(factory="HNSW8_SQ4")],
                         ids=lambda c: f"{c.factory}-{c.precision}")
def test_check_rows_of_indexes_with_compact_storage(config):
    """`embed --index hnsw --precision int8` then `verify` reported its own rows as different (max abs diff
    4.5e-4): the SQ8 step was looked for on the HNSW index, which keeps its quantizer in its storage; the second
    trial found the same for factory strings with their own codes under float32 (`--index SQ8`, `HNSW32,SQ8`).
    The tolerance comes from the index's storage; a row that differs is still found."""
    xb = _unit_rows(50, 32)
    index = build_index(xb, config)
    assert check_rows(index, config, xb, 0) is None
    other = xb.copy()
    other[7] = -other[7]
    assert "row 7" in check_rows(index, config, other, 0)


def test_check_rows_leaves_lossy_product_codes_unchecked():
    """PQ codes give a row back only approximately, with no bound: not checked (ids hold by construction)."""
    xb = _unit_rows(300, 16)
    config = IndexConfig(factory="PQ4x4")
    assert check_rows(build_index(xb, config), config, -xb, 0) is None


# --------------------------------------------------------------------------- real MiniLM vectors
@pytest.fixture(scope="module")
def minilm_vectors():
    """Late-free MiniLM vectors of 120 passages (400 characters of three Chroma corpora) and 30 questions."""
    import csv

    from latechunk.eval.datasets import data_root
    from tests.models import minilm_encoder

    root = data_root() / "chroma_chunking_eval"
    if not (root / "questions_df.csv").exists():
        pytest.skip("../shared/data is not present")
    text = "".join((root / "corpora" / n).read_text(encoding="utf-8")
                   for n in ("state_of_the_union.md", "chatlogs.md", "wikitexts.md"))
    passages = [text[i : i + 400] for i in range(0, len(text), 400)][:120]
    with open(root / "questions_df.csv", newline="", encoding="utf-8") as f:
        questions = [r["question"] for r in csv.DictReader(f)][:30]
    encoder = minilm_encoder()
    return encoder.encode(passages), encoder.encode_query(questions)


#: stated bounds: mean share of float32's exact top-5 that each compact index also returns in its top 5, on
#: real MiniLM vectors (measured on these 120 passages and 30 questions: float16 1.00, int8 0.99; ubinary 0.74)
TOP5_OVERLAP_BOUND = {"float16": 0.98, "int8": 0.9}


@pytest.mark.parametrize("precision", ["float16", "int8"])
def test_float16_and_int8_keep_float32s_top5_on_real_minilm_vectors(minilm_vectors, precision):
    xb, xq = minilm_vectors
    _, ref = search_index(build_index(xb), xq, 5)
    _, got = search_index(build_index(xb, IndexConfig(precision=precision)), xq, 5)
    overlap = np.mean([len(set(a) & set(b)) / 5 for a, b in zip(got.tolist(), ref.tolist())])
    assert overlap >= TOP5_OVERLAP_BOUND[precision], overlap


# --------------------------------------------------------------------------- the command line
def _cli_corpus():
    from latechunk.eval.datasets import data_root

    src = data_root() / "chroma_chunking_eval" / "corpora" / "state_of_the_union.md"
    if not src.exists():
        pytest.skip("../shared/data is not present")
    return src


def test_a_bad_truncate_dim_or_precision_fails_before_torch_loads(tmp_path):
    """Each bad setting exits 2 with its message, writes nothing and imports no torch (one subprocess)."""
    import subprocess
    import sys

    src = _cli_corpus()
    cases = [(["--truncate-dim", "0"], "--truncate-dim must be an integer >= 1"),
             (["--truncate-dim", "100", "--precision", "ubinary"], "give a multiple of 8"),
             (["--truncate-dim", "1000"], "--truncate-dim 1000 exceeds the model's vector dimension 384"),
             (["--precision", "int4"], "--precision must be one of float32, float16, int8, ubinary"),
             (["--precision", "ubinary", "--index", "hnsw"], "cannot be combined with --index 'HNSW32'")]
    code = f"""
import sys
from typer.testing import CliRunner
from latechunk.cli import app
for i, (args, msg) in enumerate({cases!r}):
    out = {str(tmp_path)!r} + f"/out{{i}}"
    res = CliRunner().invoke(app, ["embed", {str(src)!r}, "--out", out, "--quiet", *args])
    text = " ".join(res.output.replace("│", " ").split())
    assert res.exit_code == 2 and msg in text, (args, res.exit_code, text)
heavy = sorted(m for m in ("torch", "transformers") if m in sys.modules)
assert not heavy, heavy
print("ok")
"""
    res = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stdout + res.stderr
    assert not any(tmp_path.iterdir())


def test_search_on_a_compact_index_from_the_cli(tmp_path):
    """embed --precision ubinary --truncate-dim 256: the index is binary (256 bits a vector), the shards keep
    float32 384-dim vectors, verify passes, and `search` (which applies the manifest's query transform) finds the
    credit-card answer."""
    import json

    from typer.testing import CliRunner

    from latechunk.cli import app

    src = _cli_corpus()
    out = tmp_path / "out"
    runner = CliRunner()
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--device", "cpu", "--quiet",
                              "--precision", "ubinary", "--truncate-dim", "256"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["index"]["precision"] == "ubinary" and manifest["index"]["truncate_dim"] == 256
    assert manifest["settings"]["index"]["precision"] == "ubinary" and manifest["dim"] == 384
    index = OutputFolder(out).read_index()
    assert isinstance(index, faiss.IndexBinaryFlat) and index.d == 256
    assert OutputFolder(out).read_shard_vectors("00000").shape[1] == 384
    res = runner.invoke(app, ["verify", str(out)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["search", str(out), "How much is the administration cutting credit card late fees to?",
                              "-k", "3", "--json", "--device", "cpu"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    hits = json.loads(res.output)
    assert any(h["char_start"] <= 27346 and h["char_end"] >= 27425 for h in hits)
    # a resumed/appended run must keep the setting: another --precision is refused as a different setting
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--device", "cpu", "--quiet", "--resume",
                              "--precision", "int8", "--truncate-dim", "256"])
    assert res.exit_code != 0 and "precision" in res.output
    assert "latechunk reindex" in " ".join(res.output.split())  # a finished folder's index: reindex changes it
