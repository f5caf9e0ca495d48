"""Fused mode: each chunk's late and naive vectors, unit-normalised and summed (latechunk.pipeline.fused_vectors),
in the pipeline, `latechunk embed --mode fused` and `latechunk compare --modes ...,fused` (eval/harness.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.config import PipelineConfig
from latechunk.eval.harness import run_compare
from latechunk.pipeline import embed, fused_chunk_vectors, fused_vectors
from latechunk.types import ChunkVectors, Document
from tests.eval.test_eval_harness import _config, _write_dataset
from tests.models import minilm_encoder

DOCS = [Document("a", "Late chunking pools token states per chunk. The encoder reads the document once. " * 12),
        Document("b", "The river flooded the valley in spring. The levees broke at Mounds Landing. " * 10)]


def _unit(v):
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_fused_vectors_sum_the_unit_vectors_and_rank_by_the_mean_cosine():
    rng = np.random.default_rng(0)
    late, naive = rng.normal(size=(50, 16)).astype(np.float32), 3 * rng.normal(size=(50, 16)).astype(np.float32)
    f = fused_vectors(late, naive)
    assert f.shape == (50, 16) and f.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(f, axis=1), 1.0, atol=1e-5)
    raw = fused_vectors(late, naive, normalize=False)  # the sum itself: norm in [0, 2]
    np.testing.assert_allclose(raw, _unit(late) + _unit(naive), atol=1e-6)
    assert (np.linalg.norm(raw, axis=1) <= 2 + 1e-5).all()
    # a query's dot product with the unnormalised sum is the sum of its two cosines (each view counts alike,
    # whatever the norms of the inputs)
    q = _unit(rng.normal(size=(1, 16)).astype(np.float32))
    np.testing.assert_allclose(raw @ q[0], _unit(late) @ q[0] + _unit(naive) @ q[0], atol=1e-5)
    # renormalised (the default): that sum over the sum vector's length sqrt(2 + 2 cos(late, naive))
    agree = (_unit(late) * _unit(naive)).sum(axis=1)
    np.testing.assert_allclose(f @ q[0], (_unit(late) @ q[0] + _unit(naive) @ q[0]) / np.sqrt(2 + 2 * agree),
                               atol=1e-5)
    with pytest.raises(ValueError, match="differ in shape"):
        fused_vectors(late, naive[:49])


def test_the_pipeline_fuses_the_late_and_naive_vectors_of_the_same_chunks():
    enc = minilm_encoder()
    spec = "fixed:size=32"
    every = embed(DOCS, enc, PipelineConfig((spec,), modes=("late", "naive", "fused"))).run(spec)
    late, naive, fused = (every.vectors[m] for m in ("late", "naive", "fused"))
    assert isinstance(fused, ChunkVectors) and fused.mode == "fused"
    assert fused.doc_ids == late.doc_ids and len(fused.vectors) == len(late.vectors) > 4
    np.testing.assert_allclose(fused.vectors, fused_vectors(late.vectors, naive.vectors), atol=1e-6)
    # not either of its parts
    assert not np.allclose(fused.vectors, late.vectors, atol=1e-3)
    assert not np.allclose(fused.vectors, naive.vectors, atol=1e-3)
    assert every.tokens_encoded["fused"] == every.tokens_encoded["late"] + every.tokens_encoded["naive"]
    # fused alone computes both halves but keeps only its own vectors
    alone = embed(DOCS, enc, PipelineConfig((spec,), modes=("fused",))).run(spec)
    assert list(alone.vectors) == ["fused"]
    np.testing.assert_allclose(alone.vectors["fused"].vectors, fused.vectors, atol=1e-5)


def test_fused_chunk_vectors_of_late_and_naive_made_apart_equal_the_pipelines_fused_vectors():
    """Late and naive ChunkVectors made apart (compare: one pass's late, the first pass's naive) fuse to exactly the
    vectors the pipeline fuses itself, with the chunk records kept; other chunks or other modes are refused."""
    spec = "fixed:size=32"
    every = embed(DOCS, minilm_encoder(), PipelineConfig((spec,), modes=("late", "naive", "fused"))).run(spec)
    late, naive = every.vectors["late"], every.vectors["naive"]
    f = fused_chunk_vectors(late, naive)
    assert f.mode == "fused" and f.normalized and f.doc_ids == late.doc_ids
    np.testing.assert_array_equal(f.chunk_index, late.chunk_index)
    np.testing.assert_array_equal(f.vectors, every.vectors["fused"].vectors)
    renamed = ChunkVectors(naive.vectors, ("other",) + naive.doc_ids[1:], naive.chunk_index, naive.cu_chunks, "naive")
    with pytest.raises(ValueError, match="different chunk records"):
        fused_chunk_vectors(late, renamed)
    with pytest.raises(ValueError, match="takes late and naive"):
        fused_chunk_vectors(naive, late)


def test_embed_mode_fused_writes_and_verifies(tmp_path):
    src = tmp_path / "docs"
    src.mkdir()
    for d in DOCS:
        (src / f"{d.doc_id}.txt").write_text(d.text, encoding="utf-8")
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["embed", str(src), "--out", str(out), "--mode", "fused", "--strategy",
                                 "fixed:size=32"])
    assert r.exit_code == 0, r.output
    run = json.loads((out / "run.json").read_text())
    assert run["settings"]["mode"] == "fused"
    counts = json.loads((out / "manifest.json").read_text())["counts"]
    # the late pass and the naive encodes both count: each sends every content token through the model
    assert counts["tokens_encoded"] >= 2 * counts["content_tokens"] > 0 and counts["forward_calls"] >= 2
    v = CliRunner().invoke(app, ["verify", str(out)])
    assert v.exit_code == 0, v.output
    import faiss

    index = faiss.read_index(str(out / "index.faiss"))
    stored = index.reconstruct_n(0, index.ntotal)
    want = embed(DOCS, minilm_encoder(), PipelineConfig(("fixed:size=32",), modes=("fused",))).run(
        "fixed:size=32").vectors["fused"].vectors
    assert stored.shape == want.shape
    # rows in the same order (documents sorted by path: a, b)
    np.testing.assert_allclose(stored, want, atol=1e-4)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return _write_dataset(tmp_path_factory.mktemp("fused") / "tiny_chroma")


def test_compare_scores_fused_beside_late_and_naive_over_the_same_chunks(tiny, tmp_path):
    cfg = _config(tiny, tmp_path, modes=("late", "naive", "fused"), windows=(64, 512))
    res = run_compare(cfg, encoder=minilm_encoder())
    for spec in cfg.specs():
        for w in (64, 512):
            f, late = res.system(spec, "fused", w), res.system(spec, "late", w)
            assert f.label == f"fused w={w}" and f.chunks_sha256 == late.chunks_sha256
        assert res.system(spec, "fused", 64).costs["tokens_encoded"] > res.system(spec, "late", 64).costs["tokens_encoded"]
    kinds = {c["kind"] for c in res.comparisons}
    assert {"late-naive", "fused-late", "fused-naive"} <= kinds
    # the fused system's scores come from its own ranking, not a copy of either part's
    fl = [c for c in res.comparisons if c["kind"] == "fused-late"]
    assert len(fl) >= len(cfg.specs()) * 2
    # plot.png's panel (b) draws the fused pairs beside late − naive (it drew late − naive only)
    from latechunk.eval.report import _pair_series, write_plot

    metric = f"AR@{res.main_k}"
    comps, series, _, _ = _pair_series(res, metric)
    assert [k for k, _, _ in series] == ["late-naive", "fused-late", "fused-naive"]
    assert {c["kind"] for c in comps} == {"late-naive", "fused-late", "fused-naive"}
    write_plot(res, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # fused alone: late and naive run inside, but only fused is scored and reported
    only = run_compare(_config(tiny, tmp_path, modes=("fused",), windows=(64,)), encoder=minilm_encoder())
    assert {s.mode for s in only.systems} == {"fused"}
    for spec in cfg.specs():
        assert only.system(spec, "fused", 64).per_query == res.system(spec, "fused", 64).per_query
    # the report says why late and naive were encoded though only fused was asked for
    from latechunk.eval.report import markdown_report

    text = markdown_report(only)
    assert _pair_series(only, f"AR@{only.main_k}")[1] == []  # no pair reported: the panel says so
    write_plot(only, tmp_path / "only.png")
    assert (tmp_path / "only.png").stat().st_size > 0
    assert "| window | overlap | modes encoded |" in text
    assert "Fused systems encode nothing of their own" in text
    assert "Fused systems encode nothing" not in markdown_report(
        run_compare(_config(tiny, tmp_path, modes=("late",), windows=(64,)), encoder=minilm_encoder()))


def test_compare_refuses_an_unknown_mode_naming_fused(tiny, tmp_path):
    with pytest.raises(ValueError, match="fused"):
        _config(tiny, tmp_path, modes=("late", "blend"))
