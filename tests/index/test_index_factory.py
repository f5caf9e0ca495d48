"""``--index`` as a faiss index_factory string (issue 13 part 3): an IVF index trained on a seeded sample and merged
on disk from per-shard parts (faiss contrib's ``merge_ondisk``), non-IVF factories in memory, ``verify`` of the
result, ``nprobe`` at search, the nlist fallback, and ``embed --resume`` after a kill during assembly.

The assembly tests use synthetic shards written by ``scripts/bench_ondisk_index.py`` (the shard format assembly
reads, through ``write_shard``); the 1M x 384 run of that script is the benchmark
(``results/ondisk_index.md``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import faiss
import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from latechunk.cli import app
from latechunk.config import IndexConfig
from latechunk.index import (
    DEFAULT_NPROBE,
    TRAIN_SEED,
    build_batched,
    check_ivf_rows,
    fit_nlist,
    ivf_of,
    search_index,
    train_sample_size,
)
from latechunk.output import read_output
from latechunk.verify import verify_output
from tests.scripts import load_script

REPO = Path(__file__).resolve().parents[2]
ROWS, DIM, SHARDS = 6000, 32, 5
#: 4-bit PQ codes (16 centroids per sub-quantizer): the same on-disk path, a 16x cheaper PQ training
PQ = "IVF64,PQ8x4"
runner = CliRunner()


def _bench():
    return load_script("bench_ondisk_index")


@pytest.fixture(scope="module")
def bench():
    return _bench()


@pytest.fixture(scope="module")
def shards(bench, tmp_path_factory):
    """A folder of 5 synthetic shards (6,000 x 32 unit vectors), not yet assembled; copied per test."""
    out = tmp_path_factory.mktemp("synthetic") / "out"
    bench.write_synthetic_folder(out, ROWS, DIM, SHARDS)
    return out


def _vectors(out: Path) -> np.ndarray:
    return np.concatenate([np.load(p) for p in sorted((out / "shards").glob("*.npy"))])


@pytest.fixture(scope="module")
def assembled(bench, shards, tmp_path_factory):
    """``{factory: (folder, merge_ondisk calls)}`` for IVF64,PQ8x4, IVF64,Flat and HNSW32."""
    from faiss.contrib import ondisk

    built = {}
    real = ondisk.merge_ondisk
    for factory in (PQ, "IVF64,Flat", "HNSW32"):
        out = tmp_path_factory.mktemp(factory.replace(",", "_")) / "out"
        shutil.copytree(shards, out)
        calls = []

        def spy(index, names, ivfdata, *a, _calls=calls, **kw):
            _calls.append((len(names), Path(ivfdata).name))
            return real(index, names, ivfdata, *a, **kw)

        ondisk.merge_ondisk = spy
        try:
            bench.assemble_folder(out, factory)
        finally:
            ondisk.merge_ondisk = real
        built[factory] = (out, calls)
    return built


@pytest.mark.parametrize("factory", [PQ, "IVF64,Flat"])
def test_an_ivf_index_is_merged_on_disk_from_per_shard_parts_and_verifies(assembled, factory):
    out, calls = assembled[factory]
    assert calls == [(SHARDS, "index.ivfdata.tmp")]  # the merge path: one part per shard, merged on disk
    assert not (out / "index.ivfparts.tmp").exists() and not list(out.glob("*.tmp"))
    m = json.loads((out / "manifest.json").read_text())
    rec = m["index"]
    assert rec["factory"] == factory and rec["ntotal"] == ROWS and rec["ondisk"] is True
    assert rec["nlist"] == 64 and rec["nprobe"] == DEFAULT_NPROBE
    assert rec["train"]["rows"] == train_sample_size(ROWS, 64) == ROWS and rec["train"]["seed"] == TRAIN_SEED
    assert rec["ivfdata"]["file"] == "index.ivfdata"
    assert rec["ivfdata"]["bytes"] == (out / "index.ivfdata").stat().st_size > 0
    index, table, _ = read_output(out)
    ivf = ivf_of(index)
    assert isinstance(faiss.downcast_InvertedLists(ivf.invlists), faiss.OnDiskInvertedLists)
    assert index.ntotal == table.num_rows == ROWS and ivf.nprobe == DEFAULT_NPROBE
    problems, summary = verify_output(out, check_sources=False)
    assert problems == [], problems
    assert "IVF self-recall@10" in summary
    assert ("not checked" in summary) == ("PQ" in factory)  # PQ codes are lossy: reported, not a check
    # search: row i is vector id i; IVF,Flat with every list probed is exact
    x = _vectors(out)
    q = x[::500]
    D, I = search_index(index, q, 5, nprobe=64)
    if factory == "IVF64,Flat":
        ref = np.argsort(-(q @ x.T), axis=1, kind="stable")[:, :5]
        np.testing.assert_array_equal(I[:, 0], np.arange(0, ROWS, 500))
        np.testing.assert_allclose(D, np.take_along_axis(q @ x.T, ref, axis=1), atol=1e-5)
    else:
        assert (I == np.arange(0, ROWS, 500)[:, None]).any(axis=1).mean() >= 0.9


def test_hnsw_is_built_in_memory_and_nprobe_is_refused_for_it(assembled):
    out, calls = assembled["HNSW32"]
    assert calls == [] and not (out / "index.ivfdata").exists()
    m = json.loads((out / "manifest.json").read_text())
    assert "ivfdata" not in m["index"] and "nlist" not in m["index"]
    assert verify_output(out, check_sources=False)[0] == []
    index, _, _ = read_output(out)
    x = _vectors(out)
    _, I = search_index(index, x[:50], 1)
    assert (I[:, 0] == np.arange(50)).mean() >= 0.95
    with pytest.raises(ValueError, match="--nprobe applies to IVF indexes.*HNSW"):
        search_index(index, x[:1], 1, nprobe=4)
    from latechunk.api import Index

    with pytest.raises(ValueError, match="--nprobe applies to IVF"):  # before any model is loaded
        Index.load(out).search("anything", nprobe=4)
    res = runner.invoke(app, ["search", str(out), "anything", "--nprobe", "4"])
    assert res.exit_code != 0 and "--nprobe applies to IVF" in res.output


def test_nprobe_changes_an_ivf_search_and_is_checked(assembled):
    out, _ = assembled["IVF64,Flat"]
    index, _, _ = read_output(out)
    q = _vectors(out)[:20] + 0.3  # off the stored vectors: fewer probed lists find fewer true neighbours
    exact = search_index(index, q, 10, nprobe=64)[1]
    one = search_index(index, q, 10, nprobe=1)[1]
    assert not np.array_equal(one, exact)
    np.testing.assert_array_equal(search_index(index, q, 10, nprobe=10_000)[1], exact)  # clipped to nlist
    with pytest.raises(ValueError, match="nprobe must be an integer >= 1"):
        search_index(index, q, 1, nprobe=0)


def test_verify_finds_a_damaged_or_missing_ivfdata_and_the_folder_can_move(assembled, tmp_path):
    out, _ = assembled["IVF64,Flat"]
    moved = tmp_path / "moved"
    shutil.copytree(out, moved)  # another folder: index.ivfdata is found beside index.faiss
    index, _, _ = read_output(moved)
    x = _vectors(moved)
    assert (search_index(index, x[:10], 1)[1][:, 0] == np.arange(10)).all()
    del index
    data = moved / "index.ivfdata"
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    data.write_bytes(bytes(raw))
    problems, _ = verify_output(moved, check_sources=False)
    assert any("index.ivfdata: sha256 differs" in p for p in problems), problems
    data.unlink()
    problems, _ = verify_output(moved, check_sources=False)
    assert any("index.ivfdata is missing" in p for p in problems), problems


def test_check_ivf_rows_finds_a_row_that_is_not_where_its_vector_goes():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3000, 16)).astype(np.float32)
    config = IndexConfig(factory="IVF8,PQ4x4")
    index, _ = build_batched(config, 16, lambda: iter([x]), [len(x)])
    assert check_ivf_rows(index, config, x, 0) is None
    swapped = x.copy()
    swapped[[0, 1, 2, 3]] = x[[100, 200, 300, 400]]  # other vectors claimed for rows 0..3
    msg = check_ivf_rows(index, config, swapped, 0, sample=3000)
    assert msg is not None and ("row 0" in msg or "row 1" in msg or "row 2" in msg or "row 3" in msg)


def test_nlist_falls_back_to_39_vectors_per_list():
    config, want, got = fit_nlist(IndexConfig(factory="IVF4096,Flat"), 32, 6000)
    assert (want, got, config.factory) == (4096, 153, "IVF153,Flat")
    config, want, got = fit_nlist(IndexConfig(factory="IVF64,PQ8", precision="float32"), 32, 8000)
    assert (want, got, config.factory) == (64, 64, "IVF64,PQ8")
    assert fit_nlist(IndexConfig(factory="HNSW32"), 32, 10)[1:] == (None, None)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((400, 8)).astype(np.float32)
    index, facts = build_batched(IndexConfig(factory="IVF64,Flat"), 8, lambda: iter([x]), [400])
    assert ivf_of(index).nlist == 10 and facts.to_dict()["built"] == "IVF10,Flat"
    assert facts.to_dict()["nlist_requested"] == 64
    assert train_sample_size(10**9, 65536) == 1 << 20 and train_sample_size(10**6, 1024) == 1 << 16


def test_a_factory_string_is_checked_before_anything_is_encoded(tmp_path):
    from tests.models import save_tiny_bert

    model = save_tiny_bert(tmp_path / "tiny")  # 32 dimensions
    src = tmp_path / "docs"
    src.mkdir()
    (src / "a.md").write_text("Rivers flow to the sea. " * 20, encoding="utf-8")
    out = tmp_path / "o"
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--model", str(model), "--device", "cpu",
                              "--quiet", "--index", "IVF64,PQ7"])  # 32 dimensions do not split into 7 sub-vectors
    assert res.exit_code != 0 and "'IVF64,PQ7'" in res.output and "index_factory" in res.output
    assert not (out / "shards").exists() or not any((out / "shards").iterdir())
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--model", str(model), "--device", "cpu",
                              "--quiet", "--index", "IVF64,PQ8", "--precision", "int8"])
    assert res.exit_code != 0 and "sets its own encoding" in res.output


@pytest.mark.usefixtures("one_thread")
def test_resume_after_a_kill_before_the_merge_gives_the_uninterrupted_output(tmp_path_factory):
    from tests.corpus import ARGS, make_corpus

    corpus_dir, model = make_corpus(tmp_path_factory, tag="_ivf")
    args = [str(corpus_dir), "--model", str(model), *ARGS, "--index", "IVF2,Flat"]
    ref = tmp_path_factory.mktemp("ivf_ref") / "out"
    res = runner.invoke(app, ["embed", *args, "--out", str(ref)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    out = tmp_path_factory.mktemp("ivf_kill") / "out"
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", LATECHUNK_FAULT_KILL_AT="assemble-ivf-merge")
    proc = subprocess.run([sys.executable, "-m", "latechunk", "embed", *args, "--out", str(out)], env=env, cwd=REPO,
                          capture_output=True, timeout=300, check=False)
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    assert (out / "index.ivfparts.tmp").is_dir() and not (out / "manifest.json").exists()  # killed mid-assembly
    res = runner.invoke(app, ["embed", *args, "--out", str(out), "--resume"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert not (out / "index.ivfparts.tmp").exists()
    m_ref, m_new = (json.loads((p / "manifest.json").read_text()) for p in (ref, out))
    assert m_new["index"] == m_ref["index"]  # same training sample, lists, and ivfdata bytes (sha256)
    assert pq.read_table(out / "chunks.parquet").equals(pq.read_table(ref / "chunks.parquet"))
    assert verify_output(out)[0] == []


@pytest.mark.parametrize(("factory", "reason"), [
    ("IVF0,Flat", "at least 1 inverted list"),
    ("IDMap,Flat", "ID map is not needed"),
    ("IVF4,Flat,RFlat", "refine wrappers"),
    ("LSH", "inner-product"),
    ("HNSW0", "at least 2 neighbours"),  # trial of issue 15: faiss accepted it, then aborted the process (SIGABRT)
    ("HNSW1,Flat", "at least 2 neighbours"),
    ("NSG32", "NSG graph cannot be added to"),  # faiss: a raw RuntimeError under 100 vectors or at a second add
    ("PCA32,NSG32,Flat", "NSG graph cannot be added to"),
])
def test_factory_strings_latechunk_cannot_build_are_refused_before_encoding(tmp_path, factory, reason):
    """Trial of issue 13: these encoded everything, then failed at assembly with a faiss traceback."""
    from tests.models import save_tiny_bert

    model = save_tiny_bert(tmp_path / "tiny")
    src = tmp_path / "docs"
    src.mkdir()
    (src / "a.md").write_text("Rivers flow to the sea. " * 20, encoding="utf-8")
    out = tmp_path / "o"
    res = runner.invoke(app, ["embed", str(src), "--out", str(out), "--model", str(model), "--device", "cpu",
                              "--quiet", "--index", factory])
    assert res.exit_code == 2 and repr(factory) in res.output and reason in res.output, res.output
    assert not (out / "shards").exists() or not any((out / "shards").iterdir())


def test_a_failed_index_training_names_what_needs_more_vectors():
    """Trial of issue 15: PQ's 256 centroids were blamed on the lists ("use fewer lists, e.g. IVF64")."""
    import numpy as np

    from latechunk.config import IndexConfig
    from latechunk.index import build_index

    x = np.random.default_rng(0).standard_normal((40, 16)).astype(np.float32)
    with pytest.raises(ValueError, match=r"PQ<m>x<b> 2\*\*b") as err:
        build_index(x, IndexConfig.from_option("IVF2,PQ4"))
    assert "IVF64" not in str(err.value)


def test_a_pq_index_trained_on_too_few_vectors_warns_in_latechunk_words_once():
    """faiss only prints one raw "WARNING clustering" line per codebook when a PQ index gets fewer than 39 * 2**nbits
    training vectors (recall then drops); latechunk warns once, naming the index and what to use instead."""
    import warnings

    from latechunk.index import build_index, pq_training_warning, product_quantizer_of

    rng = np.random.default_rng(0)
    x = rng.standard_normal((600, 32)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build_index(x, IndexConfig(factory="IVF2,PQ8"))
    messages = [str(w.message) for w in caught if "product quantizer" in str(w.message)]
    assert len(messages) == 1 and "600 vectors" in messages[0] and "9,984" in messages[0] and "Flat" in messages[0]
    for factory, expect in [("PQ8", 9984), ("OPQ8,IVF2,PQ8", 9984), ("HNSW32,PQ8", 9984), ("PQ8x4", 624),
                            ("PQ8x4fs", 624), ("Flat", None), ("IVF2,SQ8", None), ("HNSW32", None)]:
        index = faiss.index_factory(32, factory, faiss.METRIC_INNER_PRODUCT)
        assert (product_quantizer_of(index) is None) == (expect is None), factory
        if expect is not None:
            assert pq_training_warning(index, expect - 1, factory) is not None, factory
            assert pq_training_warning(index, expect, factory) is None, factory
        else:
            assert pq_training_warning(index, 10, factory) is None, factory
    with warnings.catch_warnings(record=True) as caught:  # enough vectors for 4-bit codebooks: no warning
        warnings.simplefilter("always")
        build_index(np.concatenate([x, x[:100]]), IndexConfig(factory="PQ8x4"))  # 700 >= 39 * 16
    assert not [w for w in caught if "product quantizer" in str(w.message)]


def test_the_console_script_prints_latechunk_warnings_without_a_source_path():
    import warnings as _warnings
    from pathlib import Path as _Path

    import latechunk.index as index_module
    from latechunk.cli import format_warning

    ours = format_warning("index 'PQ8': too few", UserWarning, index_module.__file__, 10, None)
    assert ours == "warning: index 'PQ8': too few\n"
    theirs = format_warning("deprecated", DeprecationWarning, str(_Path(_warnings.__file__)), 10, None)
    assert "DeprecationWarning" in theirs and "deprecated" in theirs and not theirs.startswith("warning: ")


def test_what_faiss_refuses_at_add_time_is_a_value_error_naming_the_index():
    import numpy as np

    from latechunk.config import IndexConfig
    from latechunk.index import add_vectors, build_index

    x = np.random.default_rng(0).standard_normal((150, 16)).astype(np.float32)
    config = IndexConfig(factory="NSG8")
    index = build_index(x, config)  # one add of >= 100 vectors: what faiss's NSG allows (the Python API's path)
    assert index.ntotal == 150
    with pytest.raises(ValueError, match=r"cannot add 10 vectors to the 'NSG8' index: .*incremental"):
        add_vectors(index, x[:10], config)


def test_embed_says_when_an_ivf_index_is_built_with_fewer_lists(tmp_path):
    """Trial finding: `embed --index IVF16,Flat` on a few vectors built IVF1,Flat and said so only in the manifest
    (reindex says it); embed now prints the index it built."""
    from tests.models import save_tiny_bert

    model = save_tiny_bert(tmp_path / "tiny")
    src = tmp_path / "docs"
    src.mkdir()
    (src / "a.md").write_text("Rivers flow to the sea. " * 20, encoding="utf-8")
    res = runner.invoke(app, ["embed", str(src), "--out", str(tmp_path / "o"), "--model", str(model), "--device",
                              "cpu", "--quiet", "--index", "IVF16,Flat"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "index: IVF16,Flat built as IVF1,Flat" in text and "so nlist is 1" in text, text


def test_a_training_error_names_the_factory_typed_and_the_one_built():
    """Fifth trial: `--index IVF16,PQ16` on a few vectors failed naming 'IVF1,PQ16' (nlist fitted to the vectors),
    a string the user never typed; the error names both."""
    from latechunk.config import IndexConfig
    from latechunk.index import IndexTrainingError, build_batched

    x = np.random.default_rng(0).standard_normal((40, 16)).astype(np.float32)
    with pytest.raises(IndexTrainingError, match=r"cannot train index 'IVF16,PQ4 \(built as IVF1,PQ4\)' on 40"):
        build_batched(IndexConfig(factory="IVF16,PQ4"), 16, lambda: [x], [40])
